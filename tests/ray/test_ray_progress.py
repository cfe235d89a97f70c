"""How far an app is on a real two-node Ray cluster: its replica reports by the line
protocol; ``status`` reads the end of the first replica's stderr through Ray's log API."""

from __future__ import annotations

from typing import Any

from torchx_testsupport.progress import SHELL_REPORTER, check_reported, reported

from torchx.specs import AppDef, Resource, Role


def test_a_running_app_shows_its_progress(runner: Any) -> None:
    role = Role(
        name="train",
        image="unused",
        entrypoint="sh",
        args=["-c", SHELL_REPORTER],
        num_replicas=2,
        resource=Resource(cpu=1, gpu=0, memMB=128),
    )
    handle = runner.run(AppDef("reporting", [role]), "ray")
    try:
        status = reported(runner, handle)
        check_reported(status)
        assert status.progress.role == "train"
    finally:
        runner.cancel(handle)
