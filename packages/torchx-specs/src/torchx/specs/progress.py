"""How far a running app is, read from what it reported (``torchx.progress``'s lines at
the end of its log): ``status --json``'s ``"progress"`` and the text ``Progress:`` line."""

from __future__ import annotations

import json
import math
from collections import deque

from torchx.progress import MARK
from torchx.specs.timeline import duration
from torchx.util.log import get_logger
from torchx.util.startup.lazy_dataclass import dataclass, field
from torchx.util.strings import escape_unprintable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = [
    "Progress",
    "from_log_tail",
    "json_number",
    "metrics_text",
    "progress_cell",
    "progress_line",
    "reports_in",
]


@dataclass
class Progress:
    """The app's last report: ``step`` of ``total`` (None: unknown), ``fraction`` done,
    ``eta_s`` the seconds left at the rate of recent steps (None: unknown), the last
    ``metrics``, when it was ``updated`` (unix seconds), and which replica reported."""

    step: int
    total: int | None = None
    fraction: float | None = None
    eta_s: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    updated: float | None = None
    role: str = ""
    replica_id: int = 0

    def to_json(self) -> dict[str, object]:
        """Plain data, valid JSON: a metric that is NaN or infinite is the string
        ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (JavaScript's ``Number()`` reads them
        back), since JSON has no such numbers."""
        return {
            "step": self.step,
            "total": self.total,
            "fraction": self.fraction,
            "eta_s": self.eta_s,
            "metrics": {name: json_number(value) for name, value in self.metrics.items()},
            "updated": self.updated,
            "role": self.role,
            "replica_id": self.replica_id,
        }


_LEAD = MARK + " "

MAX_REPORT_CHARS = 1 << 16
"""A longer line holds no report ``torchx.progress`` writes: it is not parsed."""

MAX_STEP = 2**63 - 1
"""The largest ``step`` or ``total`` taken (a 64-bit counter): a larger one is dropped."""

_log = get_logger("torchx.progress")
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """One warning per kind of bad value in a process (a status read every few seconds
    by ``torchx ui`` must not repeat it)."""
    kind = message.split(":", 1)[0]
    if kind not in _warned:
        _warned.add(kind)
        _log.warning(message)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def json_number(value: float) -> float | str:
    """``value`` as JSON can hold it: NaN and the infinities as strings."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _count(value: object) -> int | None:
    """An integer step or total in ``0..MAX_STEP``; None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_STEP:
        return value
    return None


