"""Why a Slurm job failed: per replica, Slurm's own word (``sacct``'s State and ExitCode of
the replica's het component and of its ``srun`` step) and the end of its log files.

A het job ends as a whole: when one replica's program fails, ``srun`` stops the others,
whose steps read CANCELLED (signal 15 or 9). Those are listed as ``cancelled`` and never
blamed; the replica whose own step FAILED (or ran out of memory, or whose node failed) is.
Asked only for a FAILED app: one ``sacct`` call and a bounded read of each failed
replica's logs (64 KiB, over ssh with ``tail -c``).
"""

from __future__ import annotations

import os
import time

from torchx.schedulers._slurm import commands
from torchx.schedulers._slurm.logs import file_tail, replica_log_tail
from torchx.schedulers._slurm.parse import _exit_status, base_state, slurm_time, split_job_name
from torchx.schedulers._slurm.request import GAVE_UP
from torchx.specs.failure import Failure, from_exit_status, from_log_tail, root_cause
from torchx.specs.vocabulary import Cause

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.parse import SlurmJob
    from torchx.schedulers._slurm.records import JobRecord
    from torchx.schedulers._slurm.ssh import SshTarget

__all__ = [
    "CAUSES",
    "StepEnd",
    "blame_failed_nodes",
    "nodes_srun_saw_fail",
    "parse_steps",
    "root_failure",
]

CAUSES: dict[Cause, str | None] = {
    Cause.EXCEPTION: "the traceback at the end of the replica's log files",
    Cause.EXIT_CODE: "sacct's ExitCode of the replica's srun step",
    Cause.SIGNAL: "the signal part of sacct's ExitCode",
    Cause.OOM: "sacct's State OUT_OF_MEMORY",
    Cause.TIME_LIMIT: "sacct's State TIMEOUT, or requeues after the warning signal used up",
    Cause.PREEMPTED: "sacct's State PREEMPTED",
    Cause.NODE_FAILURE: "sacct's State NODE_FAIL, or the nodes srun saw fail",
    Cause.IMAGE_PULL: None,
    Cause.REJECTED: "srun's launch errors in the batch log",
    Cause.CANCELLED: "a replica srun stopped after another one failed, or scancel",
    Cause.UNKNOWN: "a failed component sacct says nothing more of",
}
"""How this backend names each cause: the native evidence it reads it from, or ``None``
where it never names it (tests/test_backend_wings.py keeps the table whole and true)."""

_LAUNCH_FAILED = "Task launch for StepId="

_NODE_FAILURE_NOTE = "DUE TO NODE FAILURE"
_SRUN_NODE_FAILURE = ": error: Node failure on "
_NOT_ENDED = frozenset({"", "PENDING", "RUNNING", "COMPLETING", "SUSPENDED"})
_ACCOUNTING_LAG_S = 10.0
"""How long a FAILED job's steps may still read as running in accounting (slurmdbd)."""
_COLLATERAL = frozenset({"CANCELLED", "KILLED"})
"""Step states of a replica stopped because another one failed (or the job ended)."""


class StepEnd:
    """How a replica's ``srun`` step (``<job>+<offset>.<n>``) ended, from ``sacct``."""

    __slots__ = ("end", "exit_code", "signal", "state")

    def __init__(self, state: str, exit_code: int | None, signal: int, end: float | None) -> None:
        self.state = state
        self.exit_code = exit_code
        self.signal = signal
        self.end = end


