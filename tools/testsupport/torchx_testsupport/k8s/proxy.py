"""A fault proxy in front of the real API server of tools/k8s-up.sh: every request is passed
on to it as it came (bearer token included) and its answer streamed back, except where a
test injected a fault (:class:`FaultInjector`): an error answer (429 with ``Retry-After``,
500, 503), a reset connection, a slow answer; on a watch, the connection dropped before any
event or a ``410 Expired`` ERROR event; on a followed log, once its first bytes went out,
the connection dropped (``drop``), dropped inside a line (``split``) or the stream ended in
good order while the container runs (``end``), as an API server or kubelet restart does.

The proxy speaks plain HTTP on 127.0.0.1 (its kubeconfig says ``http://``) and TLS to the
API server, checked against the cluster's CA.
"""

from __future__ import annotations

import http.client
import json
import ssl
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from torchx_testsupport.k8s.cluster import STATE
from torchx_testsupport.k8s.http import _flag, _Handler
from torchx_testsupport.k8s.injector import FaultInjector

_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host"}
)


class KubernetesFaultProxy(FaultInjector):
    """The proxy; ``start()`` it, point a kubeconfig at it (``write_kubeconfig``)."""

    def __init__(self, upstream: str = "", token_file: str = "") -> None:
        super().__init__()
        self.upstream = urlsplit(upstream or "https://127.0.0.1:6443")
        self.token = open(token_file or STATE / "admin.token").read().strip()  # noqa: SIM115
        self.tls = ssl.create_default_context(cafile=str(STATE / "pki" / "ca.crt"))

    def connection(self) -> http.client.HTTPSConnection:
        host, port = self.upstream.hostname or "127.0.0.1", self.upstream.port or 443
        return http.client.HTTPSConnection(host, port, context=self.tls, timeout=600)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_ProxyHandler,), {"owner": self})

    def write_kubeconfig(self, path: str, *, namespace: str = "default") -> str:
        return self._write_kubeconfig(
            path, name="proxy", user="admin", token=self.token, namespace=namespace
        )


class _ProxyHandler(_Handler):
    """Passes a request on; the stand-in's handler plays the faults (``_meet``, ``_cut``)."""

    owner: KubernetesFaultProxy

    def _serve(self, method: str) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        watch = method == "GET" and _flag(query, "watch")
        followed = split.path.endswith("/log") and _flag(query, "follow")
        self.owner.record("WATCH" if watch else method, split.path)
        kind = "WATCH" if watch else "LOG" if followed else method
        self.fault = self.owner.take_fault(kind, self.path)
        if self.fault is not None and self._meet(self.fault):
            return
        if watch and self.fault is not None and self.fault.kind in ("gone", "drop"):
            self._fail_watch(self.fault.kind)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Accept-Encoding"] = "identity"
        upstream = self.owner.connection()
        try:
            upstream.request(method, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            self._relay(answer, stream=watch or followed)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            upstream.close()

    def _relay(self, answer: http.client.HTTPResponse, *, stream: bool) -> None:
        self.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                self.send_header(key, value)
        if not stream:
            data = answer.read()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        fault = self.fault.kind if self.fault is not None else ""
        while True:
            chunk = answer.read1(65536)
            if not chunk:
                break
            if b'"reason":"Expired"' in chunk:  # the server's own 410 on a watch: note it
                self.owner.record("EXPIRED", urlsplit(self.path).path)
            if fault == "split" and b"\n" in chunk:
                # up to the middle of the last whole line, then the connection goes
                cut = chunk.rstrip(b"\n").rfind(b"\n") + 1
                cut += max(1, (len(chunk) - cut) // 2)
                self.wfile.write(b"%x\r\n%s\r\n" % (cut, chunk[:cut]))
                self._cut()
                return
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
            if fault == "drop":
                self._cut()
                return
            if fault == "end":
                break
        self.wfile.write(b"0\r\n\r\n")

    def _fail_watch(self, kind: str) -> None:
        """A watch dropped before any event, or ended at once with 410 Expired."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if kind == "drop":
            self.wfile.flush()
            self._cut()
            return
        expired = {
            "type": "ERROR",
            "object": {
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "too old resource version (injected)", "reason": "Expired",
                "code": 410,
            },
        }  # fmt: skip
        line = json.dumps(expired).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(line), line))
