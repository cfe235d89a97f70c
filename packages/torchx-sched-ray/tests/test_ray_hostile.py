"""The Ray client and request as hostile input meets them: a redirect must not carry the
bearer token to another origin, credentials in the dashboard address are never printed,
a dashboard's error text cannot rewrite the terminal, and a requirements file must be a
small regular file. Real HTTP servers on 127.0.0.1 play the dashboard and its proxies."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from torchx.schedulers._ray.client import RayApiError, RayJobsClient
from torchx.schedulers._ray.request import read_requirements
from torchx.schedulers.ray_scheduler import create_scheduler
from torchx.specs import AppDef, Role

TOKEN = "s3cr3t-ray-token"


class Server:
    """An HTTP server on 127.0.0.1 answering with ``answer(handler)``; records the
    Authorization header of every request."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler], None]) -> None:
        seen = self.auth = []  # type: list[str | None]

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.headers.get("Authorization"))
                answer(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    made: list[Server] = []
    yield made
    for s in made:
        s.httpd.shutdown()


def _json(handler: BaseHTTPRequestHandler, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _redirect(handler: BaseHTTPRequestHandler, location: str) -> None:
    handler.send_response(302)
    handler.send_header("Location", location)
    handler.send_header("Content-Length", "0")
    handler.end_headers()


def _version(handler: BaseHTTPRequestHandler) -> None:
    _json(handler, 200, {"ray_version": "2.49.0", "version": "4"})


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)


def test_the_token_does_not_follow_a_redirect_to_another_origin(servers: list[Server]) -> None:
    elsewhere = Server(_version)
    servers.append(elsewhere)
    # the same port on another host name is another origin, as is another port
    proxy = Server(lambda h: _redirect(h, f"http://localhost:{elsewhere.port}{h.path}"))
    servers.append(proxy)
    RayJobsClient(f"http://127.0.0.1:{proxy.port}").version()
    assert proxy.auth == [f"Bearer {TOKEN}"]
    assert elsewhere.auth == [None]


def test_the_token_follows_a_redirect_on_the_same_origin(servers: list[Server]) -> None:
    def answer(h: BaseHTTPRequestHandler) -> None:
        if h.path == "/api/version":
            _redirect(h, "/api/v2/version")
        else:
            _version(h)

    same = Server(answer)
    servers.append(same)
    RayJobsClient(f"http://127.0.0.1:{same.port}").version()
    assert same.auth == [f"Bearer {TOKEN}"] * 2


def test_a_token_over_plain_http_to_another_host_is_warned_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        for _ in range(3):  # no request is sent: the warning comes with the client
            RayJobsClient("http://ray-head.example.invalid:8265")
        RayJobsClient("http://127.0.0.1:8265")
        RayJobsClient("https://ray-head.example.invalid:8265")
    warned = [r.getMessage() for r in caplog.records if "plain http" in r.getMessage()]
    assert len(warned) == 1 and "ray-head.example.invalid" in warned[0]
    assert TOKEN not in caplog.text


def test_credentials_in_the_dashboard_address_are_never_printed() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = RayJobsClient(f"http://alice:hunter2@127.0.0.1:{port}/?access_token=tok123")
    with pytest.raises(RayApiError) as caught:
        client.version()
    message = str(caught.value)
    assert f"http://***@127.0.0.1:{port}" in message
    for secret in ("alice", "hunter2", "tok123"):
        assert secret not in message


def test_a_dashboards_error_text_cannot_rewrite_the_terminal(servers: list[Server]) -> None:
    evil = Server(lambda h: _json(h, 500, {"detail": "boom\x1b]0;pwned\x07\x1b[2J done"}))
    servers.append(evil)
    with pytest.raises(RayApiError) as caught:
        RayJobsClient(f"http://127.0.0.1:{evil.port}").version()
    message = str(caught.value)
    assert "\x1b" not in message and "\x07" not in message
    assert "boom\\x1b]0;pwned\\x07" in message


def _dryrun(requirements: str) -> Any:
    role = Role(name="r", image="unused", entrypoint="echo", args=["hi"])
    return create_scheduler("t").submit_dryrun(
        AppDef(name="a", roles=[role]),
        {"requirements": requirements, "dashboard_address": "http://127.0.0.1:1"},
    )


@pytest.mark.timeout(20)
def test_a_requirements_file_must_be_a_small_regular_file(tmp_path: Path) -> None:
    """Read at submit (a dry run only records the path, even of a FIFO it must not open)."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "huge.txt").write_bytes(b"numpy\n" * 400_000)
    os.symlink("/dev/zero", tmp_path / "zero-link")
    for path, why in (
        ("/dev/zero", "is not a regular file"),
        (str(tmp_path / "zero-link"), "is not a regular file"),
        (str(tmp_path / "fifo"), "is not a regular file"),
        (str(tmp_path), "is not a regular file"),
        (str(tmp_path / "huge.txt"), "is larger than 1 MiB"),
    ):
        assert _dryrun(path).request.requirements == path
        with pytest.raises(ValueError, match=why) as caught:
            read_requirements(path)
        assert path in str(caught.value) and "\n" not in str(caught.value)
    # submit reads it before contacting the cluster (here nothing answers at port 1)
    info = _dryrun(str(tmp_path / "fifo"))
    with pytest.raises(ValueError, match="is not a regular file"):
        create_scheduler("t").schedule(info)
