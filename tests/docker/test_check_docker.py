"""``torchx check -s local_docker`` against the real Docker daemon, up and unreachable."""

from __future__ import annotations

import socket
from typing import Any

from torchx_testsupport import torchx_check
from torchx_testsupport.docker import IMAGE


def test_daemon_up(docker_client: Any) -> None:
    checks = torchx_check("-s", "local_docker")["local_docker"]["checks"]
    status, found, _ = checks["daemon"]
    assert status == "ready"
    assert found.startswith(f"Docker {docker_client.version()['Version']} (API ")
    # the default ghcr.io image is neither here nor pullable here: said, with the fix
    image_status, image_found, fix = checks["default image"]
    assert image_status == "not ready" and "is not on this host" in image_found
    assert "--image" in fix


def test_an_image_on_the_host_is_ready(docker_client: Any) -> None:
    from torchx.schedulers._docker.readiness import _Daemon, image_check

    check = image_check(_Daemon(), IMAGE)
    assert (check.status, check.found) == ("ready", f"{IMAGE} is on this host")


def test_daemon_unreachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = torchx_check("-s", "local_docker", env={"DOCKER_HOST": f"tcp://127.0.0.1:{port}"})
    entry = result["local_docker"]
    assert entry["status"] == "not ready" and entry["exit"] == 1
    _, found, fix = entry["checks"]["daemon"]
    assert found == f"cannot reach the Docker daemon at tcp://127.0.0.1:{port} (connection refused)"
    assert fix.startswith("start it")
    assert list(entry["checks"]) == ["daemon"]
