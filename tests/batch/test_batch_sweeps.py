"""Sweeps on aws_batch, through moto's emulator (real boto3, each child's container in a
real Docker daemon): one array job whose children are the elements, their states, values
and logs, a retry of the failed ones as a new array of two, ``max_parallel`` 1 as children
that run one after another."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from torchx_testsupport.docker import IMAGE
from torchx_testsupport.sweep import ARRAY_2X2, COMPONENT, LOG_2X2, names_a_failed_element

from torchx.runner import get_runner
from torchx.specs import AppState


@pytest.fixture
def runner(batch_queue: str) -> Iterator[Any]:
    with get_runner() as r:
        yield r


def _jobs(batch: Any, queue: str, name: str) -> list[dict[str, Any]]:
    pages = batch.get_paginator("list_jobs").paginate(
        jobQueue=queue, filters=[{"name": "JOB_NAME", "values": [name]}]
    )
    return [job for page in pages for job in page["jobSummaryList"]]


def test_a_2x2_sweep_is_one_array_job_and_its_retry_another(
    runner: Any, batch: Any, batch_queue: str
) -> None:
    handle = runner.run_sweep(
        COMPONENT,
        {"image": IMAGE, "fail_batch": 16},
        {"lr": ["0.1", "0.2"], "batch": ["8", "16"]},
        "aws_batch",
        {"queue": batch_queue},
    )
    name = handle.rsplit(":", 1)[1]
    [parent] = [j for j in _jobs(batch, batch_queue, name) if ":" not in j["jobId"]]
    described = batch.describe_jobs(jobs=[parent["jobId"]])["jobs"][0]
    assert described["arrayProperties"]["size"] == 4  # one submission of four
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.FAILED
    assert status.array is not None
    assert status.array.to_json() == ARRAY_2X2
    assert status.failure is not None
    assert names_a_failed_element(status.failure.replica_id, status.failure.message)
    for i, printed in enumerate(LOG_2X2):
        lines = list(runner.log_lines(handle, "train", i))
        assert lines == [f"{printed}\n"], lines

    retried = runner.retry_failed(handle)
    again = runner.wait(retried, wait_interval=0.5)
    assert again is not None and again.array is not None
    assert [(e.index, e.values, e.state) for e in again.array.elements] == [
        (1, {"lr": "0.1", "batch": "16"}, AppState.FAILED),
        (3, {"lr": "0.2", "batch": "16"}, AppState.FAILED),
    ]


def test_max_parallel_one_asks_for_sequential_children_and_others_are_refused(
    runner: Any, batch_queue: str
) -> None:
    """AWS Batch runs an array's children one after another with a ``SEQUENTIAL``
    dependency (its documented request: the emulator does not run it, so the request is
    checked); it has no other limit, so another ``max_parallel`` is one line."""
    info = runner.dryrun_sweep(
        COMPONENT, {"image": IMAGE}, {"lr": ["0.1", "0.2"]}, "aws_batch",
        {"queue": batch_queue}, max_parallel=1,
    )  # fmt: skip
    assert info.request.submit["dependsOn"] == [{"type": "SEQUENTIAL"}]
    assert info.request.submit["arrayProperties"] == {"size": 2}
    with pytest.raises(ValueError, match="all at once or one after another") as e:
        runner.dryrun_sweep(
            COMPONENT, {"image": IMAGE}, {"lr": ["0.1", "0.2", "0.3"]}, "aws_batch",
            {"queue": batch_queue}, max_parallel=2,
        )  # fmt: skip
    assert "\n" not in str(e.value)


def test_a_sweep_of_1000_is_one_array_job(runner: Any, batch_queue: str) -> None:
    """One SubmitJob for a thousand elements (the request; the emulator would start a
    thousand containers)."""
    info = runner.dryrun_sweep(
        COMPONENT, {"image": IMAGE}, {"batch": [str(n) for n in range(1000)]}, "aws_batch",
        {"queue": batch_queue},
    )  # fmt: skip
    assert info.request.submit["arrayProperties"] == {"size": 1000}
    assert info.request.job_def["type"] == "container"
