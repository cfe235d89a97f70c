"""One-line errors that name the MLflow tracking URI, instead of MLflow's retries and tracebacks."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from urllib.parse import urlsplit

from torchx.tracker.mlflow import _sdk as sdk
from torchx.util.support.secrets import mask_url

__all__ = [
    "MLflowTrackerError",
    "MLflowUnreachableError",
    "check_reachable",
    "display_uri",
    "mlflow_errors",
    "prepare_local_store",
]

_HINT = "fix tracking_uri in [tracker:mlflow] of .torchxconfig or TORCHX_TRACKER_MLFLOW_CONFIG"
_MAX_MESSAGE = 300


class MLflowTrackerError(RuntimeError):
    """The MLflow store cannot be used (unreachable, refused the request, bad URI)."""


class MLflowUnreachableError(MLflowTrackerError):
    """The tracking server did not answer (down, restarting, network): a write is kept
    for later rather than lost, and a read may be tried again."""


_UNREACHABLE_MARKS = ("max retries exceeded", "connection refused", "connection aborted")


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 3] + "..."


def display_uri(uri: str) -> str:
    """``uri`` with its user-info (``user:pass@``, or a bare ``TOKEN@``) and secret query
    values (``?access_token=``) masked: error messages must not leak secrets."""

    return mask_url(uri)


def check_reachable(tracking_uri: str, timeout: float = 5.0) -> None:
    """Fails fast, naming the URI, when an ``http(s)`` tracking server does not accept connections.

    MLflow's own client would retry a refused connection for minutes before failing.
    """
    import socket

    parts = urlsplit(tracking_uri)
    if parts.scheme not in ("http", "https"):
        return
    try:
        host, port = parts.hostname, parts.port
    except ValueError as e:
        raise MLflowTrackerError(
            f"malformed MLflow tracking URI {display_uri(tracking_uri)!r}: {e}"
        ) from None
    if not host:
        raise MLflowTrackerError(
            f"MLflow tracking URI {display_uri(tracking_uri)!r} names no host; {_HINT}"
        )
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        raise MLflowUnreachableError(
            f"cannot reach the MLflow tracking server at {display_uri(tracking_uri)}"
            f" ({reason}); start it or {_HINT}"
        ) from None


def prepare_local_store(tracking_uri: str) -> None:
    """Creates the directory of a ``sqlite:///`` store (private: it holds every run)."""
    if not tracking_uri.startswith("sqlite:///"):
        return
    path = tracking_uri[len("sqlite:///") :]
    if not path or path == ":memory:":
        return
    directory = os.path.dirname(path)
    if not directory:
        return
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError as e:
        raise MLflowTrackerError(
            f"cannot create the directory of the MLflow store {tracking_uri}"
            f" ({e.strerror or e}); {_HINT}"
        ) from None


@contextlib.contextmanager
def mlflow_errors(tracking_uri: str, action: str) -> Iterator[None]:
    """Re-raises MLflow and connection failures as one :class:`MLflowTrackerError` line."""
    mlflow_error = sdk.mlflow_error()

    try:
        yield
    except MLflowTrackerError:
        raise
    except mlflow_error as e:
        message = _first_line(e.message)
        if any(mark in message.lower() for mark in _UNREACHABLE_MARKS):
            raise MLflowUnreachableError(
                f"MLflow at {display_uri(tracking_uri)} failed to {action}: {message}"
            ) from e
        raise MLflowTrackerError(
            f"MLflow at {display_uri(tracking_uri)} refused to {action}: {message}"
        ) from e
    except (OSError, ConnectionError) as e:
        raise MLflowUnreachableError(
            f"MLflow at {display_uri(tracking_uri)} failed to {action}: {_first_line(str(e))}"
        ) from e
