"""Fixtures for the tests that run real jobs on a real Ray cluster.

`tools/ray-up.sh` starts a head node and a worker node on this machine (dashboard on
127.0.0.1:8265, or TORCHX_TEST_RAY_PORT). Without one these tests are skipped, unless
TORCHX_REQUIRE_RAY=1 (set by tools/test-all.sh) turns that into a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import backend_missing, http_ok, runner_that_cleans_up
from torchx_testsupport.ray import DASHBOARD


@pytest.fixture(scope="session")
def ray_cluster() -> str:
    if not http_ok(f"{DASHBOARD}/api/version", timeout=5):
        backend_missing(
            "TORCHX_REQUIRE_RAY", f"no Ray dashboard at {DASHBOARD}; run tools/ray-up.sh"
        )
    return DASHBOARD


@pytest.fixture(autouse=True)
def _dashboard_env(ray_cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RAY_API_SERVER_ADDRESS", "RAY_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAY_ADDRESS", ray_cluster)


@pytest.fixture
def runner(ray_cluster: str, workdir: Path) -> Iterator[Any]:
    """A Runner whose jobs still running when the test ends are cancelled."""
    with runner_that_cleans_up(lambda r, handle: r.cancel(handle)) as r:
        yield r
