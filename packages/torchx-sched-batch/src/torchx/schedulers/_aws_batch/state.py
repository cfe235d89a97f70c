"""Reads an app's state out of Batch's ``DescribeJobs`` answers (pure data, no boto3).

The multi-node job (the parent) gives the app's state, its ``statusReason`` and the node
ranges the roles are rebuilt from. Where Batch reports the node jobs (``<job id>#<node>``)
each replica gets its own state, host and failure reason; otherwise (before the nodes
start, or on emulators without node jobs) every replica shows the parent's state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from torchx.schedulers._aws_batch.request import (
    DEFAULT_ROLE_NAME,
    ENV_TORCHX_ROLE_NAME,
    parse_target_nodes,
    resource_from_resource_requirements,
    role_command,
)
from torchx.schedulers.api import DescribeAppResponse
from torchx.specs.api import NONE, AppState, ReplicaStatus, Role, RoleStatus, is_terminal
from torchx.specs.attempts import Attempt
from torchx.specs.failure import Failure
from torchx.specs.timeline import Phase, Waiting

__all__ = [
    "CANCEL_REASON",
    "JOB_STATE",
    "app_state",
    "console_url",
    "describe_response",
    "failure_message",
    "log_stream_of",
]

JOB_STATE: dict[str, AppState] = {
    "SUBMITTED": AppState.PENDING,
    "PENDING": AppState.PENDING,
    "RUNNABLE": AppState.PENDING,
    "STARTING": AppState.PENDING,
    "RUNNING": AppState.RUNNING,
    "SUCCEEDED": AppState.SUCCEEDED,
    "FAILED": AppState.FAILED,
}
"""Batch job status -> TorchX app state (a terminated job is FAILED in Batch)."""

CANCEL_REASON = "cancelled via torchx"
"""The reason ``cancel`` gives ``TerminateJob``; a job failed with it reads CANCELLED."""
_UPSTREAM_CANCEL_REASON = "killed via torchx CLI"

_PULL_HINT = (
    "the compute environment could not pull the image: push it to a registry its"
    " instances can reach (with a workspace: -cfg image_repo=<ECR repository>), check the"
    " name, and give the execution role pull access"
)


def app_state(job: Mapping[str, Any]) -> AppState:
    """The TorchX state of a Batch job (CANCELLED when TorchX terminated it)."""
    status = str(job.get("status", ""))
    state = JOB_STATE.get(status, AppState.UNKNOWN)
    if state == AppState.FAILED:
        reason = str(job.get("statusReason") or "")
        if reason.startswith((CANCEL_REASON, _UPSTREAM_CANCEL_REASON)):
            return AppState.CANCELLED
    return state


def console_url(job_arn: str, job_id: str) -> str:
    """The AWS console page of a multi-node job (the region is read from its ARN)."""
    parts = job_arn.split(":")
    region = parts[3] if len(parts) > 3 and parts[3] else "us-east-1"
    return (
        f"https://{region}.console.aws.amazon.com/batch/home?region={region}#jobs/mnp-job/{job_id}"
    )


def _last_container(job: Mapping[str, Any]) -> Mapping[str, Any]:
    attempts = job.get("attempts") or []
    if attempts:
        return attempts[-1].get("container") or {}
    return job.get("container") or {}


def log_stream_of(job: Mapping[str, Any]) -> str | None:
    """The CloudWatch stream of a (node) job: its running container's, else its last
    attempt's; None before Batch has created one."""
    container = job.get("container") or {}
    stream = container.get("logStreamName")
    if stream and job.get("status") == "RUNNING":
        return str(stream)
    stream = _last_container(job).get("logStreamName") or stream
    return str(stream) if stream else None


def failure_message(job: Mapping[str, Any]) -> str:
    """Why the job is where it is: Batch's ``statusReason`` plus the last attempt's
    container reason and exit code; a hint when the image could not be pulled."""
    parts: list[str] = []
    reason = " ".join(str(job.get("statusReason") or "").split())
    if reason:
        parts.append(reason)
    container = _last_container(job)
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
    from torchx.specs.failure import from_exit_status

    container = _last_container(job)
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


def _env(container: Mapping[str, Any]) -> dict[str, str]:
    return {str(e["name"]): str(e.get("value", "")) for e in container.get("environment") or []}


def _node_host(node: Mapping[str, Any]) -> str:
    container = node.get("container") or {}
    for interface in container.get("networkInterfaces") or []:
        address = interface.get("privateIpv4Address")
        if address:
            return str(address)
    return ""


