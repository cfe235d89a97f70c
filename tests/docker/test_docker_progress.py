"""How far an app is on local_docker: its container (the test image, no torchx in it)
reports by the line protocol; ``status`` reads the end of its log from the daemon."""

from __future__ import annotations

from typing import Any

from torchx_testsupport.docker import IMAGE
from torchx_testsupport.progress import SHELL_REPORTER, check_reported, reported

from torchx.specs import AppDef, Resource, Role


def test_a_running_container_shows_its_progress(runner: Any) -> None:
    role = Role(
        name="train",
        image=IMAGE,
        entrypoint="sh",
        args=["-c", SHELL_REPORTER],
        resource=Resource(cpu=1, gpu=0, memMB=256),
        num_replicas=2,
    )
    handle = runner.run(AppDef("reporting", [role]), "local_docker")
    status = reported(runner, handle)
    check_reported(status)
    assert status.progress.role == "train"
    runner.cancel(handle)
