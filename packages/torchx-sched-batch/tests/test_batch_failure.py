"""Batch's own word on a failed node job (AWS-shaped DescribeJobs answers): the causes
moto does not emulate. tests/batch/test_batch_failure.py runs the others through moto."""

from __future__ import annotations

from typing import Any

import pytest

from torchx.schedulers._aws_batch.failure import node_failure


def _job(status_reason: str, container: dict[str, Any]) -> dict[str, Any]:
    return {
        "jobId": "j#1",
        "status": "FAILED",
        "statusReason": status_reason,
        "stoppedAt": 1795926343123,
        "container": {"resourceRequirements": [{"type": "MEMORY", "value": "2048"}]},
        "attempts": [{"container": container}],
    }


@pytest.mark.parametrize(
    ("reason", "container", "cause", "words"),
    [
        (
            "Essential container in task exited",
            {"exitCode": 137, "reason": "OutOfMemoryError: Container killed due to memory usage"},
            "oom",
            "limit 2048 MiB",
        ),
        (
            "Task failed to start",
            {"reason": "CannotPullContainerError: pull image manifest has been retried 5 times"},
            "image_pull",
            "CannotPullContainerError",
        ),
        ("Host EC2 (instance i-0abc) terminated.", {}, "node_failure", "i-0abc"),
        ("Essential container in task exited", {"exitCode": 143}, "signal", "SIGTERM"),
        ("Essential container in task exited", {"exitCode": 2}, "exit_code", "code 2"),
    ],
)
def test_batch_reasons_name_the_cause(
    reason: str, container: dict[str, Any], cause: str, words: str
) -> None:
    failure = node_failure("trainer", 1, _job(reason, container))
    assert (failure.role, failure.replica_id, failure.cause) == ("trainer", 1, cause)
    assert words in failure.message
    assert failure.time == pytest.approx(1795926343.123)


def test_a_runnable_job_says_it_waits_for_compute_and_why() -> None:
    from torchx.schedulers._aws_batch.status import timing
    from torchx.specs import AppState

    job = {
        "status": "RUNNABLE",
        "statusReason": "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT - no instance type fits",
        "createdAt": 1795926000000,
    }
    phases, waiting = timing(job, AppState.PENDING)
    assert waiting is not None and waiting.phase == "queued" and waiting.since == 1795926000.0
    assert waiting.reason.startswith("RUNNABLE: it waits for compute resources")
    assert "no instance type fits" in waiting.reason
    assert [p.phase for p in phases] == ["submitted", "queued"]
    done, none = timing(
        {**job, "status": "SUCCEEDED", "startedAt": 1795926030000, "stoppedAt": 1795926040000},
        AppState.SUCCEEDED,
    )
    assert none is None
    assert [(p.phase, p.start, p.end) for p in done] == [
        ("submitted", 1795926000.0, 1795926000.0),
        ("queued", 1795926000.0, 1795926030.0),
        ("running", 1795926030.0, 1795926040.0),
        ("finished", 1795926040.0, 1795926040.0),
    ]
