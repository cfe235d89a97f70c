"""How far an app is on the real Kubernetes cluster: its pods (the test image, no torchx
in it) report by the line protocol; ``status`` reads the end of the first replica's pod
log (one call, only when status asks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from torchx_testsupport.k8s.running import batch, sh
from torchx_testsupport.progress import SHELL_REPORTER, check_reported, reported

from torchx.runner import get_runner

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def runner(namespace: str) -> Iterator[Any]:
    with get_runner() as r:
        yield r


@pytest.mark.parametrize("job_type", ["batch", "jobset"])
def test_a_running_app_shows_its_progress(runner: Any, namespace: str, job_type: str) -> None:
    app = sh(SHELL_REPORTER, replicas=2)
    handle = runner.run(app, "kubernetes", cfg=batch(namespace, job_type=job_type))
    try:
        status = reported(runner, handle)
        check_reported(status)
        assert status.progress.role == "sh"
    finally:
        runner.cancel(handle)
