"""Where a local_docker app's start-up time went, from what the daemon already lists of
its containers (no extra call): the labels ``schedule`` wrote (when it was submitted, when
it finished pulling images), when each container was created, and how long ago it exited
(the daemon's own ``Exited (0) 5 seconds ago``)."""

from __future__ import annotations

import re
import time

from torchx.schedulers._docker.request import LABEL_PULLED, LABEL_SUBMITTED
from torchx.specs.api import AppState, is_terminal
from torchx.specs.timeline import Phase, Waiting, timeline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["timeline_of", "waiting_of"]

_AGO = re.compile(r"^Exited \(-?\d+\) (.+) ago$")
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}


def _seconds_ago(status: str) -> float | None:
    """How long ago a container exited, from the daemon's words (coarse past a minute)."""
    found = _AGO.match(status.strip())
    if found is None:
        return None
    words = found.group(1).lower().replace("about ", "").replace("less than ", "").split()
    if len(words) != 2:
        return None
    count, unit = words
    number = 1 if count in ("a", "an") else int(count) if count.isdigit() else None
    scale = _UNITS.get(unit.rstrip("s"))
    return None if number is None or scale is None else float(number * scale)


def _float(value: object) -> float | None:
    try:
        return float(str(value))
    except ValueError:
        return None


def timeline_of(summaries: list[dict[str, Any]], state: AppState) -> list[Phase]:
    """``submitted``, ``pulling_image`` (when ``schedule`` pulled), ``starting`` (the
    containers being made), ``running`` and ``finished``."""
    labels = [s.get("Labels") or {} for s in summaries]
    submitted = min((t for lb in labels if (t := _float(lb.get(LABEL_SUBMITTED)))), default=None)
    pulled_text = next((str(lb[LABEL_PULLED]) for lb in labels if lb.get(LABEL_PULLED)), "")
    pulled_at, _, images = pulled_text.partition(" ")
    created = min((float(s["Created"]) for s in summaries if s.get("Created")), default=None)
    ended = None
    if is_terminal(state):
        now = time.time()
        agos = [a for s in summaries if (a := _seconds_ago(str(s.get("Status") or ""))) is not None]
        # none yet: the daemon lists a container as exited a moment after its exit event
        ended = now - min(agos) if agos else now
    begun = _float(pulled_at) if pulled_at else submitted
    started = created if state != AppState.PENDING else None
    if started is not None and begun is not None:
        started = max(started, begun)  # Created is whole seconds
    marks: list[tuple[str, float | None, str | None]] = [("submitted", submitted, None)]
    if pulled_at:
        marks.append(("pulling_image", submitted, images or None))
    marks += [
        ("starting", begun, None),
        ("running", started, None),
        ("finished", ended, None),
    ]
    return timeline(marks, ended=ended)


def waiting_of(summaries: list[dict[str, Any]]) -> Waiting | None:
    """Why the app has not started, while it has not: some of its containers are created
    but not started yet (``schedule`` pulls images before it creates any, so a pull is
    never seen here). ``list`` and ``describe`` say it from the same container list."""
    created = [s for s in summaries if s.get("State") == "created"]
    if not created:
        return None
    since = min((float(s["Created"]) for s in created if s.get("Created")), default=None)
    reason = f"{len(created)} of {len(summaries)} containers created, not started yet"
    return Waiting(phase="starting", reason=reason, since=since)
