"""Slurm's word on a failed replica, read from sacct (the causes the test cluster cannot
produce are checked here on sacct's text; tests/slurm/test_slurm_failure.py runs the
others on a real cluster)."""

from __future__ import annotations

import pytest

from torchx.schedulers._slurm.failure import (
    _replica_failure,
    blame_failed_nodes,
    nodes_srun_saw_fail,
    parse_steps,
)
from torchx.schedulers._slurm.parse import SlurmJob
from torchx.specs.failure import Failure

SACCT = """JobIDRaw|State|ExitCode|End
7|OUT_OF_MEMORY|0:125|2026-11-29T04:25:43
7.batch|OUT_OF_MEMORY|0:125|2026-11-29T04:25:43
7.0|OUT_OF_MEMORY|0:125|2026-11-29T04:25:43
8|FAILED|0:0|2026-11-29T04:25:44
8.0|CANCELLED|0:15|2026-11-29T04:25:44
8.extern|COMPLETED|0:0|2026-11-29T04:25:44
9.0|FAILED|3:0|Unknown
"""


HET = {"7": 0, "8": 1}
"""Het job 7: component 0 is job 7, component 1 job 8 (steps are matched by raw ids)."""


def _row(offset: int, state: str, mem_mb: int | None = None) -> SlurmJob:
    row = SlurmJob(f"7+{offset}")
    row.het_leader, row.het_offset, row.state, row.mem_mb = "7", offset, state, mem_mb
    row.hosts = ["n3"]
    return row


def test_steps_of_one_job_by_het_offset() -> None:
    steps = parse_steps(SACCT, HET)
    assert sorted(steps) == [0, 1]
    assert (steps[0].state, steps[0].exit_code, steps[0].signal) == ("OUT_OF_MEMORY", 0, 125)
    assert steps[1].state == "CANCELLED" and steps[1].signal == 15
    assert steps[1].end is not None and steps[1].end - steps[0].end == 1
    assert parse_steps(SACCT, {"9": 0})[0].end is None  # "Unknown"
    assert parse_steps("not sacct output", HET) == {}


@pytest.mark.parametrize(
    ("state", "step_state", "cause", "words"),
    [
        ("OUT_OF_MEMORY", "OUT_OF_MEMORY", "oom", "limit of 512 MB"),
        ("FAILED", "OUT_OF_MEMORY", "oom", "raise the role's memMB"),
        ("TIMEOUT", "CANCELLED", "time_limit", "time limit"),
        ("PREEMPTED", "CANCELLED", "preempted", "preempted"),
        ("NODE_FAIL", "CANCELLED", "node_failure", "node n3 failed"),
    ],
)
def test_slurms_own_causes(state: str, step_state: str, cause: str, words: str) -> None:
    steps = parse_steps(SACCT.replace("OUT_OF_MEMORY|0:125", f"{step_state}|"), HET)
    failure = _replica_failure("train", 0, _row(0, state, mem_mb=512), steps[0])
    assert failure is not None and failure.cause == cause
    assert words in failure.message


def test_a_survivor_of_another_replicas_node_failure_is_not_blamed() -> None:
    steps = parse_steps(SACCT, HET)  # 8.0 reported CANCELLED by SIGTERM: its node lived
    failure = _replica_failure("train", 1, _row(1, "NODE_FAIL"), steps[1])
    assert failure is not None and failure.cause == "cancelled"


def test_a_completed_replica_did_not_fail() -> None:
    steps = parse_steps(SACCT.replace("8.0|CANCELLED|0:15", "8.0|COMPLETED|0:0"), HET)
    assert _replica_failure("train", 1, _row(1, "COMPLETED"), steps[1]) is None


def test_a_step_that_ended_without_an_error_of_its_own_was_stopped() -> None:
    steps = parse_steps(SACCT.replace("8.0|CANCELLED|0:15", "8.0|FAILED|0:0"), HET)
    failure = _replica_failure("train", 1, _row(1, "FAILED"), steps[1])
    assert failure is not None and failure.cause == "cancelled"
    node = parse_steps(SACCT.replace("8.0|CANCELLED|0:15", "8.0|NODE_FAIL|"), HET)
    failure = _replica_failure("train", 1, _row(1, "FAILED"), node[1])
    assert failure is not None and failure.cause == "node_failure"


BATCH_LOG = """srun: error: Node failure on n2
srun: Job step aborted: Waiting up to 7 seconds for job step to finish.
slurmstepd-n1: error: *** JOB 7 ON n1 CANCELLED AT 2026-11-29T22:58:03 DUE TO NODE FAILURE ***
srun: error: n1: task 0: Terminated
echo said: srun: error: Node failure on n9 (a program's own words)
"""


def test_the_node_srun_names_is_the_failure_and_the_other_replica_its_survivor() -> None:
    """A node set down can still report its step and write slurmstepd's note, like the
    node that lived: only srun's line in the batch log says which node failed."""
    assert nodes_srun_saw_fail(BATCH_LOG.splitlines()) == {"n2"}
    rows = [_row(0, "NODE_FAIL"), _row(1, "NODE_FAIL")]
    rows[0].hosts, rows[1].hosts = ["n1"], ["n2"]
    lived = Failure(role="train", replica_id=0, cause="node_failure", message="node n1 failed")
    downed = Failure(role="train", replica_id=1, cause="cancelled", message="stopped")
    failures = [(lived, rows[0]), (downed, rows[1])]
    assert blame_failed_nodes(failures, {"n2"}) == [(downed, rows[1])]
    assert (downed.cause, downed.message) == (
        "node_failure",
        "node n2 failed under the job (Slurm state NODE_FAIL)",
    )
    assert (lived.cause, lived.message) == (
        "cancelled",
        "stopped because another replica's node failed",
    )


def test_without_srun_naming_a_node_of_the_job_nothing_changes() -> None:
    row = _row(0, "NODE_FAIL")
    failure = Failure(role="train", replica_id=0, cause="node_failure", message="node n3 failed")
    assert blame_failed_nodes([(failure, row)], set()) == []
    assert blame_failed_nodes([(failure, row)], {"n9"}) == []
    assert failure.cause == "node_failure"
    own = Failure(role="train", replica_id=0, cause="exit_code", exit_code=3, message="exit 3")
    assert blame_failed_nodes([(own, row)], {"n3"}) == []  # it failed on its own first
    assert own.cause == "exit_code"
