"""Why an app waits, and where its start-up time went: the ``waiting`` and ``timeline`` of
an app's status (``torchx status``, ``--json``).

A scheduler knows both and rarely says them: Slurm's pending reason and its Submit,
Eligible and Start times, Kueue's admission, a pod's waiting reason, Batch's
``statusReason``. It reports them as :class:`Waiting` (while the app waits) and a list of
:class:`Phase` (always), built here from the moments it knows (:func:`timeline`).
"""

from __future__ import annotations

from torchx.specs.vocabulary import PhaseName
from torchx.util.startup.lazy_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "PHASES",
    "Phase",
    "Waiting",
    "duration",
    "startup_line",
    "timeline",
    "waiting_line",
]

PHASES = tuple(phase.value for phase in PhaseName)
"""The phases an app goes through, in the order they can come: the values of
:class:`torchx.specs.vocabulary.PhaseName`."""


def _check_phase(phase: str, what: str) -> None:
    """A phase outside the vocabulary is a backend's bug: refused where it is made."""
    if phase not in PHASES:
        raise ValueError(f"{what} phase {phase!r} is not one of {', '.join(PHASES)}")


_WORDS = {"pulling_image": "pulling image"}


@dataclass
class Waiting:
    """Why an app that has not started yet waits (``--json``'s ``"waiting"``).

    ``phase`` is ``queued`` (the scheduler has not given it resources) or ``starting``
    (it has: images, containers, processes are being made); ``since`` when that began
    (unix seconds); ``reason`` the scheduler's word and what it means; ``position`` its
    place in the queue where the scheduler tells it.
    """

    phase: str
    reason: str
    since: float | None = None
    position: int | None = None

    def __post_init__(self) -> None:
        _check_phase(self.phase, "a Waiting's")

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "since": self.since,
            "reason": self.reason,
            "position": self.position,
        }


@dataclass
class Phase:
    """One phase of an app's life: from ``start`` to ``end`` (``None`` while it lasts);
    ``detail`` says more (the pending reason, the image pulled)."""

    phase: str
    start: float | None
    end: float | None = None
    detail: str | None = None

    def __post_init__(self) -> None:
        _check_phase(self.phase, "a Phase's")

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "start": self.start, "end": self.end, "detail": self.detail}


def timeline(
    marks: Iterable[tuple[str, float | None, str | None]], ended: float | None = None
) -> list[Phase]:
    """Phases from the moments a scheduler knows, in order: each ``(phase, start, detail)``
    lasts until the next one starts; ``submitted`` and ``finished`` are moments (their
    end is their start). The last phase ends at ``ended`` (``None``: it lasts). A mark
    without a start is left out."""
    known = [(phase, start, detail) for phase, start, detail in marks if start is not None]
    phases = []
    for i, (phase, start, detail) in enumerate(known):
        if phase in ("submitted", "finished"):
            end: float | None = start
        elif i + 1 < len(known):
            end = known[i + 1][1]
        else:
            end = ended
        phases.append(Phase(phase=phase, start=start, end=end, detail=detail))
    return phases


def duration(seconds: float) -> str:
    """``41s``, ``2m13s``, ``3h05m``: how long, as people read it."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def waiting_line(waiting: Waiting, now: float) -> str:
    """``Waiting 2m13s: queued (Resources: the requested nodes are busy)``."""
    took = f" {duration(now - waiting.since)}" if waiting.since is not None else ""
    where = f", position {waiting.position}" if waiting.position is not None else ""
    reason = f" ({waiting.reason})" if waiting.reason else ""
    return f"Waiting{took}: {_WORDS.get(waiting.phase, waiting.phase)}{where}{reason}"


def startup_line(phases: list[Phase]) -> str | None:
    """``Started after 41s: queued 38s, pulling image 2s, starting 1s``, once the app has
    run; ``None`` before (or when the scheduler reported no start)."""
    running = next((p for p in phases if p.phase == "running"), None)
    submitted = next((p for p in phases if p.phase == "submitted"), None)
    if running is None or running.start is None or submitted is None or submitted.start is None:
        return None
    parts = []
    for phase in phases:
        if phase.phase in ("submitted", "running") or phase.start is None:
            continue
        if phase.start >= running.start:
            break
        end = phase.end if phase.end is not None else running.start
        parts.append(f"{_WORDS.get(phase.phase, phase.phase)} {duration(end - phase.start)}")
    total = duration(running.start - submitted.start)
    return f"Started after {total}" + (f": {', '.join(parts)}" if parts else "")