def _number(value: object) -> float | None:
    """A metric's value as a float (NaN and the infinities kept); None for what is not a
    number or has no float (an integer of 400 digits)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def _finite(value: object) -> float | None:
    number = _number(value)
    return number if number is not None and math.isfinite(number) else None


def _report_at(tail: str, at: int) -> dict[str, object] | None:
    """The report on the line whose mark is at ``at``, or None if it is malformed or its
    ``step`` is not a count (dropped with a warning)."""

    end = tail.find("\n", at)
    line = tail[at + len(_LEAD) : end if end >= 0 else len(tail)]
    try:
        report = json.loads(line)
    except (ValueError, RecursionError):
        _warn_once(
            f"progress line: a {MARK} line of the log is not JSON ({_shown(line.strip())});"
            " it is ignored (docs/progress.md has the format)"
        )
        return None
    if not isinstance(report, dict) or "step" not in report:
        return None
    if _count(report["step"]) is None:
        _warn_once(
            f"progress step: a report's step {_shown(report['step'])} is not an integer in"
            f" 0..{MAX_STEP}; the report is ignored"
        )
        return None
    return report


def _last_report(tail: str) -> tuple[int, dict[str, object]] | None:
    """(where, what) of the last well-formed report in ``tail``, searched from its end."""
    end = len(tail)
    while (at := tail.rfind(_LEAD, 0, end)) >= 0:
        if (report := _report_at(tail, at)) is not None:
            return at, report
        end = at
    return None


def _first_report(tail: str, before: int) -> dict[str, object] | None:
    """The first well-formed report in ``tail`` before position ``before``."""
    start = 0
    while (at := tail.find(_LEAD, start, before)) >= 0:
        if (report := _report_at(tail, at)) is not None:
            return report
        start = at + 1
    return None


def reports_in(lines: Iterable[str], last: int | None = None) -> list[dict[str, object]]:
    """Every well-formed report in ``lines`` (a replica's log), oldest first, or the
    ``last`` ones only (never more held: a log of a million reports): the app's progress
    over time (``torchx ui`` charts its metrics). Each is plain JSON data: a metric that
    is not a number is dropped, NaN and infinities are strings (:func:`json_number`)."""

    marked: Iterator[str] = (
        line for line in lines if len(line) <= MAX_REPORT_CHARS and _LEAD in line
    )
    if last is not None:  # only the last ones are parsed, and only they are held
        marked = iter(deque(marked, maxlen=last))
    reports: deque[dict[str, object]] = deque(maxlen=last)
    for line in marked:
        at = line.find(_LEAD)
        if at >= 0 and (report := _report_at(line, at)) is not None:
            report["metrics"] = {
                name: json_number(value) for name, value in _metrics_of(report).items()
            }
            for key in ("total", "time", "rate"):
                if key in report and _finite(report[key]) is None:
                    del report[key]
            reports.append(report)
    return list(reports)


def _metrics_of(report: dict[str, object]) -> dict[str, float]:
    """The report's metrics that are numbers; another value is dropped with a warning."""
    found = report.get("metrics")
    if not isinstance(found, dict):
        return {}
    metrics = {}
    for name, value in found.items():
        number = _number(value)
        if number is None:
            _warn_once(
                f"progress metric: metric {_shown(name)}'s value {_shown(value)} is not a"
                " number a float can hold; it is left out"
            )
        else:
            metrics[str(name)] = number
    return metrics


def from_log_tail(
    tail: str, role: str, replica_id: int, *, running: bool, now: float
) -> Progress | None:
    """The progress the last report in ``tail`` says, or None when there is none. The
    rate is the reporter's own (``rate``), else measured between the first and the last
    timed report in the tail; the ETA counts down from the report while the app runs."""
    found = _last_report(tail)
    if found is None:
        return None
    at, last = found
    step = _count(last["step"]) or 0
    total = _count(last.get("total")) or None
    if "total" in last and last["total"] is not None and total is None:
        _warn_once(
            f"progress total: a report's total {_shown(last['total'])} is not an integer in"
            f" 1..{MAX_STEP}; it is left out"
        )
    metrics = _metrics_of(last)
    updated = _finite(last.get("time"))
    rate = _finite(last.get("rate"))
    if rate is None and updated is not None and (first := _first_report(tail, at)) is not None:
        since = _finite(first.get("time"))
        if since is not None and updated > since:
            rate = (step - (_count(first["step"]) or 0)) / (updated - since)
    fraction = min(1.0, max(0.0, step / total)) if total else None
    eta = None
    if running and total is not None and rate is not None and rate > 0:
        eta = max(0.0, (total - step) / rate - (now - updated if updated else 0.0))
        eta = round(eta, 1)
    return Progress(
        step=step,
        total=total,
        fraction=fraction,
        eta_s=eta,
        metrics=metrics,
        updated=updated,
        role=role,
        replica_id=replica_id,
    )


def _eta(seconds: float) -> str:
    """``45s``, ``12m``, ``3h05m``: an ETA is an estimate, minutes are enough past one."""
    if seconds < 60:
        return duration(seconds)
    if seconds < 3600:
        return f"{round(seconds / 60)}m"
    return duration(seconds)


def progress_cell(progress: Progress) -> str:
    """``75% (3/4), ETA 12m``: how far and how long, as ``torchx list --progress`` shows it."""
    if progress.total is not None and progress.fraction is not None:
        parts = [f"{progress.fraction:.0%} ({progress.step}/{progress.total})"]
    else:
        parts = [f"step {progress.step}"]
    if progress.eta_s is not None:
        parts.append(f"ETA {_eta(progress.eta_s)}")
    return ", ".join(parts)


def metrics_text(progress: Progress) -> str:
    """``loss=0.33, lr=0.1``: the last metrics reported."""

    return ", ".join(
        f"{escape_unprintable(name)}={value:.4g}" for name, value in progress.metrics.items()
    )


def progress_line(progress: Progress, now: float) -> str:
    """``Progress: 75% (3/4), ETA 12m, loss=0.33, updated 4s ago``."""
    parts = [progress_cell(progress)]
    if progress.metrics:
        parts.append(metrics_text(progress))
    if progress.updated is not None:
        parts.append(f"updated {duration(now - progress.updated)} ago")
    return "Progress: " + ", ".join(parts)
