"""``torchx check`` of the ``mlflow`` tracker: the tracking store its config resolves to
answers (an HTTP server's ``/health``) or can be written (a SQLite file or a directory).
Nothing is created; a password in the URI is never shown."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from torchx.tracker.mlflow._config import default_tracking_uri, resolve_settings
from torchx.tracker.mlflow._errors import display_uri
from torchx.util.readiness import ReadinessCheck, not_ready, ready, write_problem

TIMEOUT_S = 3.0


def check_ready(config: str | None) -> list[ReadinessCheck]:
    try:
        settings = resolve_settings(config)
    except ValueError as e:
        text, _, fix = str(e).partition("; ")
        return [not_ready("store", text, fix or "fix the [tracker:mlflow] section")]
    uri = settings.tracking_uri or default_tracking_uri()
    shown = display_uri(uri)
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        return [_server_check(uri, shown)]
    if parts.scheme.startswith("sqlite"):
        path = uri.split(":///", 1)[1] if ":///" in uri else ""
        path = path if path.startswith("/") else "/" + path
        problem = write_problem(path)
        if problem:
            return [not_ready("store", f"SQLite store {path}: {problem}", _STORE_FIX)]
        state = "exists" if os.path.exists(path) else "will be created on the first run"
        return [ready("store", f"SQLite store {path} ({state}; writable)")]
    if parts.scheme in ("", "file"):
        path = parts.path if parts.scheme == "file" else uri
        problem = write_problem(path, directory=True)
        if problem:
            return [not_ready("store", f"file store {path}: {problem}", _STORE_FIX)]
        return [ready("store", f"file store {path} (writable)")]
    return [ready("store", f"tracking URI {shown} (not probed: scheme {parts.scheme})")]


_STORE_FIX = (
    "point [tracker:mlflow] config (or TORCHX_TRACKER_MLFLOW_CONFIG) at a store you can write"
)


def _server_check(uri: str, shown: str) -> ReadinessCheck:
    import urllib.error
    import urllib.request

    url = uri.rstrip("/") + "/health"
    fix = "start the MLflow server, or fix [tracker:mlflow] config / TORCHX_TRACKER_MLFLOW_CONFIG"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:  # noqa: S310 (http(s) only)
            body = response.read(64).decode("utf-8", "replace").strip()
    except urllib.error.HTTPError as e:
        return not_ready("server", f"MLflow server at {shown} answered {e.code} to /health", fix)
    except (OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        return not_ready("server", f"cannot reach the MLflow server at {shown} ({reason})", fix)
    return ready("server", f"MLflow server at {shown} answers ({body or 'OK'})")
