"""How far an app is on a real two-node Ray cluster: its replica reports by the line
protocol; ``status`` reads the end of the first replica's stderr through Ray's log API."""

from __future__ import annotations

from typing import Any

from torchx_testsupport.progress import SHELL_REPORTER, check_reported, reported, reporting_app


def test_a_running_app_shows_its_progress(runner: Any) -> None:
    handle = runner.run(reporting_app("unused", SHELL_REPORTER, replicas=2, memMB=128), "ray")
    try:
        status = reported(runner, handle)
        check_reported(status)
        assert status.progress.role == "train"
    finally:
        runner.cancel(handle)
