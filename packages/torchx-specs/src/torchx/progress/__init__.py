"""Report how far a job is, from inside it: ``torchx status`` shows it on every scheduler.

::

    import torchx.progress

    for step in range(1, steps + 1):
        loss = train_step()
        torchx.progress.report(step, total=steps, loss=loss)

Each report is one line on the process's stderr, which every scheduler keeps in the
replica's log (the protocol, for a job without torchx: docs/progress.md)::

    TORCHX_PROGRESS {"step": 3, "total": 4, "time": 1795910414.5, "metrics": {"loss": 0.33}}

``torchx status`` reads the end of the log of the first role's replica 0 (at most 64 KiB,
one read) and shows the last such line. Writes are throttled to one per
``TORCHX_PROGRESS_INTERVAL`` seconds (default 5; ``0``: every call); the last report is
written when the process exits. Only rank 0 writes (``RANK``, else ``TORCHX_REPLICA_ID``,
else ``0``) unless ``TORCHX_PROGRESS_ALL_RANKS=1``. ``report`` never raises into the
training loop: a failed write is one warning, then silence.

When Kubeflow Trainer's status endpoint is named (``KUBEFLOW_TRAINER_STATUS_URL``, or
``KUBEFLOW_TRAINER_SERVER_URL``), each written report is also sent there in its format
(KEP-2779), from a background thread.

Importing this module imports nothing beyond the interpreter's start-up modules.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MARK", "report"]

MARK = "TORCHX_PROGRESS"
"""What starts a report in a log line (anything before it on the line is ignored)."""

_POST_TIMEOUT_S = 10.0
"""The most a send to Kubeflow Trainer may take (and hold the exit, for the last one)."""

_RATE_WINDOW = 12
"""Written reports the rate (and so the ETA) is measured over."""


class _Reporter:
    """The state of this process's reports: the throttle, the last unwritten report, and
    the recent written ones the rate comes from."""

    def __init__(self) -> None:
        self.interval = _interval()
        self.enabled = _is_reporting_rank()
        self.broken = False
        self.next_write = 0.0  # monotonic time before which a report is only kept
        self.pending: tuple[int, int | None, dict[str, float]] | None = None
        self.recent: list[tuple[float, int]] = []  # (unix time, step) of written reports
        self.exit_hook = False
        self.posting: Any = None  # the thread sending the last report to Kubeflow Trainer

    def report(self, step: int, total: int | None, metrics: dict[str, float]) -> None:
        now = time.monotonic()
        if now < self.next_write:
            self.pending = (step, total, metrics)
            return
        self.next_write = now + self.interval
        self.pending = None
        self.write(step, total, metrics)

    def write(
        self, step: int, total: int | None, metrics: dict[str, float], at_exit: bool = False
    ) -> None:
        if self.broken:
            return
        if not self.exit_hook:
            import atexit

            atexit.register(self.flush)
            self.exit_hook = True
        try:
            line, payload = self.line(step, total, metrics)
            sys.stderr.write(line)
            sys.stderr.flush()
            if payload is not None and at_exit:  # in this thread: a daemon one would die
                _post(payload)
            elif payload is not None:
                self.posting = _kubeflow_post(payload)
        except Exception as e:  # never into the training loop: one warning, then silence
            self.broken = True
            import contextlib
            import warnings

            with contextlib.suppress(Exception):  # stderr itself may be what failed
                warnings.warn(
                    f"torchx.progress: cannot write a report ({e}); stopped", stacklevel=3
                )

    def line(
        self, step: int, total: int | None, metrics: dict[str, float]
    ) -> tuple[str, dict[str, object] | None]:
        import json

        now = time.time()
        self.recent = [*self.recent[-(_RATE_WINDOW - 1) :], (now, int(step))]
        report: dict[str, object] = {"step": int(step), "total": total, "time": round(now, 3)}
        (t0, s0), (t1, s1) = self.recent[0], self.recent[-1]
        rate = (s1 - s0) / (t1 - t0) if t1 > t0 and s1 > s0 else None
        if rate is not None:
            report["rate"] = round(rate, 6)
        report["metrics"] = _numbers(metrics)
        text = f"{MARK} {json.dumps(report, allow_nan=False)}\n"
        payload = _kubeflow_payload(report) if _kubeflow_url() else None
        return text, payload

    def flush(self) -> None:
        """Writes the last report if the throttle held it back, and lets the last send to
        Kubeflow Trainer finish (at exit; at most its timeout)."""
        if self.pending is not None:
            pending, self.pending = self.pending, None
            self.write(*pending, at_exit=True)
        elif self.posting is not None:
            self.posting.join(_POST_TIMEOUT_S)


def report(step: int, total: int | None = None, **metrics: float) -> None:
    """Reports that the job is at ``step`` of ``total`` (None: unknown), with the last
    values of ``metrics`` (e.g. ``loss=0.33``). Cheap enough for every step of a loop."""
    if _REPORTER.enabled:
        _REPORTER.report(step, total, metrics)


def _numbers(metrics: dict[str, float]) -> dict[str, float]:
    """The metrics that are finite numbers (a NaN loss, or a value that is not a number,
    is left out of this report, not the end of every report after it)."""
    import math

    found = {}
    for name, value in metrics.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            found[str(name)] = number
    return found


def _interval() -> float:
    try:
        return max(0.0, float(os.environ.get("TORCHX_PROGRESS_INTERVAL", "5")))
    except ValueError:
        return 5.0


def _is_reporting_rank() -> bool:
    if os.environ.get("TORCHX_PROGRESS_ALL_RANKS", "") not in ("", "0"):
        return True
    rank = os.environ.get("RANK") or os.environ.get("TORCHX_REPLICA_ID") or "0"
    return rank.strip() == "0"


# -- Kubeflow Trainer (KEP-2779) ----------------------------------------------------------


def _kubeflow_url() -> str:
    return os.environ.get("KUBEFLOW_TRAINER_STATUS_URL") or os.environ.get(
        "KUBEFLOW_TRAINER_SERVER_URL", ""
    )


def _kubeflow_payload(report: dict[str, object]) -> dict[str, object]:
    """The report as Kubeflow Trainer's ``trainerStatus`` (its metric values are text)."""
    import datetime as dt

    step, total = report["step"], report.get("total")
    status: dict[str, object] = {}
    if isinstance(total, int) and total > 0 and isinstance(step, int):
        status["progressPercentage"] = max(0, min(100, int(100 * step / total)))
        rate = report.get("rate")
        if isinstance(rate, float) and rate > 0:
            status["estimatedRemainingSeconds"] = max(0, int((total - step) / rate))
    metrics = report.get("metrics") or {}
    assert isinstance(metrics, dict)
    status["metrics"] = [{"name": str(k), "value": repr(v)} for k, v in metrics.items()]
    when = dt.datetime.fromtimestamp(float(str(report["time"])), dt.timezone.utc)
    status["lastUpdatedTime"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"trainerStatus": status}


