"""The token every request must carry: the dashboard can cancel apps, so a page on
another site, or another user of the machine, must not be able to use it.

The token comes in the URL ``torchx ui`` prints (``?token=...``, as Jupyter does); the
first page opened with it sets a cookie (HTTP-only, same-site strict, named after the
port, since cookies are shared by every port of a host), which carries it from then on.
Scripts may send ``Authorization: token ...`` instead.
"""

from __future__ import annotations

import secrets

from starlette.requests import Request
from starlette.responses import PlainTextResponse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["TokenGate", "cookie_name", "new_token"]


def new_token() -> str:
    """A fresh random token (192 bits)."""
    return secrets.token_hex(24)


def cookie_name(port: int) -> str:
    return f"torchx_ui_{port}"


class TokenGate:
    """ASGI middleware: 401 without a token, 403 with a wrong one, else the app."""

    def __init__(self, app: ASGIApp, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.cookie = cookie_name(port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        in_query = request.query_params.get("token")
        header = request.headers.get("authorization", "")
        given = (
            in_query
            or (header[len("token ") :] if header.lower().startswith("token ") else None)
            or request.cookies.get(self.cookie)
        )
        if not given:
            answer = PlainTextResponse(
                "401 Unauthorized: open the URL `torchx ui` printed (it carries the token)\n",
                status_code=401,
            )
            await answer(scope, receive, send)
            return
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            answer = PlainTextResponse(
                "403 Forbidden: wrong token; open the URL `torchx ui` printed\n", status_code=403
            )
            await answer(scope, receive, send)
            return
        if in_query is None or request.cookies.get(self.cookie) == self.token:
            await self.app(scope, receive, send)
            return
        cookie = f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message["headers"], (b"set-cookie", cookie)]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)
