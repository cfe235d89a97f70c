"""The stand-in's HTTP side: request parsing, watches and followed logs on the wire, faults
that cut connections."""

from __future__ import annotations

import datetime as dt
import json
import socket
import struct
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from torchx_testsupport.k8s.objects import (
    TOKEN,
    ApiError,
    matches,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx_testsupport.k8s.injector import Fault
    from torchx_testsupport.k8s.server import FakeKubernetes


def _flag(query: dict[str, str], name: str) -> bool:
    """A boolean query parameter as the API server reads it (clients send ``true`` or, in
    older versions of the Python client, ``True``)."""
    return query.get(name, "").lower() in ("true", "1")


def _field_name(selector: str) -> str | None:
    """The name a ``metadata.name=NAME`` field selector asks for (the only one served)."""
    for term in filter(None, (t.strip() for t in selector.split(","))):
        key, _, value = term.partition("=")
        if key != "metadata.name":
            raise ApiError(400, "BadRequest", f"field label not supported: {key}")
        return value.lstrip("=")
    return None


class _WatchRequest:
    """A ``?watch=true`` list: the events after ``resourceVersion`` for matching objects."""

    def __init__(
        self,
        kind: str,
        ns: str,
        terms: list[tuple[str, str, str | None]],
        name: str | None,
        query: dict[str, str],
    ) -> None:
        self.kind, self.ns, self.terms, self.name = kind, ns, terms, name
        version = query.get("resourceVersion")
        self.since = int(version) if version not in (None, "", "0") else None
        self.deadline = time.monotonic() + int(query.get("timeoutSeconds") or 1800)

    def wanted(self, kind: str, ns: str, obj: dict[str, Any]) -> bool:
        if kind != self.kind or ns != self.ns:
            return False
        if self.name is not None and obj["metadata"].get("name") != self.name:
            return False
        return matches(obj, self.terms)


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            base.pop(key, None)
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


class _LogRequest:
    def __init__(self, ns: str, pod: str, obj: dict[str, Any], query: dict[str, str]) -> None:
        self.ns, self.pod, self.query = ns, pod, query
        names = [c["name"] for c in obj["spec"]["containers"]]
        container = query.get("container")
        if container is None and len(names) > 1:
            raise ApiError(
                400,
                "BadRequest",
                f"a container name must be specified for pod {pod}, choose"
                f" one of: [{' '.join(names)}]",
            )
        self.container = container or names[0]
        if self.container not in names:
            raise ApiError(
                400, "BadRequest", f"container {self.container} is not valid for pod {pod}"
            )


def _stamp(at: float) -> bytes:
    moment = dt.datetime.fromtimestamp(at, dt.timezone.utc)
    return (moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z ").encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeKubernetes
    fault: Fault | None = None

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        del format, args

    def _serve(self, method: str) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        watch = method == "GET" and _flag(query, "watch")
        self.fake.record("WATCH" if watch else method, split.path)
        followed = split.path.endswith("/log") and _flag(query, "follow")
        kind = "WATCH" if watch else "LOG" if followed else method
        self.fault = self.fake.take_fault(kind, self.path)
        if self.fault is not None and self._meet(self.fault):
            return
        try:
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                raise ApiError(401, "Unauthorized", "Unauthorized")
            body = json.loads(raw) if raw else None
            result = self.fake.handle(method, split.path, query, body)
        except ApiError as e:
            if not e.reason:  # not a Status: the server's bare text answer
                self._send(e.code, f"{e.message}\n".encode(), "text/plain; charset=utf-8")
                return
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": e.message,
                "reason": e.reason,
                "code": e.code,
            }
            self._send(e.code, json.dumps(status).encode())
            return
        if isinstance(result, _LogRequest):
            self._send_log(result)
            return
        if isinstance(result, _WatchRequest):
            self._send_watch(result)
            return
        self._send(201 if method == "POST" else 200, json.dumps(result).encode())

    def _meet(self, fault: Fault) -> bool:
        """Plays ``fault`` before the request is served; whether that answered it."""
        if fault.kind == "slow":
            time.sleep(fault.delay_s)
            return False
        if fault.kind == "reset":
            self._cut()
            return True
        if fault.kind in ("429", "500", "503"):
            code = int(fault.kind)
            reason = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}
            status = {
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": f"injected fault: {code}", "reason": reason[code], "code": code,
            }  # fmt: skip
            data = json.dumps(status).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if code == 429:
                self.send_header("Retry-After", "1")
            self.end_headers()
            self.wfile.write(data)
            return True
        return False  # drop and gone act on the stream (_send_log, _send_watch)

    def _cut(self) -> None:
        """Closes the connection at once (a reset), whatever was or was not sent."""
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def _send(self, code: int, data: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_log(self, request: _LogRequest) -> None:
        fake, q = self.fake, request.query
        key = (request.ns, request.pod, request.container)
        stamps = _flag(q, "timestamps")
        since = time.time() - int(q["sinceSeconds"]) if "sinceSeconds" in q else None

        def render(entries: list[tuple[float, bytes]]) -> bytes:
            out = b""
            for at, text in entries:
                if since is None or at >= since:
                    out += (_stamp(at) + text) if stamps else text
            return out

        if not _flag(q, "follow"):
            with fake.cond:
                data = render(fake.logs.get(key, []))
            self._send(200, data, "text/plain")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        try:
            while True:
                with fake.cond:
                    entries = fake.logs.get(key, [])
                    while len(entries) == sent and key not in fake.log_done:
                        fake.cond.wait(1)
                        entries = fake.logs.get(key, [])
                    fresh, sent = entries[sent:], len(entries)
                    finished = key in fake.log_done and sent == len(fake.logs.get(key, []))
                fault = self.fault.kind if fresh and self.fault is not None else None
                for i, entry in enumerate(fresh):  # one chunk per write of the program
                    data = render([entry])
                    if fault == "split" and i == len(fresh) - 1:
                        data = data[: len(data) // 2]  # the connection is lost inside a line
                    if data:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                if fault in ("drop", "split"):
                    self._cut()  # a connection lost mid-stream
                    return
                if fault == "end":
                    break  # ended in good order while the container runs (a restart)
                if finished:
                    break
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send_watch(self, request: _WatchRequest) -> None:
        """Streams the events as JSON lines (one chunk each) until the request times out."""
        fake = self.fake
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if self.fault is not None and self.fault.kind == "gone":
            expired = {
                "type": "ERROR",
                "object": {
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": f"too old resource version: {request.since} ({fake.revision})",
                    "reason": "Expired", "code": 410,
                },
            }  # fmt: skip
            line = json.dumps(expired).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(line), line))
            return
        if self.fault is not None and self.fault.kind == "drop":
            self.wfile.flush()
            self._cut()  # the watch is dropped before any event
            return
        with fake.cond:
            if request.since is None:  # no version: the current objects, as ADDED
                since = fake.revision
                backlog = [
                    ("ADDED", obj)
                    for (ns, _), obj in sorted(fake.store[request.kind].items())
                    if request.wanted(request.kind, ns, obj)
                ]
            else:
                since, backlog = request.since, []
        try:
            while True:
                with fake.cond:
                    fresh = [
                        (kind_, obj)
                        for rev, kind, ns, kind_, obj in fake.events
                        if rev > since and request.wanted(kind, ns, obj)
                    ]
                    since = fake.revision
                    left = request.deadline - time.monotonic()
                    if not backlog and not fresh and left > 0:
                        fake.cond.wait(min(left, 1.0))
                        continue
                with fake.cond:
                    fake.delivered += [*backlog, *fresh]
                for kind_, obj in [*backlog, *fresh]:
                    line = json.dumps({"type": kind_, "object": obj}).encode() + b"\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                backlog = []
                if left <= 0:
                    break
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")
