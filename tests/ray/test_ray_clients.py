"""What real clients of upstream's Ray scheduler pass, on the real two-node cluster:
codeflare-sdk's own ``JobSubmissionClient`` (the OpenShift/RHOAI way), whose cluster sits
behind an OAuth proxy and is named by its route's host alone; a ``file://`` workspace;
torchrec's ``-cfg working_dir=``."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchx.runner import get_runner
from torchx.schedulers.ray_scheduler import RayScheduler
from torchx.specs import AppDef, AppState, Role

TORCHX = str(Path(sys.executable).parent / "torchx")
SDK_TOKEN = "sha256~oauth-token-of-the-sdk"


class _OAuthProxy(http.server.ThreadingHTTPServer):
    """The cluster's route as OpenShift serves it: every request needs the bearer token,
    then goes on to the dashboard."""

    daemon_threads = True

    def __init__(self, port: int, dashboard: str) -> None:
        super().__init__(("127.0.0.1", port), _Forward)
        self.dashboard = dashboard
        self.refused = 0
        self.passed = 0


class _Forward(http.server.BaseHTTPRequestHandler):
    server: _OAuthProxy

    def log_message(self, *args: Any) -> None:
        pass

    def _forward(self) -> None:
        if self.headers.get("Authorization") != f"Bearer {SDK_TOKEN}":
            self.server.refused += 1
            body = b'{"detail": "no valid OAuth token"}'
            self.send_response(401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.server.passed += 1
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() == "content-type"}
        request = urllib.request.Request(
            self.server.dashboard + self.path, data=data, method=self.command, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                status, payload = answer.status, answer.read()
        except urllib.error.HTTPError as e:
            status, payload = e.code, e.read()
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward


def _free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture
def route(ray_cluster: str) -> Iterator[_OAuthProxy]:
    """The proxy on port 80 of 127.0.0.1, so that ``localhost`` alone names it."""
    if not _free(80):
        pytest.fail("port 80 of 127.0.0.1 is taken; the route's stand-in needs it")
    proxy = _OAuthProxy(80, ray_cluster)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    yield proxy
    proxy.shutdown()
    proxy.server_close()


class SdkClient:
    """What codeflare-sdk hands the scheduler: a ``JobSubmissionClient`` made with the
    route's host, the user's OAuth token as a header and its TLS setting (Ray's client
    keeps them in these attributes)."""

    def __init__(self, address: str, headers: dict[str, str], verify: bool) -> None:
        self._address = address
        self._headers = headers
        self._verify = verify
        self._cookies: dict[str, str] = {}

    def get_address(self) -> str:
        return self._address


def _app(script: str) -> AppDef:
    role = Role("sh", image="unused", entrypoint="sh", args=["-c", script])
    return AppDef("sdk", [role])


def test_a_client_passed_by_an_sdk_carries_its_token_to_a_host_only_route(
    route: _OAuthProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    sdk = SdkClient("localhost", {"Authorization": f"Bearer {SDK_TOKEN}"}, verify=False)
    scheduler = RayScheduler("torchx", ray_client=sdk)
    with get_runner() as runner:
        runner._scheduler_instances["ray"] = scheduler  # as the SDK wires its scheduler
        handle = runner.run(_app("echo through the route"), "ray", {})
        assert "/localhost:80-" in handle  # the route's port is in the app id
        status = runner.wait(handle, wait_interval=0.5)
        assert status is not None and status.state == AppState.SUCCEEDED, status
        lines = list(runner.log_lines(handle, "sh", 0))
    assert lines == ["through the route\n"]
    assert route.passed > 0 and route.refused == 0
    # without the SDK's client, the route refuses us: the token was what let us in
    plain = subprocess.run(
        [TORCHX, "status", handle], capture_output=True, text=True, timeout=120, check=False
    )
    assert plain.returncode == 1
    assert "refused GET" in plain.stderr and "401" in plain.stderr
    assert route.refused > 0


def test_a_file_url_workspace_is_the_directory(workdir: Path) -> None:
    (workdir / "train.py").write_text("print('file url workspace arrived')\n")
    proc = subprocess.run(
        [TORCHX, "run", "-s", "ray", "--wait", "--log", "--workspace", f"file://{workdir}",
         "utils.python", "--script", "train.py"],
        capture_output=True, text=True, timeout=300, cwd="/", check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "python/0 file url workspace arrived" in proc.stderr


def test_torchrecs_working_dir_option_is_the_workspace(workdir: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("print('working dir arrived')\n")
    proc = subprocess.run(
        [TORCHX, "run", "-s", "ray", "--wait", "--log", "-cfg", f"working_dir={project}",
         "utils.python", "--script", "train.py"],
        capture_output=True, text=True, timeout=300, cwd=workdir, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "python/0 working dir arrived" in proc.stderr
    deprecation = [line for line in proc.stderr.splitlines() if "run option working_dir" in line]
    assert len(deprecation) == 1 and "old name of the workspace" in deprecation[0]


@pytest.fixture
def tls_route(ray_cluster: str, tmp_path: Path) -> Iterator[tuple[_OAuthProxy, int]]:
    """The route over https, as codeflare-sdk's OAuth route on OpenShift serves it: a
    self-signed certificate for ``localhost``, the bearer token required, on a free port."""
    import ssl

    key, cert = tmp_path / "route.key", tmp_path / "route.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    proxy = _OAuthProxy(0, ray_cluster)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    proxy.socket = context.wrap_socket(proxy.socket, server_side=True)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    yield proxy, proxy.server_address[1]
    proxy.shutdown()
    proxy.server_close()


def test_a_host_alone_beside_an_sdk_client_over_tls_goes_to_the_clients_origin(
    tls_route: tuple[_OAuthProxy, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """codeflare-sdk passes ``dashboard_address`` as the route's bare host and a client of
    ``https://HOST:PORT`` (its token, ``verify=False``): every request goes to the
    client's origin with its token and TLS setting, not to ``http://HOST:80``."""
    route, port = tls_route
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    sdk = SdkClient(
        f"https://localhost:{port}", {"Authorization": f"Bearer {SDK_TOKEN}"}, verify=False
    )
    scheduler = RayScheduler("torchx", ray_client=sdk)
    with get_runner() as runner:
        runner._scheduler_instances["ray"] = scheduler
        handle = runner.run(_app("echo over tls"), "ray", {"dashboard_address": "localhost"})
        assert f"/https:localhost:{port}-" in handle, handle
        status = runner.wait(handle, wait_interval=0.5)
        assert status is not None and status.state == AppState.SUCCEEDED, status
        assert list(runner.log_lines(handle, "sh", 0)) == ["over tls\n"]
        listed = [a.app_handle for a in runner.list("ray", {"dashboard_address": "localhost"})]
        assert handle in listed
    assert route.passed > 0 and route.refused == 0
