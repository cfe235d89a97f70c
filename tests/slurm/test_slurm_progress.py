"""How far a job is, on the real Slurm cluster: a job reports steps 1..3 of 4 and a loss;
while it runs, ``status`` shows step 3 of 4, 0.75 and the loss, read from the end of its
first replica's log (``torchx.progress`` in the job's Python, or the line protocol from a
shell in a container image without torchx)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

from torchx_testsupport.progress import (
    SHELL_REPORTER,
    check_reported,
    python_reporter,
    reported,
    reporting_app,
)


def test_a_running_job_shows_its_progress(runner: Any) -> None:
    """Two replicas, both reporting: status reads replica 0's log."""
    handle = runner.run(
        reporting_app(os.getcwd(), python_reporter(sys.executable), replicas=2), "slurm"
    )
    status = reported(runner, handle)
    check_reported(status)
    assert status.progress.role == "train"
    runner.cancel(handle)


def test_a_job_in_an_image_without_torchx_reports_by_the_protocol(
    runner: Any, tmp_path: Path
) -> None:
    from torchx_testsupport.docker import IMAGE, docker_with_test_image

    docker_with_test_image("TORCHX_REQUIRE_DOCKER")
    cfg = {"container": "oci", "container_cache": str(tmp_path / "oci-cache")}
    handle = runner.run(reporting_app(IMAGE, SHELL_REPORTER), "slurm", cfg)
    check_reported(reported(runner, handle))
    runner.cancel(handle)


def test_the_last_report_is_there_after_the_job_ended(runner: Any, workdir: Path) -> None:
    """The default throttle (5 s) holds steps 2..4 back; the exit writes step 4."""
    code = "import torchx.progress as p\nfor i in range(1, 5):\n    p.report(i, total=4)\n"
    script = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    handle = runner.run(reporting_app(os.getcwd(), script), "slurm")
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state.name == "SUCCEEDED", status
    final = runner.status(handle)
    assert final.progress is not None and (final.progress.step, final.progress.fraction) == (4, 1.0)
    assert final.progress.eta_s is None  # it ended