def parse_steps(text: str, components: dict[str, int]) -> dict[int, StepEnd]:
    """``{het offset: its last srun step}`` from ``sacct --parsable2
    --format=JobIDRaw,State,ExitCode,End``; ``components`` maps each component's own job id
    to its het offset (``batch``/``extern`` steps and other jobs are left out).

    Steps are matched by their raw ids (``427.0``): right after a het job ends, accounting
    may not yet know that job 427 is component 1 of het job 426.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or "JobIDRaw" not in lines[0]:
        return {}
    header = lines[0].split("|")
    steps: dict[int, tuple[int, StepEnd]] = {}
    for line in lines[1:]:
        values = dict(zip(header, line.split("|"), strict=False))
        component, dot, step = values.get("JobIDRaw", "").partition(".")
        if not dot or not step.isdigit() or component not in components:
            continue
        index = components[component]
        code, signal = _exit_status(values.get("ExitCode", ""))
        ended = StepEnd(
            base_state(values.get("State", "")), code, signal, slurm_time(values.get("End"))
        )
        if index not in steps or int(step) >= steps[index][0]:
            steps[index] = (int(step), ended)
    return {index: ended for index, (_, ended) in steps.items()}


def root_failure(
    job_id: str,
    rows: list[SlurmJob],
    record: JobRecord | None,
    via: SshTarget | None,
) -> Failure | None:
    """The first observed failure of failed job ``job_id`` (``rows``: its het components)."""
    steps = _steps({row.job_id: row.het_offset for row in rows}, via)
    names: list[tuple[str, int]] = []
    if record is not None:
        for name, count in record.roles:
            names += [(name, i) for i in range(count)]
    failures: list[tuple[Failure, SlurmJob]] = []
    for row in rows:
        if row.het_offset < len(names):
            role, replica = names[row.het_offset]
        else:
            parsed = split_job_name(row.name)
            role, replica = (parsed[1], parsed[2]) if parsed else (row.name or "job", 0)
        step = steps.get(row.het_offset)
        failure = _replica_failure(role, replica, row, step)
        if failure is not None:
            failures.append((failure, row))

    def log_dir_of(row: SlurmJob | None) -> str:
        return (record.log_dir if record is not None else "") or (row.workdir if row else "")

    batch_log = _BatchLog(job_id, log_dir_of(rows[0] if rows else None), via)
    _with_launch_errors(failures, batch_log)
    # srun stops the other replicas with SIGTERM when one fails: those are not blamed
    own = [f for f, _ in failures if not _stopped(f)]
    for failure, row in failures:
        if own and _stopped(failure):
            failure.cause = "cancelled"
            failure.message = "stopped because another replica failed"
        elif failure.cause != "cancelled":
            _with_logs(failure, job_id, log_dir_of(row), via)
    failed_nodes = nodes_srun_saw_fail(batch_log.lines())
    for failure, row in blame_failed_nodes(failures, failed_nodes):
        _with_logs(failure, job_id, log_dir_of(row), via)  # taken for a survivor: no tail yet
    if not any(set(row.hosts) & failed_nodes for _, row in failures):
        # srun named no node of the job (the batch host itself died): slurmstepd writes
        # "CANCELLED ... DUE TO NODE FAILURE" into the log of a replica whose node lived
        node_failures = [f for f, _ in failures if f.cause == "node_failure"]
        survivors = [
            f for f in node_failures if any(_NODE_FAILURE_NOTE in line for line in f.log_tail)
        ]
        if survivors and len(survivors) < len(node_failures):
            for failure in survivors:
                failure.cause = "cancelled"
                failure.message = "stopped because another replica's node failed"
    order = [name for name, _ in (record.roles if record is not None else [])]
    root = root_cause([f for f, _ in failures], order)
    if root is not None:
        _with_requeues_spent(root, batch_log)
    return root


def nodes_srun_saw_fail(batch_log: list[str]) -> set[str]:
    """The nodes ``srun`` says failed under its step, from the job's batch log
    (``srun: error: Node failure on n2``)."""
    found = set()
    for line in batch_log:
        head, marker, node = line.partition(_SRUN_NODE_FAILURE)
        if marker and head.startswith("srun") and node.strip():
            found.add(node.split()[0])
    return found


def blame_failed_nodes(
    failures: list[tuple[Failure, SlurmJob]], failed_nodes: set[str]
) -> list[tuple[Failure, SlurmJob]]:
    """Where ``srun`` named the node that failed, the replicas on it are the node failure
    and the others that a node failure ended were stopped because of it: a node set down
    (or a slurmd that came back) can still report its steps and write slurmstepd's note,
    so neither says which node it was. Returns the failures newly blamed."""
    if not any(set(row.hosts) & failed_nodes for _, row in failures):
        return []
    blamed = []
    for failure, row in failures:
        on = sorted(set(row.hosts) & failed_nodes)
        if on and (failure.cause == "node_failure" or _stopped(failure)):
            if failure.cause != "node_failure":
                blamed.append((failure, row))
            failure.cause = "node_failure"
            failure.message = f"node {on[0]} failed under the job (Slurm state {row.state})"
        elif (not on and failure.cause == "node_failure") or (
            not on and row.state == "NODE_FAIL" and _stopped(failure)
        ):
            failure.cause = "cancelled"
            failure.message = "stopped because another replica's node failed"
    return blamed


class _BatchLog:
    """The end of the job's batch log (``slurm-JOB.out``), read once when first asked."""

    def __init__(self, job_id: str, log_dir: str, via: SshTarget | None) -> None:
        self._where = (job_id, log_dir, via)
        self._lines: list[str] | None = None

    def lines(self) -> list[str]:
        if self._lines is None:
            job_id, log_dir, via = self._where
            path = os.path.join(log_dir or ".", f"slurm-{job_id}.out")
            self._lines = file_tail(path, via).splitlines()
        return self._lines


def _with_requeues_spent(root: Failure, batch_log: _BatchLog) -> None:
    """A job that stopped after the time-limit warning more often than ``max_requeues``
    allows failed of its time limit, whatever its replicas' exit."""

    spent = [line for line in batch_log.lines() if line.startswith(GAVE_UP)]
    if spent:
        root.cause = "time_limit"
        root.signal = None
        root.message = (
            "stopped at the time limit's warning with every requeue spent"
            f" {spent[-1][len(GAVE_UP) :]}: raise the `time` run option, or max_requeues"
        )


