"""What the Docker-backed tests share: the test image, the local registry, label queries."""

from __future__ import annotations

import os
from typing import Any

IMAGE = os.environ.get("TORCHX_TEST_IMAGE", "torchx-test/python:3.11-r2")
"""Built by tools/docker-up.sh from Debian packages (Python 3.11, bash, busybox)."""

REGISTRY = f"localhost:{os.environ.get('TORCHX_TEST_REGISTRY_PORT', '5000')}"
"""The local registry started by tools/docker-up.sh."""

LABEL_APP_ID = "torchx.pytorch.org/app-id"


def docker_with_test_image(require_env: str) -> Any:
    """A docker SDK client of a daemon that holds `IMAGE`; skips (or fails, see
    `backend_missing`) the test where there is none."""
    from torchx_testsupport import backend_missing

    from torchx.workspace.docker_workspace import connect_docker

    try:
        client = connect_docker()
        client.api.inspect_image(IMAGE)
    except Exception as e:
        backend_missing(
            require_env,
            f"no Docker daemon with the test image {IMAGE} ({e}); run tools/docker-up.sh",
        )
    return client


def app_containers(client: Any, app_id: str) -> list[dict[str, Any]]:
    """Summaries of every container (running or not) of ``app_id``."""
    found: list[dict[str, Any]] = client.api.containers(
        all=True, filters={"label": [f"{LABEL_APP_ID}={app_id}"]}
    )
    return found


def all_torchx_containers(client: Any) -> set[str]:
    """Ids of every container that carries a torchx app id."""
    return {c["Id"] for c in client.api.containers(all=True, filters={"label": [LABEL_APP_ID]})}
