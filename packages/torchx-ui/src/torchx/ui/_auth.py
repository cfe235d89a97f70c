"""Who may use the dashboard: it shows a user's apps and can cancel them, so neither a
page of another site or of another port of this host, nor another user of the machine,
may use it.

- Every ``/api/`` request carries the token in its ``Authorization: token ...`` header.
  The pages (fixed files that hold no data) are served to anyone; their script takes the
  token from the address ``torchx ui`` printed (``?token=`` or ``#token=``), keeps it in
  the origin's own storage (``localStorage`` is per port, where cookies are not) and
  drops it from the address bar. No cookie is set: a browser would send one to every
  port of the host, to any other local server.
- A browser never sends that header across origins without asking first (a CORS
  preflight, which this server never grants), so a page elsewhere cannot use the API;
  a request that changes something must also come from the dashboard's own origin
  (``Origin``/``Sec-Fetch-Site``), and a dashboard on a loopback address answers only
  to a loopback ``Host`` (a rebound DNS name is refused).
"""

from __future__ import annotations

import secrets

from starlette.requests import Request
from starlette.responses import JSONResponse

from torchx.ui._hosts import is_loopback_host

TYPE_CHECKING = False
if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["TokenGate", "new_token"]

_SAFE_METHODS = frozenset({"GET", "HEAD"})

_HEADERS = [
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
]
"""Sent with every answer: no page embeds the dashboard (a hidden frame would make a
click cancel an app), and no address leaks to another site."""


def new_token() -> str:
    """A fresh random token (192 bits)."""
    return secrets.token_hex(24)


class TokenGate:
    """ASGI middleware: 401 without a token, 403 with a wrong one or from another
    origin, 421 for a ``Host`` the dashboard is not (see the module docstring)."""

    def __init__(self, app: ASGIApp, token: str, port: int, loopback: bool = True) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(Request(scope))
        if refusal is not None:
            status_code, message = refusal
            answer = JSONResponse({"error": message}, status_code=status_code)
            await answer(scope, receive, self._with_headers(send))
            return
        await self.app(scope, receive, self._with_headers(send))

    def _refusal(self, request: Request) -> tuple[int, str] | None:
        host = request.headers.get("host", "")
        if self.loopback and not (
            is_loopback_host(host) and host.rsplit(":", 1)[-1] == str(self.port)
        ):
            return 421, f"this dashboard is not {host!r}: open the URL `torchx ui` printed"
        if not request.url.path.startswith("/api/"):
            return None  # a page: fixed files, no data
        header = request.headers.get("authorization", "")
        given = header[len("token ") :].strip() if header.lower().startswith("token ") else ""
        if not given:
            return 401, "no token: open the URL `torchx ui` printed (it carries the token)"
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            return 403, "wrong token (a new one each start): open the URL `torchx ui` printed"
        if request.method not in _SAFE_METHODS:
            origin = request.headers.get("origin")
            site = request.headers.get("sec-fetch-site")
            if (origin is not None and origin != f"http://{host}") or site not in (
                None,
                "same-origin",
                "none",
            ):
                return 403, f"a request from {origin or site} may not change anything here"
        return None

    @staticmethod
    def _with_headers(send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        return sending
