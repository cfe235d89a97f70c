"""A sweep on Slurm as ``describe`` reads it: each element's state from the tasks of its
arrays (:mod:`torchx.schedulers._slurm.array_request` submits them). The arrays are named
``<app>:<role>-array-<offset>``: the name tells that a job is a sweep and where its
elements start, with no record needed; the record adds the elements' values.
"""

from __future__ import annotations

from torchx.schedulers._slurm import commands
from torchx.schedulers._slurm.parse import base_state, slurm_time
from torchx.util.startup.lazy_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.schedulers._slurm.records import JobRecord
    from torchx.schedulers._slurm.ssh import SshTarget
    from torchx.schedulers.api import DescribeAppResponse
    from torchx.specs.failure import Failure
    from torchx.specs.status import AppState

__all__ = ["ARRAY_ROLE_SUFFIX", "describe_array", "is_array_name"]

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
    from torchx.schedulers._slurm.parse import _exit_status, _number

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
    from torchx.schedulers._slurm.parse import _exit_status

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
    from torchx.schedulers._slurm.describe import appstate_from_slurm_state, reason_words
    from torchx.schedulers.api import DescribeAppResponse
    from torchx.specs.status import AppState, ArrayStatus, ReplicaStatus, RoleStatus
    from torchx.specs.timeline import Waiting

    ids = ",".join(job_ids)
    meta: dict[str, Any] = {}
    if record is not None and record.array:
        import json

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
    from torchx.schedulers._slurm.logtail import replica_log_tail
    from torchx.specs.failure import Failure, from_exit_status, from_log_tail
    from torchx.specs.status import AppState

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
