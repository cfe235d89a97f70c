"""A sweep on Slurm: one job array (``sbatch --array=0-(N-1)%K``), split into several
arrays under one app id (``FIRST,SECOND``) when it has more elements than the cluster's
``MaxArraySize`` allows.

Every array task runs the same batch script; the script picks its element from its
position (``TORCHX_ARRAY_OFFSET`` + ``SLURM_ARRAY_TASK_ID``) and runs it with ``srun``, its
logs named by the first array's id and the element's position
(``slurm-<id>-<role>-<position>.out``), as a replica's are. The arrays are named
``<app>:<role>-array-<offset>``: the name tells ``describe`` that a job is a sweep and
where its elements start, with no record needed.
"""

from __future__ import annotations

from torchx.schedulers._slurm import commands
from torchx.schedulers._slurm.parse import base_state, slurm_time
from torchx.util._startup.lazy_dataclass import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.schedulers._slurm.records import JobRecord
    from torchx.schedulers._slurm.request import SlurmBatchRequest
    from torchx.schedulers._slurm.ssh import SshTarget
    from torchx.schedulers.api import DescribeAppResponse
    from torchx.specs._failure import Failure
    from torchx.specs._status import AppState

__all__ = [
    "ARRAY_ROLE_SUFFIX",
    "SlurmArray",
    "array_commands",
    "array_script",
    "describe_array",
    "is_array_name",
    "max_array_size",
]

ARRAY_ROLE_SUFFIX = "-array"
"""A sweep's job name is ``<app>:<role>-array-<offset>``."""
_APP = '"$app"'
"""The app id (the first array's job id) in the script: what the job-id mark becomes."""
_DEFAULT_MAX_ARRAY_SIZE = 1001  # Slurm's default


@dataclass
class SlurmArray:
    """A sweep's arrays: ``size`` elements, at most ``max_parallel`` running, in arrays of
    at most ``max_array_size`` tasks (0: one array); each element's sweep index and values
    for ``describe``."""

    size: int
    max_parallel: int | None = None
    max_array_size: int = 0
    indices: list[int] = field(default_factory=list)
    values: list[dict[str, str]] = field(default_factory=list)
    sweep_size: int = 0

    def chunks(self) -> list[tuple[int, int]]:
        """``(offset, count)`` of each array, in submission order."""
        step = self.max_array_size if self.max_array_size > 0 else self.size
        return [(start, min(step, self.size - start)) for start in range(0, self.size, step)]

    def to_record(self) -> str:
        """What the job record keeps of it (JSON, read by :func:`describe_array`)."""
        import json

        return json.dumps(
            {
                "size": self.size,
                "indices": self.indices,
                "values": self.values,
                "sweep_size": self.sweep_size,
            }
        )


def max_array_size(via: SshTarget | None) -> int:
    """The cluster's ``MaxArraySize`` (``scontrol show config``); Slurm's default if it
    does not say."""
    code, out, _ = commands.run_through_outages(["scontrol", "show", "config"], via=via)
    if code == 0:
        for line in out.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "MaxArraySize" and value.strip().isdigit():
                return int(value.strip())
    return _DEFAULT_MAX_ARRAY_SIZE


def job_name(req: SlurmBatchRequest, offset: int) -> str:
    first = next(iter(req.replicas.values()))
    return f"{first.name}-{offset}"


def array_commands(req: SlurmBatchRequest, job_ids: list[str]) -> list[list[str]]:
    """The ``sbatch`` command of each array; ``job_ids`` are those of the arrays submitted
    so far (the later arrays name the first, and with ``max_parallel`` wait for the one
    before; a dry run shows placeholders)."""
    array = req.array
    assert array is not None
    throttle = f"%{array.max_parallel}" if array.max_parallel else ""
    cmds = []
    for c, (offset, count) in enumerate(array.chunks()):
        cmd = [*req.cmd, f"--array=0-{count - 1}{throttle}"]
        if c > 0:
            first = job_ids[0] if job_ids else "FIRST_ARRAY_ID"
            cmd += [
                f"--job-name={job_name(req, offset)}",
                f"--export=ALL,TORCHX_ARRAY_OFFSET={offset},TORCHX_ARRAY_APP={first}",
            ]
            if array.max_parallel:  # at most K at once over all the arrays: one after another
                before = job_ids[c - 1] if len(job_ids) >= c else "PREVIOUS_ARRAY_ID"
                cmd.append(f"--dependency=afterany:{before}")
        cmds.append(cmd)
    return cmds


