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
    from collections.abc import Mapping
    from typing import Any

__all__ = ["MARK", "drop_report_lines", "is_report_line", "report"]

MARK = "TORCHX_PROGRESS"
"""What starts a report in a log line (anything before it on the line is ignored)."""

_LINE_MARK = MARK + " {"


def is_report_line(line: str) -> bool:
    """Whether ``line`` of a log is a report (TorchX's protocol, not the job's words):
    the human views (``torchx log``, the dashboard, a root cause's lines) leave it out."""
    return _LINE_MARK in line


def drop_report_lines(chunk: bytes) -> bytes:
    """``chunk`` (whole lines of a log) without its report lines."""
    mark = _LINE_MARK.encode()
    if mark not in chunk:
        return chunk
    return b"".join(line for line in chunk.splitlines(keepends=True) if mark not in line)


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
        report["metrics"] = metrics
        # NaN and the infinities as JSON's readers of Python and JavaScript (JSON5) spell
        # them: bare NaN, Infinity, -Infinity; torchx status reads them back
        text = f"{MARK} {json.dumps(report)}\n"
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
    values of ``metrics`` (e.g. ``loss=0.33``; NaN and infinities are kept: a diverged run
    must show it). Cheap enough for every step of a loop.

    A bad value (a step that is no integer ``>= 0``, a total that is no integer ``>= 1``, a
    step past the total, a metric that is no number) skips this call with one warning
    naming it (once per kind of mistake); later reports go on."""
    if _REPORTER.enabled:
        problem = _problem(step, total, metrics)
        if problem is not None:
            _warn_once(problem[0], f"torchx.progress.report: {problem[1]}; this report is skipped")
            return
        _REPORTER.report(step, total, {str(k): float(v) for k, v in metrics.items()})


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _problem(step: object, total: object, metrics: Mapping[str, object]) -> tuple[str, str] | None:
    """``(kind, what is wrong)`` with a report's values, or None when they are good."""
    # the kind names the mistake and the value's type: a loop repeats one mistake with
    # new values (step 10, 11... past the total), which is one warning
    if not _is_count(step) or step < 0:  # type: ignore[operator]
        return f"step {type(step)}", f"step={step!r} is not an integer >= 0"
    if total is not None and (not _is_count(total) or total < 1):  # type: ignore[operator]
        return f"total {type(total)}", f"total={total!r} is not an integer >= 1 (or None: unknown)"
    if total is not None and step > total:  # type: ignore[operator]
        return "past", f"step={step!r} is past total={total!r}"
    for name, value in metrics.items():
        if not _is_number(value):
            return f"metric {name} {type(value)}", f"metric {name}={value!r} is not a number"
    return None


def _is_number(value: object) -> bool:
    """A number, or what converts to one (a NumPy scalar, a one-element tensor); not text
    or a bool, though ``float()`` would take them."""
    if isinstance(value, (str, bytes, bool)):
        return False
    try:
        float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return False
    return True


_WARNED: set[str] = set()


def _warn_once(kind: str, message: str) -> None:
    """One warning per kind of mistake in a process (a loop would repeat it every step)."""
    if kind in _WARNED:
        return
    _WARNED.add(kind)
    import warnings

    warnings.warn(message, stacklevel=3)


def _interval() -> float:
    raw = os.environ.get("TORCHX_PROGRESS_INTERVAL", "5")
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        _warn_once(
            "interval",
            f"TORCHX_PROGRESS_INTERVAL={raw!r} is not a number of seconds >= 0; using 5",
        )
        return 5.0
    return seconds


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
