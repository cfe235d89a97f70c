"""TCP fronts of real servers that tests put between a client and the server, to cut or
hold its connections as a bad network or a slow server would, without a sleep."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any


class TcpFront:
    """Listens on a free port of 127.0.0.1 and hands each accepted connection to
    ``_serve`` in a thread of its own."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: Any) -> None:
        raise NotImplementedError


class HeldConnections(TcpFront):
    """Holds every connection until ``release`` is set, then pipes it to ``upstream``
    (host, port): a server that answers only when the test lets it."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.release = threading.Event()
        self._upstream = upstream
        super().__init__()

    def close(self) -> None:
        self.release.set()
        super().close()

    def _serve(self, client: Any) -> None:
        self.release.wait(120)
        upstream = socket.create_connection(self._upstream)

        def pipe(src: Any, dst: Any) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for sock in (src, dst):
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)

        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
        pipe(client, upstream)