def _steps(components: dict[str, int], via: SshTarget | None) -> dict[int, StepEnd]:
    """The job's steps from accounting, which learns how they ended a moment after the
    controller does: while a step still reads as running, it is asked again (at most
    :data:`_ACCOUNTING_LAG_S`)."""

    deadline = time.monotonic() + _ACCOUNTING_LAG_S
    while True:
        try:
            code, out, _ = commands.run_once(
                [
                    "sacct",
                    "--parsable2",
                    "--format=JobIDRaw,State,ExitCode,End",
                    "-j",
                    ",".join(components),
                ],
                via=via,
            )
        except commands.SlurmCommandError:
            return {}
        steps = parse_steps(out, components) if code == 0 else {}
        ends = [step.end for step in steps.values() if step.end is not None]
        # a step missing while the others just ended is late, not absent (one that never
        # started, in a job that failed before srun, costs this wait once per status)
        missing = len(steps) < len(components) and all(time.time() - e < 60 for e in ends)
        behind = missing or any(step.state in _NOT_ENDED for step in steps.values())
        if not behind or time.monotonic() > deadline:
            return steps
        time.sleep(0.25)


def _replica_failure(
    role: str, replica: int, row: SlurmJob, step: StepEnd | None
) -> Failure | None:
    """The failure of one replica, or None when it did not fail."""
    state = row.state
    step_state = step.state if step is not None else ""
    failure = Failure(role=role, replica_id=replica, time=step.end if step else None)
    host = row.hosts[0] if row.hosts else "its node"
    if "OUT_OF_MEMORY" in (state, step_state):
        limit = f" of {row.mem_mb} MB" if row.mem_mb else ""
        failure.cause = "oom"
        failure.message = f"out of memory: over its limit{limit} (raise the role's memMB)"
    elif state in ("TIMEOUT", "DEADLINE"):
        failure.cause = "time_limit"
        failure.message = "reached the job's time limit (the `time` run option) and was stopped"
    elif state == "NODE_FAIL" and step is not None and _reported(step):
        # its step was stopped and said so: its node lived, another replica's did not
        failure.cause = "cancelled"
        failure.message = "stopped because another replica's node failed"
    elif state in ("NODE_FAIL", "BOOT_FAIL"):
        failure.cause = "node_failure"
        failure.message = f"node {host} failed under the job (Slurm state {state})"
    elif state == "PREEMPTED":
        failure.cause = "preempted"
        failure.message = "preempted by a job of higher priority"
    elif step_state == "NODE_FAIL":
        failure.cause = "node_failure"
        failure.message = f"node {host} failed under the job (Slurm state NODE_FAIL)"
    elif step is not None and step_state not in ("", "COMPLETED"):
        from_exit_status(failure, step.exit_code, step.signal)
        if failure.cause == "exit_code" and not failure.exit_code:
            # ended without an error of its own: Slurm stopped it (another replica's failure)
            failure.cause = "cancelled"
            failure.message = "stopped by Slurm after another replica failed"
    elif state == "FAILED":
        from_exit_status(failure, row.exit_code, row.signal, signal_exits=True)
    else:
        return None
    if failure.cause in ("oom", "time_limit", "node_failure", "preempted") and step is not None:
        failure.exit_code = step.exit_code or None
    return failure


def _with_launch_errors(failures: list[tuple[Failure, SlurmJob]], batch_log: _BatchLog) -> None:
    """Replicas Slurm never started: ``srun`` says why in the batch log ("Task launch for
    StepId=J.S failed on node N: REASON") and their step reads CANCELLED by SIGINT, which
    is srun's abort, not the program's end."""
    suspects = {row.job_id: f for f, row in failures if f.cause == "signal"}
    if not suspects:
        return
    for line in batch_log.lines():
        step, sep, rest = line.partition(_LAUNCH_FAILED)
        if not sep or not step.startswith("srun: error: "):
            continue
        where, _, reason = rest.partition(": ")
        failure = suspects.get(where.split(".", 1)[0])
        if failure is not None:
            host = where.partition(" failed on node ")[2]
            failure.cause = "rejected"
            failure.signal = None
            failure.message = f"Slurm could not start it on {host or 'its node'}: {reason}"


def _stopped(failure: Failure) -> bool:
    """Ended by the SIGTERM ``srun`` (or ``scancel``) sends, not by its own failure."""
    return failure.cause == "cancelled" or (
        failure.cause == "signal" and failure.signal == "SIGTERM"
    )


def _reported(step: StepEnd) -> bool:
    """Whether the step's node reported how it ended (a dead node never does)."""
    return step.state in _COLLATERAL and (step.exit_code is not None or step.signal != 0)


def _with_logs(failure: Failure, job_id: str, log_dir: str, via: SshTarget | None) -> None:
    """Adds the replica's log tail."""
    tail = replica_log_tail(job_id, log_dir, failure.role, failure.replica_id, via)
    if tail:
        from_log_tail(failure, tail)  # Slurm's own word (an OOM kill, TIMEOUT) stays