def describe_response(
    app_id: str,
    job: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    tail: Callable[[Mapping[str, Any]], str] | None = None,
) -> DescribeAppResponse:
    """The app of the multi-node ``job``; ``nodes`` are its node jobs Batch reported;
    ``tail`` reads the end of a failed (node) job's log, for the root cause."""
    state = app_state(job)
    by_index: dict[int, Mapping[str, Any]] = {}
    for node in nodes:
        details = node.get("nodeDetails") or {}
        index = details.get("nodeIndex")
        if index is None:
            index = int(str(node.get("jobId", "")).rpartition("#")[2] or -1)
        by_index[int(index)] = node
    properties = job.get("nodeProperties") or {}
    num_nodes = int(properties.get("numNodes") or 0)
    roles: list[Role] = []
    roles_statuses: list[RoleStatus] = []
    failed: list[tuple[Failure, Mapping[str, Any]]] = []
    for node_range in properties.get("nodeRangeProperties") or []:
        container = node_range.get("container") or {}
        env = _env(container)
        first, last = parse_target_nodes(str(node_range.get("targetNodes", "0")), num_nodes)
        command = role_command([str(c) for c in container.get("command") or []])
        name = env.get(ENV_TORCHX_ROLE_NAME, DEFAULT_ROLE_NAME)
        requirements = container.get("resourceRequirements") or []
        role = Role(
            name=name,
            image=str(container.get("image", "")),
            entrypoint=command[0] if command else "",
            args=command[1:],
            num_replicas=last - first + 1,
            env=env,
        )
        if requirements:
            role.resource = resource_from_resource_requirements(requirements)
        roles.append(role)
        replicas: list[ReplicaStatus] = []
        for replica_id, node_index in enumerate(range(first, last + 1)):
            node_job = by_index.get(node_index)
            if node_job is None:
                replicas.append(ReplicaStatus(replica_id, state, name, ""))
                continue
            error = failure_message(node_job) if node_job.get("status") == "FAILED" else ""
            if error:
                failed.append((node_failure(name, replica_id, node_job), node_job))
            replicas.append(
                ReplicaStatus(
                    replica_id,
                    app_state(node_job) if state != AppState.CANCELLED else state,
                    name,
                    _node_host(node_job),
                    structured_error_msg=error or NONE,
                )
            )
        roles_statuses.append(RoleStatus(name, replicas))
    attempts = job.get("attempts") or []
    failure = None
    if state == AppState.FAILED:
        if not failed and roles:  # no node jobs reported (emulators): the job is the main node's
            failed.append((node_failure(roles[0].name, 0, job), job))
        failure = _root_cause(failed, [role.name for role in roles], tail)
    phases, waiting = timing(job, state)
    history = attempt_history(attempts, terminal=is_terminal(state))
    return DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=max(0, len(history) - 1),
        msg=failure_message(job) or NONE,
        ui_url=console_url(str(job.get("jobArn", "")), str(job.get("jobId", ""))),
        metadata={str(k): str(v) for k, v in (job.get("tags") or {}).items()},
        roles_statuses=roles_statuses,
        roles=roles,
        failure=failure,
        waiting=waiting,
        timeline=phases,
        attempts=history,
    )


def attempt_history(attempts: list[Mapping[str, Any]], terminal: bool) -> list[Attempt]:
    """The job's attempts from Batch's ``attempts`` (one per ended attempt: its container's
    exit code and reason, ``startedAt``/``stoppedAt`` in milliseconds); while the job is
    not over, the one that runs or waits now follows them."""
    from torchx.specs.attempts import Attempt

    history = []
    for number, attempt in enumerate(attempts):
        container = attempt.get("container") or {}
        code = container.get("exitCode")
        started, stopped = attempt.get("startedAt"), attempt.get("stoppedAt")
        entry = Attempt(
            number,
            start=started / 1000 if isinstance(started, (int, float)) else None,
            end=stopped / 1000 if isinstance(stopped, (int, float)) else None,
            exit_code=code if isinstance(code, int) else None,
        )
        reason = str(attempt.get("statusReason") or container.get("reason") or "")
        if entry.exit_code == 0:
            entry.state = AppState.SUCCEEDED
        else:
            entry.state = AppState.FAILED
            entry.cause = "exit_code" if entry.exit_code is not None else None
            if "Host EC2" in reason and "terminated" in reason:
                entry.cause = "preempted"  # a Spot reclaim or a scale-in took its host
        history.append(entry)
    if not terminal and history:
        history.append(Attempt(len(history)))
    return history


_WAITING = {
    "SUBMITTED": "submitted: Batch has not evaluated the job yet",
    "PENDING": "pending: it waits for a job it depends on",
    "RUNNABLE": "runnable: it waits for compute resources in its queue's environments",
    "STARTING": "starting: its container is being made (image pull, start)",
}


def timing(job: Mapping[str, Any], state: AppState) -> tuple[list[Phase], Waiting | None]:
    """The job's phases from Batch's ``createdAt``, ``startedAt`` and ``stoppedAt``, and
    why it waits while it does: its status (``RUNNABLE``...) and ``statusReason``."""
    from torchx.specs.timeline import timeline

    def seconds(key: str) -> float | None:
        value = job.get(key)
        return float(value) / 1000 if isinstance(value, (int, float)) else None

    created, started, stopped = seconds("createdAt"), seconds("startedAt"), seconds("stoppedAt")
    reason = " ".join(str(job.get("statusReason") or "").split())
    phases = timeline(
        [
            ("submitted", created, None),
            ("queued", created, reason or None),
            ("running", started, None),
            ("finished", stopped if is_terminal(state) else None, None),
        ],
        ended=stopped if is_terminal(state) else None,
    )
    return phases, waiting(job)


def waiting(job: Mapping[str, Any]) -> Waiting | None:
    """Why the job waits, while it does (its status and ``statusReason``), else None:
    read from what ``DescribeJobs`` already returned (``list`` shows it too)."""
    status = str(job.get("status") or "")
    if status not in _WAITING:
        return None
    reason = " ".join(str(job.get("statusReason") or "").split())
    created = job.get("createdAt")
    since = float(created) / 1000 if isinstance(created, (int, float)) else None
    words = _WAITING[status].split(": ", 1)[1] + (f" ({reason})" if reason else "")
    phase = "starting" if status == "STARTING" else "queued"
    return Waiting(phase=phase, reason=f"{status}: {words}", since=since)


def _root_cause(
    failed: list[tuple[Failure, Mapping[str, Any]]],
    roles: list[str],
    tail: Callable[[Mapping[str, Any]], str] | None,
) -> Failure | None:
    from torchx.specs.failure import from_log_tail, root_cause

    root = root_cause([f for f, _ in failed], roles)
    if root is None or tail is None:
        return root
    job = next(j for f, j in failed if f is root)
    return from_log_tail(root, tail(job))  # Batch's own word (an OOM kill) stays
