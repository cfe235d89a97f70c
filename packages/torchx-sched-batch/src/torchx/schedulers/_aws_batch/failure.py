"""Why an AWS Batch job failed, from ``DescribeJobs`` (pure data, no boto3): Batch's
``statusReason`` and the container's ``reason`` name an OOM kill, an image that cannot be
pulled or a lost host; otherwise the exit code (128 + N: signal N) says how the container
ended. The root cause of an app is its first failed node, its log's traceback added
unless Batch named the cause itself."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchx.specs.failure import Failure, from_exit_status, from_log_tail, root_cause
from torchx.specs.vocabulary import Cause

__all__ = ["CAUSES", "failure_message", "last_container", "node_failure", "root_failure"]

CAUSES: dict[Cause, str | None] = {
    Cause.EXCEPTION: "the traceback at the end of the node's CloudWatch log stream",
    Cause.EXIT_CODE: "the container's exitCode",
    Cause.SIGNAL: "an exitCode of 128 + N",
    Cause.OOM: "OutOfMemoryError in the container's reason",
    Cause.TIME_LIMIT: None,
    Cause.PREEMPTED: "an attempt whose host was reclaimed (Spot, a scale-in)",
    Cause.NODE_FAILURE: "'Host EC2 ... terminated' in the statusReason",
    Cause.IMAGE_PULL: "CannotPullContainer in the statusReason",
    Cause.REJECTED: None,
    Cause.CANCELLED: None,
    Cause.UNKNOWN: "a failed job with no exit code and no reason",
}
"""How this backend names each cause: the native evidence it reads it from, or ``None``
where it never names it (tests/test_backend_wings.py keeps the table whole and true)."""

_PULL_HINT = (
    "the compute environment could not pull the image: push it to a registry its"
    " instances can reach (with a workspace: -cfg image_repo=<ECR repository>), check the"
    " name, and give the execution role pull access"
)


def last_container(job: Mapping[str, Any]) -> Mapping[str, Any]:
    attempts = job.get("attempts") or []
    if attempts:
        return attempts[-1].get("container") or {}
    return job.get("container") or {}


def failure_message(job: Mapping[str, Any]) -> str:
    """Why the job is where it is: Batch's ``statusReason`` plus the last attempt's
    container reason and exit code; a hint when the image could not be pulled."""
    parts: list[str] = []
    reason = " ".join(str(job.get("statusReason") or "").split())
    if reason:
        parts.append(reason)
    container = last_container(job)
    container_reason = " ".join(str(container.get("reason") or "").split())
    if container_reason and container_reason not in reason:
        parts.append(container_reason)
    exit_code = container.get("exitCode", (job.get("container") or {}).get("exitCode"))
    if exit_code not in (None, 0) and job.get("status") == "FAILED":
        parts.append(f"exit code {exit_code}")
    message = "; ".join(parts)
    if "CannotPullContainer" in message:
        message = f"{message} ({_PULL_HINT})"
    return message


def node_failure(role: str, replica_id: int, job: Mapping[str, Any]) -> Failure:
    """The failure of one failed (node) job: Batch's ``statusReason`` and the container's
    ``reason`` name an OOM kill, an image that cannot be pulled or a lost host; otherwise
    the exit code (128 + N: signal N) says how the container ended."""

    container = last_container(job)
    stopped = job.get("stoppedAt")
    failure = Failure(
        role=role,
        replica_id=replica_id,
        time=float(stopped) / 1000 if isinstance(stopped, (int, float)) else None,
    )
    code = container.get("exitCode", (job.get("container") or {}).get("exitCode"))
    from_exit_status(failure, code if isinstance(code, int) else None, signal_exits=True)
    words = failure_message(job)
    if "OutOfMemoryError" in words:
        failure.cause = "oom"
        memory = next(
            (
                r.get("value")
                for r in (job.get("container") or {}).get("resourceRequirements") or ()
                if r.get("type") == "MEMORY"
            ),
            None,
        )
        limit = f" (limit {memory} MiB; raise the role's memMB)" if memory else ""
        failure.message = f"out of memory: {words}{limit}"
    elif "CannotPull" in words:
        failure.cause, failure.message = "image_pull", words
    elif "Host EC2" in words and "terminated" in words:
        failure.cause, failure.message = "node_failure", words
    elif words and failure.cause == "unknown":
        failure.message = words
    return failure


def root_failure(
    failed: list[tuple[Failure, Mapping[str, Any]]],
    roles: list[str],
    tail: Callable[[Mapping[str, Any]], str] | None,
) -> Failure | None:

    root = root_cause([f for f, _ in failed], roles)
    if root is None or tail is None:
        return root
    job = next(j for f, j in failed if f is root)
    return from_log_tail(root, tail(job))  # Batch's own word (an OOM kill) stays
