"""Fixtures for the aws_batch tests against moto's AWS emulator.

`tools/moto-up.sh` starts moto_server on localhost; moto runs each Batch job as real
containers in the Docker daemon of `tools/docker-up.sh`, from the local test image. The
tests reach it through real boto3 clients configured by the environment, as a user's shell
would be (endpoint, region, fake keys). Without the emulator these tests are skipped, unless
TORCHX_REQUIRE_MOTO=1 (set by tools/test-all.sh) turns that into a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from torchx_testsupport import backend_missing
from torchx_testsupport.batch import AWS_ENV, create_queue, emulator_answers
from torchx_testsupport.docker import docker_with_test_image


@pytest.fixture(scope="session")
def batch_queue() -> Iterator[str]:
    """A job queue in the emulator for this test session; jobs still running at the end
    are terminated (moto then removes their containers)."""
    if not emulator_answers():
        backend_missing("TORCHX_REQUIRE_MOTO", "no AWS emulator answers; run tools/moto-up.sh")
    docker_with_test_image("TORCHX_REQUIRE_MOTO")
    from torchx.schedulers.ids import random_id

    name = f"torchx-test-{random_id(8)}"
    with mock.patch.dict(os.environ, AWS_ENV):
        import boto3

        create_queue(name)
        yield name
        batch = boto3.session.Session().client("batch")
        try:
            summaries = batch.list_jobs(jobQueue=name)["jobSummaryList"]
        except batch.exceptions.ClientException:
            return  # the emulator restarted (tests/batch/test_faults_batch.py): all forgotten
        for summary in summaries:
            if summary["status"] not in ("SUCCEEDED", "FAILED"):
                batch.terminate_job(jobId=summary["jobId"], reason="test session over")


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The shell of a user pointed at the emulator (no profile, no instance metadata)."""
    for key in ("AWS_PROFILE", "AWS_REGION", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(key, raising=False)
    for key, value in AWS_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return dict(AWS_ENV)


@pytest.fixture
def batch(batch_queue: str) -> Any:
    """A plain boto3 Batch client of the emulator (skipped, as the queue is, when none
    answers), to look behind torchx's back."""
    import boto3

    return boto3.session.Session().client("batch")
