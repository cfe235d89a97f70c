"""How far a job is on aws_batch, through moto's emulator (real boto3, the job's container
in a real Docker daemon, its log in the emulator's CloudWatch Logs): the container (the test
image, no torchx in it) reports by the line protocol.

moto copies a container's log to CloudWatch Logs only once the container has ended (AWS
Batch's awslogs driver streams it while the job runs), so here the reports are read after
the job ended: the same read, of the same stream, that ``status`` makes while it runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from torchx_testsupport import submitted_as_status_says
from torchx_testsupport.docker import IMAGE
from torchx_testsupport.progress import SHELL_REPORTS, check_reported, reporting_app

from torchx.runner import get_runner


@pytest.fixture
def runner(batch_queue: str) -> Iterator[Any]:
    with get_runner() as r:
        yield r


def test_a_job_shows_its_last_report(runner: Any, batch_queue: str) -> None:
    app = reporting_app(IMAGE, SHELL_REPORTS, memMB=128)
    handle = runner.run(app, "aws_batch", cfg={"queue": batch_queue})
    ended = runner.wait(handle, wait_interval=0.5)
    assert ended is not None and ended.state.name == "SUCCEEDED", ended
    status = runner.status(handle)
    check_reported(status)
    assert status.progress.role == "train" and status.progress.eta_s is None
    # the listing says when it was submitted (what `torchx ui` shows as its age)
    (row,) = [r for r in runner.list("aws_batch", cfg={"queue": batch_queue})
              if r.app_handle == handle]  # fmt: skip
    submitted_as_status_says(row, status)
