"""How far a running app is, read from what it reported (``torchx.progress``'s lines at
the end of its log): ``status --json``'s ``"progress"`` and the text ``Progress:`` line."""

from __future__ import annotations

from torchx.progress import MARK
from torchx.specs._timeline import duration
from torchx.util._startup.lazy_dataclass import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "Progress",
    "from_log_tail",
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
        return {
            "step": self.step,
            "total": self.total,
            "fraction": self.fraction,
            "eta_s": self.eta_s,
            "metrics": dict(self.metrics),
            "updated": self.updated,
            "role": self.role,
            "replica_id": self.replica_id,
        }


_LEAD = MARK + " "


def _report_at(tail: str, at: int) -> dict[str, object] | None:
    """The report on the line whose mark is at ``at``, or None if it is malformed."""
    import json

    end = tail.find("\n", at)
    try:
        report = json.loads(tail[at + len(_LEAD) : end if end >= 0 else len(tail)])
    except ValueError:
        return None
    return report if isinstance(report, dict) and isinstance(report.get("step"), int) else None


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


def reports_in(lines: Iterable[str]) -> list[dict[str, object]]:
    """Every well-formed report in ``lines`` (a replica's log), oldest first: the app's
    progress over time (``torchx ui`` charts its metrics)."""
    reports = []
    for line in lines:
        at = line.find(_LEAD)
        if at >= 0 and (report := _report_at(line, at)) is not None:
            reports.append(report)
    return reports


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


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
    step = int(str(last["step"]))
    total_value = last.get("total")
    total = total_value if isinstance(total_value, int) and total_value > 0 else None
    metrics_value = last.get("metrics")
    metrics = {
        str(k): float(v)
        for k, v in (metrics_value.items() if isinstance(metrics_value, dict) else ())
        if _number(v) is not None
    }
    updated = _number(last.get("time"))
    rate = _number(last.get("rate"))
    if rate is None and updated is not None and (first := _first_report(tail, at)) is not None:
        since = _number(first.get("time"))
        if since is not None and updated > since:
            rate = (step - int(str(first["step"]))) / (updated - since)
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
    return ", ".join(f"{name}={value:.4g}" for name, value in progress.metrics.items())


def progress_line(progress: Progress, now: float) -> str:
    """``Progress: 75% (3/4), ETA 12m, loss=0.33, updated 4s ago``."""
    parts = [progress_cell(progress)]
    if progress.metrics:
        parts.append(metrics_text(progress))
    if progress.updated is not None:
        parts.append(f"updated {duration(now - progress.updated)} ago")
    return "Progress: " + ", ".join(parts)
