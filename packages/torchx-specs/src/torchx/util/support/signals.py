"""Names of signals for messages, where a number alone would leave the reader to look it up."""

from __future__ import annotations

import signal

__all__ = ["signal_name"]


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; ``signal N`` for a number this platform has no name for."""

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