def array_script(req: SlurmBatchRequest) -> str:
    """The batch script every task of the sweep's arrays runs: it finds its element by its
    position and runs it as a replica runs (its env from a private file, ``srun`` with
    the element's logs); a failed element is requeued while ``max_retries`` last."""
    from shlex import join

    from torchx.schedulers._slurm.request import (
        APP_ID_MARK,
        _requeue,
        _shell_word,
        safe_name,
        sbatch_value,
    )
    from torchx.settings import ENV_TORCHX_ATTEMPT
    from torchx.version import __version__

    replicas = list(req.replicas.values())
    sbatch_args, _ = replicas[0].materialize()
    sbatch_args = [a for a in sbatch_args if not a.startswith("--job-name=")]
    log_prefix = f"{req.log_dir.replace('%', '%%')}/" if req.log_dir else ""
    output = sbatch_value("the log directory", f"{log_prefix}slurm-%A_%a.out")
    name = sbatch_value("job name", job_name(req, 0))
    lines = [
        "#!/bin/bash",
        "#",
        f"# Generated by TorchX {__version__}: a sweep of {len(replicas)} elements",
        f"# Run with: {join(req.cmd)} --array=...",
        "#",
        f"#SBATCH --job-name={name} {' '.join(sbatch_args)} --output={output} --open-mode=append",
        "set -e",
        "",
        "export PYTHONUNBUFFERED=1",
        "export SLURM_UNBUFFEREDIO=1",
        f"export TORCHX_MAX_RETRIES={int(req.max_retries)}",
        f'export {ENV_TORCHX_ATTEMPT}="${{SLURM_RESTART_COUNT:-0}}"',
        "pos=$(( ${TORCHX_ARRAY_OFFSET:-0} + SLURM_ARRAY_TASK_ID ))",
        'app="${TORCHX_ARRAY_APP:-$SLURM_ARRAY_JOB_ID}"',
        "",
        "set +e",
        'case "$pos" in',
    ]
    for p, replica in enumerate(replicas):
        env_dir = f"{req.log_dir or '.'}/.torchx-env-{APP_ID_MARK}-{p}"
        _, srun_args = replica.materialize(env_dir, job_id=_APP)
        lines.append(f"{p})")
        if replica.env:
            lines += [
                f"    envdir={_shell_word(env_dir, _APP)}",
                f"    (umask 077 && mkdir -p -- \"$envdir\" && printf '%s\\n'"
                f" {' '.join(replica.env_file(job_id=_APP))}"
                f' >"$envdir"/{_shell_word(safe_name(replica.name))})',
            ]
        lines.append("    srun " + " ".join(srun_args))
        lines.append("    exitcode=$?")
        if replica.env:
            lines.append('    rm -rf -- "$envdir"')
        lines.append("    ;;")
    logs = _shell_word(f"{req.log_dir}/" if req.log_dir else "./")
    batch_log = f'{logs}slurm-"$SLURM_ARRAY_JOB_ID"_"$SLURM_ARRAY_TASK_ID".out'
    lines += [
        '*) echo "torchx: no element at position $pos of this sweep" >&2; exit 2 ;;',
        "esac",
        "",
        'echo "job exited with code $exitcode"',
        "if [ $exitcode -eq 0 ]; then",
        "    exit 0",
        "fi",
        f"retries=$(grep -c '^torchx: requeueing: FAILED' {batch_log} 2>/dev/null)",
        'retries="${retries:-0}"',
        'if [ "$TORCHX_MAX_RETRIES" -gt "$retries" ]; then',
        *_requeue(
            "FAILED (exit code $exitcode; retry $((retries + 1)) of $TORCHX_MAX_RETRIES)",
            "FAILED",
        ),
        "fi",
        "exit $exitcode",
        "",
    ]
    return "\n".join(lines)


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
    from torchx.specs._array import ArrayStatus
    from torchx.specs._status import AppState, ReplicaStatus, RoleStatus
    from torchx.specs._timeline import Waiting

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
    failed = [str(status.elements[p].index) for p in range(size) if states[p] == AppState.FAILED]
    if failed:
        response.msg = f"{len(failed)} of {size} elements failed: {', '.join(failed)}"
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
    from torchx.specs._failure import Failure, from_exit_status, from_log_tail
    from torchx.specs._status import AppState

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
