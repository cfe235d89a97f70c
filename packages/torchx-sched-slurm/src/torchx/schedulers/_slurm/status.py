"""What a Slurm job is doing, for ``status`` and ``describe``: from Slurm's rows of a job to
TorchX's ``DescribeAppResponse`` (state, reasons, roles, waiting, timeline), the attempts
of a requeued job, and the state of each element of a sweep.

A requeued job's ended attempts are in accounting (``sacct --duplicates``: PREEMPTED,
NODE_FAIL, TIMEOUT); a requeue the batch script asked for itself (``REQUEUED``) names its
reason on a ``torchx: requeued:`` line of the job's batch log.

A sweep's arrays are named ``<app>:<role>-array-<offset>``: the name tells that a job is a
sweep and where its elements start, with no record needed; the record adds the elements'
values. Each element's state comes from the tasks of its arrays.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from torchx.schedulers._slurm import commands, parse
from torchx.schedulers._slurm.logs import file_tail, replica_log_tail
from torchx.schedulers._slurm.parse import (
    SlurmJob,
    _exit_status,
    _number,
    base_state,
    slurm_time,
    split_job_name,
)
from torchx.schedulers.api import DescribeAppResponse
from torchx.schedulers.ids import ENV_REQUEST, ENV_REQUEST_HASH
from torchx.specs import ReplicaStatus, RoleStatus
from torchx.specs.api import NONE, AppState, Resource, Role, is_terminal
from torchx.specs.attempts import Attempt
from torchx.specs.failure import Failure, from_exit_status, from_log_tail
from torchx.specs.status import ArrayStatus
from torchx.specs.timeline import Waiting, timeline
from torchx.util.startup.lazy_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.records import JobRecord
    from torchx.schedulers._slurm.ssh import SshTarget
    from torchx.specs.attempts import Attempt
    from torchx.specs.failure import Failure
    from torchx.specs.timeline import Phase, Waiting

__all__ = [
    "ARRAY_ROLE_SUFFIX",
    "SLURM_STATES",
    "app_state",
    "appstate_from_slurm_state",
    "attempt_history",
    "describe_array",
    "describe_rows",
    "get_appstate_from_job",
    "is_array_name",
    "last_interruption",
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
    ended (:func:`~torchx.schedulers._slurm.status.last_interruption`)."""

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


ARRAY_ROLE_SUFFIX = "-array"
"""A sweep's job name is ``<app>:<role>-array-<offset>``."""


def is_array_name(name: str) -> bool:
    """Whether a job name is a sweep's (``<app>:<role>-array-<offset>``)."""
    prefix, dash, offset = name.rpartition("-")
    return bool(dash) and offset.isdigit() and prefix.endswith(ARRAY_ROLE_SUFFIX)


def _split_name(name: str) -> tuple[str, str, int]:
    """(app, role, offset) of a sweep's job name."""
    prefix, _, offset = name.rpartition("-")
    prefix = prefix[: -len(ARRAY_ROLE_SUFFIX)]
    app, _, role = prefix.rpartition(":")
    return app, role, int(offset)


@dataclass
class _Task:
    """One element as Slurm reports it."""

    state: str
    reason: str = ""
    exit_code: int | None = None
    signal: int = 0
    hosts: str = ""
    submit: float | None = None
    start: float | None = None
    end: float | None = None


_SQUEUE_FIELDS = (
    "ArrayJobID",
    "ArrayTaskID",
    "State",
    "Reason",
    "exit_code",
    "NodeList",
    "SubmitTime",
    "StartTime",
    "EndTime",
    "Name",
)
_SQUEUE_FORMAT = ",".join(f"{name}:|" for name in _SQUEUE_FIELDS)


def _task_ids(spec: str) -> list[int]:
    """The task ids of ``squeue``'s ArrayTaskID (``3``, ``2-5%2``, ``[1,4-6]``)."""
    spec = spec.strip().strip("[]").split("%", 1)[0]
    ids: list[int] = []
    for part in spec.split(","):
        first, dash, last = part.partition("-")
        last, _, step = last.partition(":")
        if not first.isdigit() or (dash and not last.isdigit()):
            continue
        stop = int(last) if dash else int(first)
        ids += range(int(first), stop + 1, int(step) if step.isdigit() else 1)
    return ids


def _from_squeue(out: str, tasks: dict[int, _Task], names: dict[str, str]) -> None:
    for line in out.splitlines():
        parts = line.split("|", len(_SQUEUE_FIELDS) - 1)
        if len(parts) < len(_SQUEUE_FIELDS):
            continue
        array_id, task, state, reason, exit_code, nodes, submit, start, end, name = parts
        name = name.rstrip("|").strip()
        if not is_array_name(name):
            continue
        names[array_id.strip()] = name
        offset = _split_name(name)[2]
        code, sig = (
            _exit_status(_number(exit_code)) if _number(exit_code) is not None else (None, 0)
        )
        for task_id in _task_ids(task):
            tasks[offset + task_id] = _Task(
                state=base_state(state),
                reason=reason.strip() if reason.strip() not in ("None", "(null)") else "",
                exit_code=code,
                signal=sig,
                hosts=nodes.strip(),
                submit=slurm_time(submit.strip()),
                start=slurm_time(start.strip()),
                end=slurm_time(end.strip()),
            )


