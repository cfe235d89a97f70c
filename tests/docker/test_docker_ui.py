"""``torchx ui`` in headless Chromium against real containers on the Docker daemon of
tools/docker-up.sh: an app that failed and one running and reporting progress (the line
protocol from the test image's shell), which is cancelled from its page. A container
waits only for a sweep's permit, inside a running app, so there is no queued app here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport.docker import IMAGE
from torchx_testsupport.progress import SHELL_REPORTER, reported, reporting_app
from torchx_testsupport.ui import browser_page, check_a_backend, torchx_ui

pytestmark = pytest.mark.timeout(420)


def test_the_pages_of_docker_apps(runner: Any, workdir: Path, tmp_path: Path) -> None:
    failed = reporting_app(IMAGE, "echo boom >&2; exit 3", memMB=128)
    failed.name = "crash"
    handles = {
        "failed": runner.run(failed, "local_docker"),
        "running": runner.run(reporting_app(IMAGE, SHELL_REPORTER, memMB=128), "local_docker"),
    }
    runner.wait(handles["failed"], wait_interval=0.5)
    reported(runner, handles["running"])
    with torchx_ui("-s", "local_docker", cwd=workdir) as ui, browser_page() as page:
        check_a_backend(
            ui, page, handles, cause="train[0]: exited with code 3", name="local_docker",
            shots=tmp_path, cancel="running",
        )  # fmt: skip
    status = runner.status(handles["running"])
    assert status is not None and status.state.name == "CANCELLED"
