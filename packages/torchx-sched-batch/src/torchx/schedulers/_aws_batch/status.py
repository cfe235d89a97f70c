"""Reads an app's state out of Batch's ``DescribeJobs`` answers (pure data, no boto3).

The multi-node job (the parent) gives the app's state, its ``statusReason`` and the node
ranges the roles are rebuilt from. Where Batch reports the node jobs (``<job id>#<node>``)
each replica gets its own state, host and failure reason; otherwise (before the nodes
start, or on emulators without node jobs) every replica shows the parent's state.

A sweep is one array job: its children's states are the elements', their indices and
values read back from the job's ``parameters`` (``torchxArray``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from torchx.schedulers._aws_batch.failure import (
    failure_message,
    last_container,
    node_failure,
    root_failure,
)
from torchx.schedulers._aws_batch.request import (
    DEFAULT_ROLE_NAME,
    ENV_TORCHX_ROLE_NAME,
    PARAMETER,
    parse_target_nodes,
    resource_from_resource_requirements,
    role_command,
)
from torchx.schedulers.api import DescribeAppResponse
from torchx.specs.api import NONE, AppState, ReplicaStatus, Role, RoleStatus, is_terminal
from torchx.specs.attempts import Attempt
from torchx.specs.failure import Failure
from torchx.specs.status import ArrayStatus
from torchx.specs.timeline import Phase, Waiting, timeline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from torchx.schedulers.api import DescribeAppResponse

__all__ = [
    "CANCEL_REASON",
    "JOB_STATE",
    "app_state",
    "child_ids",
    "console_url",
    "describe_array",
    "describe_response",
    "is_array",
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


def log_stream_of(job: Mapping[str, Any]) -> str | None:
    """The CloudWatch stream of a (node) job: its running container's, else its last
    attempt's; None before Batch has created one."""
    container = job.get("container") or {}
    stream = container.get("logStreamName")
    if stream and job.get("status") == "RUNNING":
        return str(stream)
    stream = last_container(job).get("logStreamName") or stream
    return str(stream) if stream else None


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
        failure = root_failure(failed, [role.name for role in roles], tail)
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


def is_array(job: Mapping[str, Any]) -> bool:
    """Whether a described job is a sweep's array job."""
    return PARAMETER in (job.get("parameters") or {})


def child_ids(job: Mapping[str, Any]) -> list[str]:
    """The job ids of a sweep's children (``ID:0`` ... ``ID:N-1``)."""

    record = json.loads((job.get("parameters") or {})[PARAMETER])
    size = len(record.get("indices") or []) or int(
        (job.get("arrayProperties") or {}).get("size") or 0
    )
    return [f"{job['jobId']}:{i}" for i in range(size)]


def describe_array(
    app_id: str,
    job: Mapping[str, Any],
    children: Sequence[Mapping[str, Any]],
    tail: Callable[[Mapping[str, Any]], str] | None = None,
) -> DescribeAppResponse:
    """The sweep of array ``job`` from its children: each element's state, the sweep's
    (every element succeeded, or all ended and one failed), the first failure."""
    record = json.loads((job.get("parameters") or {})[PARAMETER])
    by_id = {str(c.get("jobId")): c for c in children}
    ids = child_ids(job)
    env = {
        str(e.get("name")): str(e.get("value"))
        for e in ((job.get("container") or {}).get("environment") or [])
    }
    role = env.get(ENV_TORCHX_ROLE_NAME) or "role"
    states: list[AppState] = []
    replicas: list[ReplicaStatus] = []
    failed = []
    for position, child_id in enumerate(ids):
        child = by_id.get(child_id)
        state = app_state(child) if child is not None else AppState.PENDING
        if app_state(job) == AppState.CANCELLED and state not in (
            AppState.SUCCEEDED,
            AppState.FAILED,
        ):
            state = AppState.CANCELLED
        states.append(state)
        host = _node_host(child) if child is not None else ""
        replicas.append(ReplicaStatus(position, state, role, host))
        if child is not None and state == AppState.FAILED:
            failed.append((node_failure(role, position, child), child))
    status = ArrayStatus.of(
        states, indices=record.get("indices"), values=record.get("values"), size=record.get("size")
    )
    state = status.state()
    phases, waiting = timing(job, state)
    response = DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=0,
        roles_statuses=[RoleStatus(role, replicas)],
        array=status,
        timeline=phases,
        waiting=waiting,
    )
    if state == AppState.FAILED:
        response.failure = root_failure(failed, [role], tail)
        response.msg = status.failed_message()
    elif failed:
        response.msg = failure_message(failed[0][1])
    return response
