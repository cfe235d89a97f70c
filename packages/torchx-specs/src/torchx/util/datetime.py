"""Times as the schedulers' list filters take them (upstream's ``torchx.util.datetime``)."""

from __future__ import annotations

from datetime import datetime, timedelta

__all__ = ["get_past_epoch_time"]


def get_past_epoch_time(days_past: int) -> int:
    """The Unix time (whole seconds) of this moment ``days_past`` days ago."""
    return int((datetime.now() - timedelta(days=days_past)).timestamp())
