"""Why a requeued job's last attempt ended, for ``status`` while it waits to start again.

Slurm keeps one accounting record per attempt (``sacct --duplicates``); the ended ones
say PREEMPTED, NODE_FAIL or TIMEOUT. A requeue the batch script asked for itself
(``REQUEUED``) names its reason on a ``torchx: requeued:`` line of the job's batch log.
"""

from __future__ import annotations

import os

from torchx.schedulers._slurm import commands, parse
from torchx.schedulers._slurm.logtail import file_tail

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.ssh import SshTarget
    from torchx.specs.attempts import Attempt

__all__ = ["attempt_history", "last_interruption"]

_REQUEUED_LINE = "torchx: requeued: "
_RUNNING = frozenset({"PENDING", "RUNNING", "REQUEUED_HOLD", "REQUEUE_FED", "REQUEUE_HOLD"})


def last_interruption(
    job_id: str, log_dir: str | None, via: SshTarget | None = None, restarts: int = 0
) -> str | None:
    """How the job's latest ended attempt ended (``NODE_FAIL``, ``PREEMPTED``,
    ``TIMEOUT``, ``FAILED (exit code 3; ...)``, ``REQUEUED``), None if unknown.

    slurmdbd records an ended attempt a moment after the requeue: until it has, a job
    that requeued itself each of its ``restarts`` times is known from its batch log."""
    try:
        code, out, _ = commands.run_once(
            [
                "sacct",
                "--duplicates",
                "--allocations",
                "--parsable2",
                "--format=JobID,State",
                "-j",
                job_id,
            ],
            via=via,
        )
    except commands.SlurmCommandError:
        code, out = 1, ""
    ended = [
        row.state
        for row in parse.parse_sacct_text(out, leader=job_id)
        if row.het_offset == 0 and row.state and row.state not in _RUNNING
    ] if code == 0 else []  # fmt: skip
    if not ended:  # not in the accounting yet: only a requeue of its own is known
        reasons = _requeue_reasons(job_id, log_dir, via)
        return reasons[-1] if restarts and len(reasons) >= restarts else None
    if ended[-1] == "REQUEUED":
        reasons = _requeue_reasons(job_id, log_dir, via)
        return reasons[-1] if reasons else "REQUEUED (scontrol requeue)"
    return ended[-1]


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
    from torchx.specs.api import AppState
    from torchx.specs.attempts import Attempt

    try:
        code, out, _ = commands.run_once(
            [
                "sacct",
                "--duplicates",
                "--allocations",
                "--parsable2",
                "--format=JobID,State,Start,End,ExitCode",
                "-j",
                job_id,
            ],
            via=via,
        )
    except commands.SlurmCommandError:
        return []
    if code != 0:
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
