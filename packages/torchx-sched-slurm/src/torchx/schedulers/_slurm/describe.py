"""From Slurm's rows of a job to TorchX's ``DescribeAppResponse`` (states, reasons, roles)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchx.schedulers._slurm.parse import SlurmJob, base_state, split_job_name
from torchx.schedulers.api import DescribeAppResponse
from torchx.specs import ReplicaStatus, RoleStatus
from torchx.specs.api import NONE, AppState, Resource, Role, is_terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.records import JobRecord
    from torchx.specs import ReplicaStatus, RoleStatus
    from torchx.specs.timeline import Phase, Waiting

__all__ = [
    "SLURM_STATES",
    "app_state",
    "appstate_from_slurm_state",
    "describe_rows",
    "get_appstate_from_job",
]

SLURM_STATES: dict[str, AppState] = {
    "BOOT_FAIL": AppState.FAILED,
    "CANCELLED": AppState.CANCELLED,
    "COMPLETED": AppState.SUCCEEDED,
    "DEADLINE": AppState.FAILED,
    "FAILED": AppState.FAILED,
    "NODE_FAIL": AppState.FAILED,
    "OUT_OF_MEMORY": AppState.FAILED,
    "PENDING": AppState.PENDING,
    "PREEMPTED": AppState.FAILED,
    "RUNNING": AppState.RUNNING,
    "REQUEUED": AppState.PENDING,
    "RESIZING": AppState.PENDING,
    "REVOKED": AppState.FAILED,
    "SUSPENDED": AppState.PENDING,
    "TIMEOUT": AppState.FAILED,
}
"""Slurm job state -> TorchX app state; states not listed (``COMPLETING``, ...) are UNKNOWN."""


def appstate_from_slurm_state(slurm_state: str) -> AppState:
    """The app state of a Slurm state string; UNKNOWN for one TorchX does not know."""
    return SLURM_STATES.get(slurm_state, AppState.UNKNOWN)


def get_appstate_from_job(job: Mapping[str, Any]) -> AppState:
    """The app state of one job entry of ``squeue --json`` (any Slurm version)."""

    return appstate_from_slurm_state(base_state(job.get("job_state", job.get("state"))))


_STATE_ORDER = (
    AppState.FAILED,
    AppState.CANCELLED,
    AppState.RUNNING,
    AppState.PENDING,
    AppState.UNKNOWN,
    AppState.SUCCEEDED,
)


def app_state(rows: list[SlurmJob]) -> AppState:
    """One state for the components of a job (they normally agree).

    Disagreeing components: any still pending or running decides (RUNNING over PENDING),
    else a failure, else a cancellation.
    """
    states = {appstate_from_slurm_state(r.state) for r in rows}
    if len(states) == 1:
        return states.pop()
    if AppState.RUNNING in states:
        return AppState.RUNNING
    if AppState.PENDING in states:
        return AppState.PENDING
    for state in _STATE_ORDER:
        if state in states:
            return state
    return AppState.UNKNOWN


_NEVER = "it can never start as submitted: cancel it and resubmit"
_REASONS = {
    "Priority": "jobs of higher priority are ahead of it",
    "Resources": "waiting for nodes to become free",
    "Dependency": "waiting for a job it depends on",
    "DependencyNeverSatisfied": f"a job it depends on failed; {_NEVER} without the dependency",
    "BeginTime": "asked to start later (--begin)",
    "JobHeldUser": "held by its user: `scontrol release JOBID` lets it start",
    "JobHeldAdmin": "held by an administrator",
    "ReqNodeNotAvail": "the nodes it needs are down, drained or reserved",
    "Reservation": "waiting for its reservation to start",
    "PartitionDown": "its partition is down",
    "PartitionInactive": "its partition is inactive",
    "PartitionConfig": f"the request does not fit the partition's configuration; {_NEVER}"
    " with fewer nodes, CPUs, memory or GPUs, or to another partition",
    "PartitionNodeLimit": f"it asks for more nodes than the partition allows; {_NEVER} with"
    " fewer replicas or to another partition",
    "PartitionTimeLimit": f"its time limit exceeds the partition's; {_NEVER} with a shorter"
    " -cfg time=... or to another partition",
    "BadConstraints": f"no node has the features it asks for; {_NEVER} with another"
    " -cfg constraint=...",
    "InvalidAccount": f"its account is not valid here; {_NEVER} with another -cfg account=...",
    "InvalidQOS": f"its QOS is not valid here; {_NEVER} with another -cfg qos=...",
    "launch failed requeued held": "its launch failed and Slurm held it: see `scontrol show"
    " job JOBID`, then `scontrol release JOBID`",
}


def explain_reason(reason: str) -> str:
    """Slurm's raw pending reason with a short explanation of the common ones (saying so
    when the job can never start as it is)."""
    explanation = _REASONS.get(reason)
    if explanation is None:
        for prefix, text in (
            ("QOS", "a limit of its QOS is reached; it starts once other jobs end"),
            ("Assoc", "a limit of its account is reached; it starts once other jobs end"),
        ):
            if reason.startswith(prefix) and "Limit" in reason:
                explanation = text
                break
    return f"{reason} ({explanation})" if explanation else reason


def reason_words(reason: str) -> str:
    """``Resources: waiting for nodes to become free``: Slurm's reason, then what it means
    (as ``waiting`` and ``torchx list`` say it)."""
    explained = explain_reason(reason)
    if explained.endswith(")") and explained.startswith(f"{reason} ("):
        return f"{reason}: {explained[len(reason) + 2 : -1]}"
    return explained


_REQUEUE_WAIT = (
    "a requeued job waits before it may start again: slurm.conf AuthInfo"
    " cred_expire, 120 s by default"
)


def _message(state: AppState, rows: list[SlurmJob], interruption: str | None) -> str:
    """Why the job is where it is: the pending reason (after a requeue: the attempt and
    how the last one ended), or how it ended."""
    leader = rows[0]
    reasons = [r.reason for r in rows if r.reason]
    attempt = max(r.restarts for r in rows)
    if state == AppState.PENDING:
        reason = reasons[0] if reasons else ""
        if attempt and reason == "BeginTime":
            reason = f"{reason} ({_REQUEUE_WAIT})"
        elif reason:
            reason = explain_reason(reason)
        if attempt:
            ended = f"; the last one ended: {interruption}" if interruption else ""
            head = f"pending again (attempt {attempt}{ended})"
        else:
            head = "pending"
        return f"{head}: {reason}" if reason else head
    if state == AppState.RUNNING and attempt:
        return f"attempt {attempt}"
    if state == AppState.FAILED:
        codes = [r for r in rows if r.exit_code or r.signal]
        detail = leader.state.lower() if leader.state else "failed"
        if codes:
            first = codes[0]
            detail += (
                f", exit code {first.exit_code}" if first.exit_code else f", signal {first.signal}"
            )
        if reasons:
            detail += f" ({reasons[0]})"
        return detail
    if state == AppState.UNKNOWN and leader.state:
        return f"slurm state {leader.state}"
    return NONE


def describe_rows(
    job_id: str,
    rows: list[SlurmJob],
    record: JobRecord | None,
    interruption: str | None = None,
) -> DescribeAppResponse:
    """The app of ``rows``; ``interruption`` is how the last attempt of a requeued job
    ended (:func:`~torchx.schedulers._slurm.attempts.last_interruption`)."""

    names: list[tuple[str, int]] = []
    if record is not None:
        for name, count in record.roles:
            names += [(name, i) for i in range(count)]
    state = app_state(rows)
    role_replicas: dict[str, list[ReplicaStatus]] = {}
    role_info: dict[str, SlurmJob] = {}
    for row in rows:
        if row.het_offset < len(names):
            role, replica = names[row.het_offset]
        else:
            parsed = split_job_name(row.name)
            if parsed is None:
                role, replica = row.name or "job", row.het_offset
            else:
                role, replica = parsed[1], parsed[2]
        role_replicas.setdefault(role, []).append(
            ReplicaStatus(
                id=replica,
                state=appstate_from_slurm_state(row.state),
                role=role,
                hostname=row.hosts[0] if row.hosts else "",
            )
        )
        role_info.setdefault(role, row)
    roles_statuses: list[RoleStatus] = []
    roles: list[Role] = []
    for role, replicas in role_replicas.items():
        replicas.sort(key=lambda r: r.id)
        roles_statuses.append(RoleStatus(role, replicas))
        row = role_info[role]
        resource = Resource(cpu=row.cpus or -1, gpu=-1, memMB=row.mem_mb or -1)
        roles.append(
            Role(
                name=role,
                image=row.workdir,
                entrypoint=row.command,
                num_replicas=len(replicas),
                resource=resource,
            )
        )
    log_dir = record.log_dir if record is not None else None
    if record is not None and record.request_hash:  # Slurm keeps no env: the record does
        from torchx.schedulers.ids import ENV_REQUEST, ENV_REQUEST_HASH

        for described in roles:
            described.env.update(
                {ENV_REQUEST_HASH: record.request_hash, ENV_REQUEST: record.request}
            )
    phases, waiting = _timing(state, rows, interruption)
    return DescribeAppResponse(
        app_id=job_id,
        state=state,
        num_restarts=max(r.restarts for r in rows),
        msg=_message(state, rows, interruption),
        ui_url=f"file://{log_dir}" if log_dir else None,
        roles_statuses=roles_statuses,
        roles=roles,
        waiting=waiting,
        timeline=phases,
    )


def _timing(
    state: AppState, rows: list[SlurmJob], interruption: str | None
) -> tuple[list[Phase], Waiting | None]:
    """The job's phases from Slurm's Submit, Start and End times (the earliest submit and
    start, the latest end of its het components), and why it waits while it does: its
    pending reason in Slurm's word and what that means."""
    from torchx.specs.timeline import Waiting, timeline

    def first(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return min(known) if known else None

    submitted = first([r.submit for r in rows])
    started = first([r.start for r in rows]) if state != AppState.PENDING else None
    ended = max((r.end for r in rows if r.end is not None), default=None)
    ended = ended if is_terminal(state) else None
    reasons = [r.reason for r in rows if r.reason]
    reason = reason_words(reasons[0]) if reasons and reasons[0] != "None" else ""
    attempt = max(r.restarts for r in rows)
    queued_detail = reason or None
    marks: list[tuple[str, float | None, str | None]] = [("submitted", submitted, None)]
    if attempt and interruption:
        marks.append(
            ("requeued", submitted, f"attempt {attempt}; the last one ended: {interruption}")
        )
    if started is None or submitted is None or started > submitted:
        marks.append(("queued", submitted, queued_detail))
    marks += [("running", started, None), ("finished", ended, None)]
    phases = timeline(marks, ended=ended)
    waiting = None
    if state in (AppState.PENDING, AppState.SUBMITTED):
        waiting = Waiting(phase="queued", reason=reason, since=submitted)
    return phases, waiting