def _kubeflow_post(payload: dict[str, object]) -> Any:
    """Sends one status to Kubeflow Trainer in a daemon thread (returned): a slow or
    absent endpoint never holds the training loop, a failure is dropped (the log line
    has the report)."""
    import threading

    thread = threading.Thread(target=_post, args=(payload,), daemon=True)
    thread.start()
    return thread


def _post(payload: dict[str, object]) -> None:
    import contextlib
    import json
    import urllib.request

    url = _kubeflow_url()
    if not url.startswith(("http://", "https://")):
        return  # a file: or other scheme is not Kubeflow Trainer's endpoint
    headers = {"Content-Type": "application/json"}
    token_file = os.environ.get("KUBEFLOW_TRAINER_STATUS_TOKEN")
    with contextlib.suppress(Exception):  # dropped: the log line has the report
        if token_file:
            with open(token_file) as f:
                headers["Authorization"] = f"Bearer {f.read().strip()}"
        context = None
        ca_file = os.environ.get("KUBEFLOW_TRAINER_STATUS_CA_CERT")
        if ca_file and url.startswith("https:"):
            import ssl

            context = ssl.create_default_context(cafile=ca_file)
        body = json.dumps(payload).encode()
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310
        with urllib.request.urlopen(request, timeout=_POST_TIMEOUT_S, context=context) as answer:  # noqa: S310
            answer.read()


_REPORTER = _Reporter()
"""This process's reports (the environment is read at import)."""
