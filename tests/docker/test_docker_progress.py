"""How far an app is on local_docker: its container (the test image, no torchx in it)
reports by the line protocol; ``status`` reads the end of its log from the daemon."""

from __future__ import annotations

from typing import Any

from torchx_testsupport.docker import IMAGE
from torchx_testsupport.progress import SHELL_REPORTER, check_reported, reported, reporting_app


def test_a_running_container_shows_its_progress(runner: Any) -> None:
    handle = runner.run(reporting_app(IMAGE, SHELL_REPORTER, replicas=2), "local_docker")
    status = reported(runner, handle)
    check_reported(status)
    assert status.progress.role == "train"
    runner.cancel(handle)
