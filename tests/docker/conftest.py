"""Fixtures for the tests that run real containers on a real Docker daemon.

`tools/docker-up.sh` starts the daemon, builds the test image from Debian packages and
starts a local registry. Without a daemon these tests are skipped, unless
TORCHX_REQUIRE_DOCKER=1 (set by tools/test-all.sh) turns that into a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from torchx_docker_testsupport import IMAGE


@pytest.fixture(scope="session")
def docker_client() -> Any:
    from torchx.workspace.docker_workspace import connect_docker

    try:
        client = connect_docker()
        client.api.inspect_image(IMAGE)
    except Exception as e:
        message = f"no Docker daemon with the test image {IMAGE} ({e}); run tools/docker-up.sh"
        if os.environ.get("TORCHX_REQUIRE_DOCKER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return client


@pytest.fixture
def runner(docker_client: Any) -> Iterator[Any]:
    """A Runner whose apps are deleted (containers removed) when the test ends."""
    from torchx.runner import get_runner

    with get_runner() as r:
        handles: list[str] = []
        original = r.schedule

        def schedule(dryrun_info: Any) -> str:
            handle = original(dryrun_info)
            handles.append(handle)
            return handle

        r.schedule = schedule  # type: ignore[method-assign]
        r.test_handles = handles  # type: ignore[attr-defined]
        yield r
        for handle in handles:
            r.delete(handle)