def _from_sacct(out: str, tasks: dict[int, _Task], names: dict[str, str]) -> None:
    lines = [line for line in out.splitlines() if line.strip()]
    if not lines:
        return
    header = lines[0].split("|")
    for line in lines[1:]:
        values = dict(zip(header, line.split("|"), strict=False))
        job_id = values.get("JobID", "")
        array_id, underscore, task = job_id.partition("_")
        name = values.get("JobName", "")
        if not underscore or "." in task or not is_array_name(name):
            continue
        names.setdefault(array_id, name)
        offset = _split_name(name)[2]
        code, sig = _exit_status(values.get("ExitCode", ""))
        for task_id in _task_ids(task):
            position = offset + task_id
            if position in tasks:  # the queue's word is fresher
                continue
            tasks[position] = _Task(
                state=base_state(values.get("State", "")),
                exit_code=code,
                signal=sig,
                hosts=values.get("NodeList", ""),
                submit=slurm_time(values.get("Submit")),
                start=slurm_time(values.get("Start")),
                end=slurm_time(values.get("End")),
            )


def describe_array(
    app_id: str,
    job_ids: list[str],
    record: JobRecord | None,
    via: SshTarget | None,
) -> DescribeAppResponse | None:
    """The sweep ``app_id`` (arrays ``job_ids``): each element's state from the queue
    (one ``squeue``), and from accounting those the queue no longer holds (one ``sacct``,
    only then). ``None`` when neither knows a sweep of these ids."""

    ids = ",".join(job_ids)
    meta: dict[str, Any] = {}
    if record is not None and record.array:
        meta = json.loads(record.array)
    tasks: dict[int, _Task] = {}
    names: dict[str, str] = {}
    code, out, _ = commands.run_through_outages(
        ["squeue", "-h", "-t", "all", "-j", ids, "-O", _SQUEUE_FORMAT], via=via
    )
    if code == 0:
        _from_squeue(out, tasks, names)
    size = int(meta.get("size") or 0)
    if not tasks or (size and len(tasks) < size) or not size:
        try:
            code, out, _ = commands.run_through_outages(
                [
                    "sacct", "--parsable2", "--allocations", "-j", ids,
                    "--format=JobID,JobName%256,State,ExitCode,NodeList,Submit,Start,End",
                ],
                "Slurm's accounting (slurmdbd)",
                via=via,
            )  # fmt: skip
        except commands.SlurmNotFoundError:
            code, out = 1, ""
        if code == 0:
            _from_sacct(out, tasks, names)
    if not tasks:
        return None
    size = size or max(tasks) + 1
    states = [
        appstate_from_slurm_state(tasks[p].state) if p in tasks else AppState.UNKNOWN
        for p in range(size)
    ]
    first_name = names.get(job_ids[0]) or next(iter(names.values()))
    app_name, role, _ = _split_name(first_name)
    status = ArrayStatus.of(
        states,
        indices=meta.get("indices"),
        values=meta.get("values"),
        size=int(meta.get("sweep_size") or size),
    )
    replicas = [
        ReplicaStatus(
            id=p,
            state=state,
            role=role,
            hostname=tasks[p].hosts if p in tasks else "",
        )
        for p, state in enumerate(states)
    ]
    app_state = status.state()
    response = DescribeAppResponse(
        app_id=app_id,
        state=app_state,
        num_restarts=0,
        roles_statuses=[RoleStatus(role, replicas)],
        array=status,
        metadata={"app_name": app_name} if app_name else {},
    )
    pending = [tasks[p] for p in range(size) if p in tasks and states[p] == AppState.PENDING]
    if app_state == AppState.PENDING and pending:
        submit = min((t.submit for t in pending if t.submit), default=None)
        reason = next((t.reason for t in pending if t.reason), "")
        response.waiting = Waiting(
            phase="queued",
            since=submit,
            reason=reason_words(reason) if reason else "queued",
        )
    if app_state == AppState.FAILED:
        response.failure = _first_failure(
            job_ids[0], role=role, tasks=tasks, states=states, record=record, via=via
        )
    response.msg = status.failed_message() or response.msg
    return response


