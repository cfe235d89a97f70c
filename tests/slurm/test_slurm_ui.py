"""``torchx ui`` in headless Chromium against real jobs on the Slurm cluster of
tools/slurm-up.sh: one that failed, one running and reporting progress, one held in the
queue (with Slurm's reason), which is cancelled from its page."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport.progress import python_reporter, reported, reporting_app
from torchx_testsupport.ui import app_id_of, browser_page, check_a_backend, torchx_ui

pytestmark = pytest.mark.timeout(420)


def test_the_pages_of_slurm_jobs(runner: Any, workdir: Path, tmp_path: Path) -> None:
    failed = reporting_app(os.getcwd(), "echo boom >&2; exit 3")
    failed.name = "crash"
    held = reporting_app(os.getcwd(), "echo never")
    held.name = "held"
    handles = {
        "failed": runner.run(failed, "slurm"),
        "running": runner.run(reporting_app(os.getcwd(), python_reporter(sys.executable)), "slurm"),
        "waiting": runner.run(held, "slurm", {"comment": "held"}),
    }
    try:
        subprocess.run(["scontrol", "hold", app_id_of(handles["waiting"])], check=True)
        runner.wait(handles["failed"], wait_interval=0.5)
        reported(runner, handles["running"])
        with torchx_ui("-s", "slurm", cwd=workdir) as ui, browser_page() as page:
            check_a_backend(
                ui,
                page,
                handles,
                cause="train[0]: exited with code 3",
                name="slurm",
                shots=tmp_path,
            )
        status = runner.status(handles["waiting"])
        assert status is not None and status.state.name == "CANCELLED"
    finally:
        for handle in handles.values():
            runner.cancel(handle)
