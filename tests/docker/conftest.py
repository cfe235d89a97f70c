"""Fixtures for the tests that run real containers on a real Docker daemon.

`tools/docker-up.sh` starts the daemon, builds the test image from Debian packages and
starts a local registry. Without a daemon these tests are skipped, unless
TORCHX_REQUIRE_DOCKER=1 (set by tools/test-all.sh) turns that into a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from torchx_testsupport import runner_that_cleans_up
from torchx_testsupport.docker import docker_with_test_image


@pytest.fixture(scope="session")
def docker_client() -> Any:
    return docker_with_test_image("TORCHX_REQUIRE_DOCKER")


@pytest.fixture
def runner(docker_client: Any) -> Iterator[Any]:
    """A Runner whose apps are deleted (containers removed) when the test ends."""
    with runner_that_cleans_up(lambda r, handle: r.delete(handle)) as r:
        yield r
