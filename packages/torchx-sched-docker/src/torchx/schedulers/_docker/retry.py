"""The Docker daemon's API with its outages ridden out.

A daemon restart (with ``live-restore`` the containers keep running), a dropped
connection or a "daemon is restarting" answer fails a call for a few seconds; the
scheduler's calls go through :class:`RetryingApi`, which retries them under the rules of
:mod:`torchx.util.support.retry` and, when the daemon stays away, raises the one-line
"cannot reach the Docker daemon" error. Calls that change something and may already
have reached the daemon (creating a container, starting it) are retried only when the
connection was refused, i.e. when nothing was sent.
"""

from __future__ import annotations

from http.client import HTTPException
from typing import Any

from torchx.util.support.retry import retry_call
from torchx.workspace.docker_workspace import DockerUnavailableError, daemon_unavailable

__all__ = ["RetryingApi", "transient"]

_REPEATABLE = frozenset(
    {
        "ping", "images", "inspect_image", "networks", "containers", "inspect_container",
        "volumes", "events", "logs", "stop", "kill", "remove_container", "remove_volume",
        "wait", "version", "info",
    }
)  # fmt: skip
"""Calls that read, or whose second sending does what the first would have done."""

_RETRY_STATUSES = frozenset({502, 503, 504})


def _not_sent(e: BaseException) -> bool:
    if isinstance(e, (ConnectionRefusedError, FileNotFoundError)):
        return True  # nothing listens on the socket (yet): the request never left
    return "connection refused" in str(e).lower() or "no such file" in str(e).lower()


def transient(e: BaseException, *, repeatable: bool = True) -> bool:
    """Whether ``e`` is the daemon being away for a moment rather than an answer."""
    cause = e.__cause__ if isinstance(e, DockerUnavailableError) else e
    if cause is None:
        return False
    status = getattr(cause, "status_code", None)
    if status is None:  # the SDK's APIError keeps it on its response
        status = getattr(getattr(cause, "response", None), "status_code", None)
    if isinstance(status, int):
        return repeatable and status in _RETRY_STATUSES
    if isinstance(cause, (OSError, HTTPException)):  # requests' errors are OSErrors too
        return repeatable or _not_sent(cause)
    return False


class RetryingApi:
    """Wraps the daemon's low-level API (this package's client or the SDK's ``APIClient``):
    same methods, outages retried, lost connections reported as one line."""

    def __init__(self, api: Any, address: str) -> None:
        self._api = api
        self._address = address

    @property
    def unwrapped(self) -> Any:
        return self._api

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._api, name)
        if not callable(attr):
            return attr
        repeatable = name in _REPEATABLE

        def call(*args: Any, **kwargs: Any) -> Any:
            return retry_call(
                lambda: self._once(attr, args, kwargs),
                service=f"the Docker daemon at {self._address}",
                is_transient=lambda e: transient(e, repeatable=repeatable),
            )

        return call

    def _once(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return fn(*args, **kwargs)
        except (OSError, HTTPException) as e:
            raise daemon_unavailable(e, self._address) from e
