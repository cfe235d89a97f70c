"""A Batch job's attempts from DescribeJobs' ``attempts`` (the shape AWS documents; moto
runs one attempt only, so a retried job is read from that shape here)."""

from __future__ import annotations

from torchx.schedulers._aws_batch.status import attempt_history
from torchx.specs import AppState

FAILED_THEN_RECLAIMED = [
    {
        "container": {"exitCode": 3, "logStreamName": "jd/default/a"},
        "startedAt": 1_700_000_000_000,
        "stoppedAt": 1_700_000_005_500,
        "statusReason": "Essential container in task exited",
    },
    {
        "container": {"logStreamName": "jd/default/b"},
        "startedAt": 1_700_000_010_000,
        "stoppedAt": 1_700_000_020_000,
        "statusReason": "Host EC2 (instance i-0abc) terminated.",
    },
]


def test_ended_attempts_and_the_current_one() -> None:
    history = attempt_history(FAILED_THEN_RECLAIMED, terminal=False)
    assert [a.to_json() for a in history] == [
        {"attempt": 0, "start": 1_700_000_000.0, "end": 1_700_000_005.5, "state": "FAILED",
         "cause": "exit_code", "exit_code": 3, "signal": None},
        {"attempt": 1, "start": 1_700_000_010.0, "end": 1_700_000_020.0, "state": "FAILED",
         "cause": "preempted", "exit_code": None, "signal": None},
        {"attempt": 2, "start": None, "end": None, "state": "UNKNOWN", "cause": None,
         "exit_code": None, "signal": None},
    ]  # fmt: skip


def test_a_finished_job_ends_with_its_last_attempt() -> None:
    done = [*FAILED_THEN_RECLAIMED, {"container": {"exitCode": 0}, "startedAt": 1, "stoppedAt": 2}]
    history = attempt_history(done, terminal=True)
    assert [(a.attempt, a.state) for a in history] == [
        (0, AppState.FAILED),
        (1, AppState.FAILED),
        (2, AppState.SUCCEEDED),
    ]
    assert attempt_history([], terminal=False) == []
