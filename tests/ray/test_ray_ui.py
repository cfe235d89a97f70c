"""``torchx ui`` in headless Chromium against real jobs on the two-node Ray cluster of
tools/ray-up.sh: one that failed, one running and reporting progress, one asking for
more CPUs than the cluster has (its driver runs, its placement group waits: the page
says it waits, and for what), which is cancelled from its page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport.progress import SHELL_REPORTER, reported, reporting_app
from torchx_testsupport.ui import browser_page, check_a_backend, torchx_ui

from torchx.specs import Resource

pytestmark = pytest.mark.timeout(420)


def test_the_pages_of_ray_jobs(runner: Any, workdir: Path, tmp_path: Path) -> None:
    failed = reporting_app("unused", "echo boom >&2; exit 3", memMB=128)
    failed.name = "crash"
    huge = reporting_app("unused", "true", memMB=128)
    huge.name = "huge"
    huge.roles[0].resource = Resource(cpu=64, gpu=0, memMB=128)
    handles = {
        "failed": runner.run(failed, "ray"),
        "running": runner.run(reporting_app("unused", SHELL_REPORTER, memMB=128), "ray"),
        "waiting": runner.run(huge, "ray"),
    }
    runner.wait(handles["failed"], wait_interval=0.5)
    reported(runner, handles["running"])
    with torchx_ui("-s", "ray", cwd=workdir) as ui, browser_page() as page:
        check_a_backend(
            ui, page, handles, cause="train[0]: exited with code 3", name="ray", shots=tmp_path
        )
    status = runner.status(handles["waiting"])
    assert status is not None and status.state.name == "CANCELLED"
