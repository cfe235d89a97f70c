"""How far a running app is, read from what it reported (``torchx.progress``'s lines at
the end of its log): ``status --json``'s ``"progress"`` and the text ``Progress:`` line."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchx.progress import MARK
from torchx.specs._timeline import duration

__all__ = ["Progress", "from_log_tail", "progress_cell", "progress_line"]


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


def _reports(tail: str) -> list[dict[str, object]]:
    """Every well-formed report in ``tail``, oldest first (a malformed one is skipped)."""
    import json

    found = []
    for line in tail.splitlines():
        at = line.find(MARK + " ")
        if at < 0:
            continue
        try:
            report = json.loads(line[at + len(MARK) + 1 :])
        except ValueError:
            continue
        if isinstance(report, dict) and isinstance(report.get("step"), int):
            found.append(report)
    return found


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def from_log_tail(
    tail: str, role: str, replica_id: int, *, running: bool, now: float
) -> Progress | None:
    """The progress the last report in ``tail`` says, or None when there is none. The
    rate is the reporter's own (``rate``), else measured between the first and the last
    timed report in the tail; the ETA counts down from the report while the app runs."""
    reports = _reports(tail)
    if not reports:
        return None
    last = reports[-1]
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
    timed = [(t, int(str(r["step"]))) for r in reports if (t := _number(r.get("time")))]
    if rate is None and len(timed) > 1 and timed[-1][0] > timed[0][0]:
        rate = (timed[-1][1] - timed[0][1]) / (timed[-1][0] - timed[0][0])
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


def progress_line(progress: Progress, now: float) -> str:
    """``Progress: 75% (3/4), ETA 12m, loss=0.33, updated 4s ago``."""
    parts = [progress_cell(progress)]
    parts += [f"{name}={value:.4g}" for name, value in progress.metrics.items()]
    if progress.updated is not None:
        parts.append(f"updated {duration(now - progress.updated)} ago")
    return "Progress: " + ", ".join(parts)
