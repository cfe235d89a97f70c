"""``torchx ui`` in headless Chromium against real jobs on AWS Batch as moto emulates it
(their containers in the Docker daemon): one that failed, one that reported progress and
ended (moto copies a log to CloudWatch Logs only once its container ended, so a running
job's reports are not readable here: tests/batch/test_batch_progress.py), and one running,
which is cancelled from its page. moto starts a job as soon as it is submitted, so none
waits in its queue."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import wait_until
from torchx_testsupport.docker import IMAGE
from torchx_testsupport.progress import SHELL_REPORTS, reporting_app
from torchx_testsupport.ui import browser_page, check_a_backend, torchx_ui

from torchx.runner import get_runner
from torchx.specs import AppState

pytestmark = pytest.mark.timeout(420)


@pytest.fixture
def runner(batch_queue: str) -> Iterator[Any]:
    with get_runner() as r:
        yield r


def test_the_pages_of_batch_jobs(
    runner: Any, batch_queue: str, workdir: Path, tmp_path: Path
) -> None:
    cfg = {"queue": batch_queue}
    failed = reporting_app(IMAGE, "echo boom >&2; exit 3", memMB=128)
    failed.name = "crash"
    busy = reporting_app(IMAGE, "sleep 600", memMB=128)
    busy.name = "busy"
    handles = {
        "failed": runner.run(failed, "aws_batch", cfg=cfg),
        "reported": runner.run(
            reporting_app(IMAGE, SHELL_REPORTS, memMB=128), "aws_batch", cfg=cfg
        ),
        "busy": runner.run(busy, "aws_batch", cfg=cfg),
    }
    try:
        runner.wait(handles["failed"], wait_interval=0.5)
        runner.wait(handles["reported"], wait_interval=0.5)
        wait_until(
            lambda: runner.status(handles["busy"]).state == AppState.RUNNING,
            "the busy job to run", timeout=120, interval=0.5,
        )  # fmt: skip
        # -cfg's queue goes to the scheduler that has the option (local_cwd has none)
        shown = ("-s", "aws_batch,local_cwd", "-cfg", f"queue={batch_queue}")
        with torchx_ui(*shown, cwd=workdir) as ui, browser_page() as page:
            check_a_backend(
                ui, page, handles, cause="train[0]: exited with code 3", name="aws_batch",
                shots=tmp_path, cancel="busy",
            )  # fmt: skip
        status = runner.status(handles["busy"])
        assert status is not None and status.state == AppState.CANCELLED
    finally:
        for handle in handles.values():
            runner.cancel(handle)
