"""Which apps ``torchx list`` (and ``Runner.list``) shows: by state, start time, name and
count. A scheduler applies what its backend can (``Scheduler.list_filtered``; Slurm asks
its accounting for the time window); the rest is applied to the listed rows here."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import datetime
from fnmatch import fnmatchcase
from typing import TypeVar

from torchx.specs.api import AppState
from torchx.util.startup.lazy_dataclass import dataclass

__all__ = ["ListFilter", "parse_since", "parse_states"]

T = TypeVar("T")

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass
class ListFilter:
    """``states``: keep apps in these states; ``since``: started after this time (epoch
    seconds); ``name``: app names matching this glob; ``limit``: the newest N."""

    states: frozenset[AppState] | None = None
    since: float | None = None
    name: str | None = None
    limit: int | None = None

    def apply(self, rows: Iterable[T]) -> list[T]:
        """State, name and limit applied to ``ListAppResponse`` rows (in the scheduler's
        order, oldest first: the limit keeps the last ones)."""
        kept = [
            row
            for row in rows
            if (self.states is None or getattr(row, "state", None) in self.states)
            and (self.name is None or fnmatchcase(str(getattr(row, "name", "")), self.name))
        ]
        if self.limit is not None:
            kept = kept[-self.limit :] if self.limit else []
        return kept


def parse_since(text: str, now: float | None = None) -> float:
    """Epoch seconds of ``30m``, ``12h``, ``2d``, ``1w`` ago, or of an ISO date/time."""
    value = text.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smhdw])", value)
    if match:
        return (now if now is not None else time.time()) - float(match.group(1)) * _UNITS[
            match.group(2)
        ]

    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        raise ValueError(
            f"--since {text!r} is neither a duration (30m, 12h, 2d, 1w) nor a date"
            " (2026-11-24 or 2026-11-24T08:00)"
        ) from None


def parse_states(text: str) -> frozenset[AppState]:
    """``running,pending`` (any case) as app states; an unknown one is a one-line error."""
    states = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            states.add(AppState[part.upper()])
        except KeyError:
            known = ", ".join(s.name.lower() for s in AppState)
            raise ValueError(
                f"unknown app state {part!r} in --state; use some of: {known}"
            ) from None
    if not states:
        raise ValueError("--state needs at least one state, e.g. --state running,pending")
    return frozenset(states)
