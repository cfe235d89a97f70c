"""``torchx ui`` in headless Chromium against real apps on the Kubernetes cluster of
tools/k8s-up.sh: one that failed, one running and reporting progress (the line protocol
from the test image's shell), one the scheduler cannot place (its reason shown), which
is cancelled from its page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport.k8s.running import batch, sh
from torchx_testsupport.progress import SHELL_REPORTER, reported
from torchx_testsupport.ui import browser_page, check_a_backend, torchx_ui

from torchx.runner import get_runner
from torchx.specs import Resource

pytestmark = pytest.mark.timeout(420)


@pytest.fixture
def runner(namespace: str) -> Iterator[Any]:
    with get_runner() as r:
        yield r


def test_the_pages_of_kubernetes_apps(
    runner: Any, namespace: str, workdir: Path, tmp_path: Path
) -> None:
    cfg = batch(namespace)
    failed = sh("echo boom >&2; exit 3")
    failed.name = "crash"
    unplaceable = sh("true", resource=Resource(cpu=64, gpu=0, memMB=2048))
    unplaceable.name = "huge"
    handles = {
        "failed": runner.run(failed, "kubernetes", cfg=cfg),
        "running": runner.run(sh(SHELL_REPORTER), "kubernetes", cfg=cfg),
        "waiting": runner.run(unplaceable, "kubernetes", cfg=cfg),
    }
    try:
        runner.wait(handles["failed"], wait_interval=0.5)
        reported(runner, handles["running"])
        (workdir / ".torchxconfig").write_text(f"[kubernetes]\nnamespace = {namespace}\n")
        with torchx_ui("-s", "kubernetes", cwd=workdir) as ui, browser_page() as page:
            check_a_backend(
                ui, page, handles, cause="sh[0]: exited with code 3", name="kubernetes",
                shots=tmp_path,
            )  # fmt: skip
        status = runner.status(handles["waiting"])
        assert status is not None and status.state.name == "CANCELLED"
    finally:
        for handle in handles.values():
            runner.cancel(handle)
