"""Why a Ray app failed: per failed replica, its exit code (a negative one: the signal that
killed it) and when the driver saw it exit; a replica the job ended under carries Ray's
word for the job (its ``message`` and ``error_type``); a job that failed before any
replica ran is blamed on the first replica."""

from __future__ import annotations

from typing import Any

from torchx.schedulers._ray.status import ReplicaInfo, needs
from torchx.specs.api import AppState
from torchx.specs.failure import Failure, from_exit_status
from torchx.specs.vocabulary import Cause

__all__ = ["CAUSES", "failures"]

CAUSES: dict[Cause, str | None] = {
    Cause.EXCEPTION: "the traceback at the end of the replica's output",
    Cause.EXIT_CODE: "the exit code the driver saw",
    Cause.SIGNAL: "a negative exit code the driver saw",
    Cause.OOM: None,
    Cause.TIME_LIMIT: None,
    Cause.PREEMPTED: None,
    Cause.NODE_FAILURE: "the job's error_type names a node",
    Cause.IMAGE_PULL: None,
    Cause.REJECTED: "the driver's unplaceable event: resources that never became free",
    Cause.CANCELLED: None,
    Cause.UNKNOWN: "the job ended under a replica, for a reason Ray gives in words only",
}
"""How this backend names each cause: the native evidence it reads it from, or ``None``
where it never names it (tests/test_backend_wings.py keeps the table whole and true)."""


def failures(
    job: dict[str, Any], found: list[dict[str, Any]], infos: dict[tuple[str, int], ReplicaInfo]
) -> list[Failure]:
    """One failure per failed replica of a FAILED job: its exit code (a negative one: the
    signal that killed it) and when the driver saw it exit; a replica the job ended under
    carries Ray's word for the job (its ``message`` and ``error_type``). A job that failed
    before any replica ran (resources that never became free, a runtime env that could not
    be set up) is blamed on the first replica."""
    exited = {
        (str(e.get("role")), int(e.get("replica", -1))): e.get("t")
        for e in found
        if e.get("event") == "exited"
    }
    ray_word = " ".join(str(job.get("message") or "").split())
    error_type = str(job.get("error_type") or "")
    result = []
    for key, info in sorted(infos.items()):
        if info.state != AppState.FAILED:
            continue
        when = exited.get(key)
        failure = Failure(
            role=key[0],
            replica_id=key[1],
            time=float(when) if isinstance(when, (int, float)) else None,
        )
        if info.exit_code is not None:
            from_exit_status(failure, info.exit_code)
        else:
            failure.cause = "node_failure" if "NODE" in error_type.upper() else "unknown"
            failure.message = (
                f"the job ended under it: {error_type or 'FAILED'}: {ray_word}".rstrip(": ")
            )
        result.append(failure)
    if not result and infos:
        role, replica = min(infos)
        unplaceable = next((e for e in found if e.get("event") == "unplaceable"), None)
        failure = Failure(role=role, replica_id=replica)
        if unplaceable is not None:
            failure.cause = "rejected"
            failure.message = "resources never became free: " + needs(unplaceable)
        else:
            failure.message = f"{error_type or 'FAILED'}: {ray_word}".rstrip(": ")
        result.append(failure)
    return result
