"""Fault injection and request counting shared by the API stand-in (server.py) and the
fault proxy in front of the real API server (proxy.py): what a test asks for (``inject``)
and what it can check afterwards (``faults_met``, ``count_requests``)."""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar

from torchx_testsupport.k8s.objects import FAULTS


def is_watch(method: str, path: str) -> bool:
    del path
    return method == "WATCH"


_Injector = TypeVar("_Injector", bound="FaultInjector")


def serve_in_thread(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """An HTTP server on a free port of 127.0.0.1, serving in a daemon thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Fault:
    def __init__(self, kind: str, on: str, times: int, delay_s: float, after: int) -> None:
        self.kind, self.on, self.times, self.delay_s = kind, on, times, delay_s
        self.after = after


class FaultInjector:
    """Requests seen, faults to play on the next matching ones, and the faults met."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.requests: list[tuple[str, str]] = []
        """(method, path) of every request, ``WATCH`` for watches, in order of arrival."""
        self._faults: list[Fault] = []
        self.faults_met: list[tuple[str, str, str]] = []
        """(fault, method, path) of every fault a request met, in order."""
        self._server: ThreadingHTTPServer | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class, bound to this object."""
        raise NotImplementedError

    def start(self: _Injector) -> _Injector:
        self._server = serve_in_thread(self.handler())
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _write_kubeconfig(
        self, path: str, *, name: str, user: str, token: str, namespace: str | None = None
    ) -> str:
        """A private kubeconfig at ``path`` for this server (cluster and context ``name``,
        bearer ``token``); returns ``path``."""
        context: dict[str, str] = {"cluster": name, "user": user}
        if namespace:
            context["namespace"] = namespace
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": self.url}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": name, "context": context}],
            "current-context": name,
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(config, f)
        return path

    def inject(
        self, fault: str, *, on: str = "", times: int = 1, delay_s: float = 2.0, after: int = 0
    ) -> None:
        """The next ``times`` requests whose ``"METHOD path?query"`` (``WATCH`` for
        watches, ``LOG`` for followed logs) matches the regex ``on`` meet ``fault``, one
        of :data:`FAULTS`, once ``after`` such requests have gone through."""
        assert fault in FAULTS, fault
        with self.cond:
            self._faults.append(Fault(fault, on, times, delay_s, after))

    def take_fault(self, method: str, path: str) -> Fault | None:
        """The fault the request ``method path`` meets, if any (counted as met)."""
        with self.cond:
            for fault in self._faults:
                if fault.times > 0 and re.search(fault.on, f"{method} {path}"):
                    if fault.after > 0:
                        fault.after -= 1
                        continue
                    fault.times -= 1
                    self.faults_met.append((fault.kind, method, path))
                    return fault
            return None

    def record(self, method: str, path: str) -> None:
        with self.cond:
            self.requests.append((method, path))
            self.cond.notify_all()  # tests wait for a watch to be open

    def calls(self) -> int:
        with self.cond:
            return len(self.requests)

    def watches(self) -> int:
        """How many watch requests have come in."""
        return self.count_requests(is_watch)

    def count_requests(self, predicate: Callable[[str, str], bool]) -> int:
        """How many requests ``(method, path)`` satisfy ``predicate`` (``WATCH`` for watches)."""
        with self.cond:
            return sum(1 for method, path in self.requests if predicate(method, path))

    def wait_for_request(
        self, predicate: Callable[[str, str], bool], timeout: float = 30, after: int = 0
    ) -> bool:
        """Waits until more than ``after`` requests ``(method, path)`` satisfy ``predicate``
        (a request counts once it has come in, before it is answered)."""
        with self.cond:
            return self.cond.wait_for(lambda: self.count_requests(predicate) > after, timeout)

    def wait_for_watch(self, after: int, timeout: float = 30) -> bool:
        """Waits until more than ``after`` watch requests have come in."""
        return self.wait_for_request(is_watch, timeout, after)
