"""What the Docker-backed tests share: the test image, the local registry, label queries."""

from __future__ import annotations

import os
from typing import Any

from torchx_testsupport.fronts import TcpFront

IMAGE = os.environ.get("TORCHX_TEST_IMAGE", "torchx-test/python:3.11-r2")
"""Built by tools/docker-up.sh from Debian packages (Python 3.11, bash, busybox)."""

REGISTRY = f"localhost:{os.environ.get('TORCHX_TEST_REGISTRY_PORT', '5000')}"
"""The local registry started by tools/docker-up.sh."""

LABEL_APP_ID = "torchx.pytorch.org/app-id"


def docker_with_test_image(require_env: str) -> Any:
    """A docker SDK client of a daemon that holds `IMAGE`; skips (or fails, see
    `backend_missing`) the test where there is none."""
    from torchx.workspace.docker_workspace import connect_docker
    from torchx_testsupport import backend_missing

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


class LogStreamCutter(TcpFront):
    """A TCP front of the Docker daemon's socket (``DOCKER_HOST=tcp://...``) that cuts
    followed log streams: the i-th ``GET .../logs?...follow=1`` has its connection closed
    after ``cuts[i]`` bytes of the answer (inside whatever frame or line falls there),
    as a daemon restart or a lost connection would. Every other request passes through.
    """

    def __init__(self, cuts: list[int], socket_path: str = "/var/run/docker.sock") -> None:
        import threading

        self._cuts = list(cuts)
        self._path = socket_path
        self._lock = threading.Lock()
        self.cut = 0  # streams cut so far
        self.all_cut = threading.Event()
        super().__init__()
        self.address = f"tcp://127.0.0.1:{self.port}"

    def _serve(self, client: Any) -> None:
        import contextlib
        import re
        import socket
        import threading

        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(self._path)
        first = client.recv(1 << 16)
        budget = None
        if re.match(rb"GET /[^ ]*/logs\?[^ ]*follow=1", first):
            with self._lock:
                budget = self._cuts.pop(0) if self._cuts else None
        upstream.sendall(first)

        def ahead() -> None:
            try:
                while data := client.recv(1 << 16):
                    upstream.sendall(data)
            except OSError:
                pass

        threading.Thread(target=ahead, daemon=True).start()
        sent = 0
        try:
            while data := upstream.recv(1 << 16):
                if budget is not None and sent + len(data) >= budget:
                    client.sendall(data[: budget - sent])
                    with self._lock:
                        self.cut += 1
                        if not self._cuts:
                            self.all_cut.set()
                    break
                client.sendall(data)
                sent += len(data)
        except OSError:
            pass
        finally:
            for sock in (client, upstream):  # shutdown wakes the other thread's recv
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
