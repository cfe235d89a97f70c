"""Why a local_docker replica failed, from the daemon: the container's state (``OOMKilled``,
its exit code, which docker-init reports as 128 + N for a signal) and the end of its log
(the last lines only: the daemon reads them from the end of its log file)."""

from __future__ import annotations

import datetime as dt

from torchx.specs.failure import (
    LOG_TAIL_BYTES,
    Failure,
    from_exit_status,
    from_log_tail,
)
from torchx.specs.vocabulary import Cause

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CAUSES", "log_tail", "replica_failure"]

CAUSES: dict[Cause, str | None] = {
    Cause.EXCEPTION: "the traceback at the end of the container's log",
    Cause.EXIT_CODE: "the container's ExitCode",
    Cause.SIGNAL: "an ExitCode of 128 + N, through docker-init",
    Cause.OOM: "the container's State.OOMKilled",
    Cause.TIME_LIMIT: None,
    Cause.PREEMPTED: "a kill the daemon logged: docker stop or kill, the daemon, the host",
    Cause.NODE_FAILURE: None,
    Cause.IMAGE_PULL: None,
    Cause.REJECTED: None,
    Cause.CANCELLED: None,
    Cause.UNKNOWN: "a failed container with no exit code",
}
"""How this backend names each cause: the native evidence it reads it from, or ``None``
where it never names it (tests/test_backend_wings.py keeps the table whole and true)."""

_TAIL_LINES = 400
"""Log lines asked of the daemon (then cut to 64 KiB): a traceback and what led to it."""


def replica_failure(
    api: Any, role: str, replica_id: int, info: dict[str, Any], outside: str = ""
) -> Failure:
    """The failure of the container ``info`` (``inspect_container``'s answer) of replica
    ``replica_id`` of ``role``; ``outside`` says it was stopped from outside, if it was."""
    state = info.get("State") or {}
    failure = Failure(role=role, replica_id=replica_id, time=_unix(state.get("FinishedAt")))
    code = state.get("ExitCode")
    from_exit_status(failure, code if isinstance(code, int) else None, signal_exits=True)
    if outside:  # not its own failure: stopped as a preemption or a drain stops it
        failure.cause, failure.message = "preempted", outside
    tail = log_tail(api, str(info.get("Id", "")))
    if tail:
        from_log_tail(failure, tail)
    if state.get("OOMKilled"):
        limit = int((info.get("HostConfig") or {}).get("Memory") or 0) >> 20
        failure.cause = "oom"
        over = f" of {limit} MB" if limit else ""
        failure.message = f"out of memory: killed over its limit{over} (raise the role's memMB)"
    elif state.get("Error"):
        failure.message = str(state["Error"]).splitlines()[0]
    return failure


def log_tail(api: Any, container_id: str) -> str:
    """The last lines of the container's log, through TorchX's engine client (frames) or
    the docker SDK's ``APIClient`` (bytes) alike."""
    try:
        data = api.logs(container_id, stdout=True, stderr=True, tail=_TAIL_LINES)
        raw = data if isinstance(data, bytes) else b"".join(data)
    except Exception:
        return ""
    return raw[-LOG_TAIL_BYTES:].decode("utf-8", "replace")


def _unix(value: object) -> float | None:
    """Unix seconds of Docker's ``2026-11-29T04:25:43.123456789Z`` (None for its zero time)."""

    if not isinstance(value, str) or value.startswith("0001-"):
        return None
    whole, _, fraction = value.rstrip("Z").partition(".")
    try:
        stamp = dt.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None
    digits = "".join(c for c in fraction if c.isdigit())[:6]
    return stamp.timestamp() + (int(digits) / 10 ** len(digits) if digits else 0.0)