def _first_failure(
    first_id: str,
    *,
    role: str,
    tasks: dict[int, _Task],
    states: list[AppState],
    record: JobRecord | None,
    via: SshTarget | None,
) -> Failure | None:
    """The failure of the element that failed first, with its log's tail."""

    failed = [p for p, s in enumerate(states) if s == AppState.FAILED]
    if not failed:
        return None
    position = min(failed, key=lambda p: (tasks[p].end or float("inf"), p))
    task = tasks[position]
    failure = from_exit_status(
        Failure(role=role, replica_id=position, time=task.end), task.exit_code, task.signal
    )
    log_dir = record.log_dir if record is not None else ""
    return from_log_tail(failure, replica_log_tail(first_id, log_dir, role, position, via))


_REQUEUED_LINE = "torchx: requeued: "
_RUNNING = frozenset({"PENDING", "RUNNING", "REQUEUED_HOLD", "REQUEUE_FED", "REQUEUE_HOLD"})


def last_interruption(
    job_id: str, log_dir: str | None, via: SshTarget | None = None, restarts: int = 0
) -> str | None:
    """How the job's latest ended attempt ended (``NODE_FAIL``, ``PREEMPTED``,
    ``TIMEOUT``, ``FAILED (exit code 3; ...)``, ``REQUEUED``), None if unknown.

    slurmdbd records an ended attempt a moment after the requeue: until it has, a job
    that requeued itself each of its ``restarts`` times is known from its batch log."""
    out = _attempt_rows(job_id, "JobID,State", via)
    ended = [
        row.state
        for row in parse.parse_sacct_text(out or "", leader=job_id)
        if row.het_offset == 0 and row.state and row.state not in _RUNNING
    ]
    if not ended:  # not in the accounting yet: only a requeue of its own is known
        reasons = _requeue_reasons(job_id, log_dir, via)
        return reasons[-1] if restarts and len(reasons) >= restarts else None
    if ended[-1] == "REQUEUED":
        reasons = _requeue_reasons(job_id, log_dir, via)
        return reasons[-1] if reasons else "REQUEUED (scontrol requeue)"
    return ended[-1]


def _attempt_rows(job_id: str, fields: str, via: SshTarget | None) -> str | None:
    """Accounting's record of every attempt of the job (``sacct --duplicates``), as
    ``--parsable2`` text with ``fields``; None when sacct cannot say."""
    try:
        code, out, _ = commands.run_once(
            ["sacct", "--duplicates", "--allocations", "--parsable2", f"--format={fields}",
             "-j", job_id],
            via=via,
        )  # fmt: skip
    except commands.SlurmCommandError:
        return None
    return out if code == 0 else None


def _requeue_reasons(job_id: str, log_dir: str | None, via: SshTarget | None) -> list[str]:
    """The ``torchx: requeued:`` reasons of the job's batch log, oldest first (none if it
    cannot be read)."""
    tail = file_tail(os.path.join(log_dir or ".", f"slurm-{job_id}.out"), via)
    return [
        line[len(_REQUEUED_LINE) :] for line in tail.splitlines() if line.startswith(_REQUEUED_LINE)
    ]


_CAUSES = {"PREEMPTED": "preempted", "NODE_FAIL": "node_failure", "TIMEOUT": "time_limit"}
"""Slurm's word for how a requeued attempt ended, in the failure vocabulary."""


def attempt_history(job_id: str, log_dir: str | None, via: SshTarget | None) -> list[Attempt]:
    """Every attempt of a requeued job, from accounting's record of each (``sacct
    --duplicates``): how the ended ones ended, and when. A requeue the batch script asked
    for (``REQUEUED``) takes its reason from the batch log's ``torchx: requeued:`` lines."""
    out = _attempt_rows(job_id, "JobID,State,Start,End,ExitCode", via)
    if out is None:
        return []
    lines = out.splitlines()
    header = lines[0].split("|") if lines else []
    records = [dict(zip(header, line.split("|"), strict=False)) for line in lines[1:]]
    mine = [r for r in records if r.get("JobID", "") in (job_id, f"{job_id}+0")]
    reasons = iter(_requeue_reasons(job_id, log_dir, via))
    attempts: list[Attempt] = []
    for number, record in enumerate(mine):
        state = parse.base_state(record.get("State", ""))
        attempt = Attempt(
            number,
            start=parse.slurm_time(record.get("Start")),
            end=parse.slurm_time(record.get("End")),
        )
        if number < len(mine) - 1:  # an attempt that ended and was requeued
            attempt.state = AppState.FAILED
            attempt.cause = _CAUSES.get(state)
            if state == "REQUEUED":
                reason = next(reasons, "")
                if reason.startswith("TIMEOUT"):
                    attempt.cause = "time_limit"
                elif reason.startswith("FAILED (exit code "):
                    attempt.cause = "exit_code"
                    code_text = reason[len("FAILED (exit code ") :].split(";")[0].rstrip(")")
                    attempt.exit_code = int(code_text) if code_text.isdigit() else None
        attempts.append(attempt)
    return attempts
