"""The Ray Jobs REST API, spoken with the standard library.

A laptop submits to a Ray cluster without installing Ray: every call is one HTTP request
to the cluster's dashboard (``/api/jobs/``, ``/api/packages/``, ``/api/v0/logs/``). Errors
become one line that names the address and what to do.
"""

from __future__ import annotations

import json
import os
import re
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote, urlencode, urlsplit

from torchx.util.log import get_logger
from torchx.util.strings import connection_problem, escape_unprintable
from torchx.util.support.retry import retry_call
from torchx.util.support.secrets import mask_url

logger = get_logger(__name__)

DEFAULT_ADDRESS = "http://127.0.0.1:8265"
TIMEOUT_S = 30.0
MIN_RAY = (2, 10)
"""Oldest Ray whose dashboard serves what this scheduler uses (jobs, packages, per-actor
log files through the v0 state API)."""

__all__ = [
    "DEFAULT_ADDRESS",
    "RayApiError",
    "RayJobsClient",
    "RayNotFoundError",
    "RayUnreachableError",
    "address_in_app_id",
    "resolve_address",
    "split_app_id",
]


class RayApiError(RuntimeError):
    """The Ray dashboard refused or failed a request; the message says what to do."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RayUnreachableError(RayApiError):
    """Nothing answers at the dashboard address."""


class RayNotFoundError(RayApiError):
    """A 404: the job (or file) does not exist on this cluster."""


def resolve_address(option: str | None) -> tuple[str, str]:
    """``(dashboard URL, where it came from)``: the ``dashboard_address`` run option, then
    ``$RAY_API_SERVER_ADDRESS``, then ``$RAY_ADDRESS``, then 127.0.0.1:8265.

    The run option always wins (upstream let ``RAY_ADDRESS`` override it silently). A bare
    ``host:port`` means ``http://host:port``; a ``ray://`` client address or ``auto`` is
    not a dashboard address and is refused in one line.
    """
    for value, origin in (
        (option, "run option dashboard_address"),
        (os.environ.get("RAY_API_SERVER_ADDRESS"), "RAY_API_SERVER_ADDRESS"),
        (os.environ.get("RAY_ADDRESS"), "RAY_ADDRESS"),
    ):
        if value and value.strip():
            return _dashboard_url(value.strip(), origin), origin
    return DEFAULT_ADDRESS, "the default"


_IN_APP_ID = re.compile(r"(?P<address>(?:https:)?[^/@]+?:\d+)-(?P<job>[A-Za-z0-9_.-]+)")
"""``[https:]host:port-<submission id>``: upstream's Ray app ids carried the dashboard so."""


def address_in_app_id(url: str) -> str | None:
    """How the dashboard ``url`` goes into an app id: ``host:port`` (``https:host:port``
    for TLS), or None when it cannot (a path prefix, credentials in the URL, no port)."""
    parts = urlsplit(url)
    if parts.path.strip("/") or parts.username or parts.password or parts.query:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    netloc = parts.netloc
    if port is None:  # a host alone: its scheme's port, so the app id names it
        netloc = f"{netloc}:{80 if parts.scheme == 'http' else 443}"
    return netloc if parts.scheme == "http" else f"https:{netloc}"


def split_app_id(app_id: str) -> tuple[str | None, str]:
    """``(dashboard URL or None, submission id)`` of an app id; None means an id without
    an address (then :func:`resolve_address` decides, as before)."""
    found = _IN_APP_ID.fullmatch(app_id)
    if not found:
        return None, app_id
    address = found["address"]
    if address.startswith("https:"):
        return "https://" + address.removeprefix("https:"), found["job"]
    return "http://" + address, found["job"]


def _dashboard_url(value: str, origin: str) -> str:
    scheme = value.split("://", 1)[0] if "://" in value else ""
    if scheme in ("http", "https"):
        url = value.rstrip("/")
    elif not scheme and value != "auto":
        # host:port, or a host alone (a route's or ingress' name: port 80, as upstream)
        url = "http://" + value.rstrip("/")
    else:
        raise RayApiError(
            f"{origin}={value!r} is not the address of a Ray dashboard; set -cfg"
            " dashboard_address=http://HOST:8265 (the dashboard serves the Jobs API)"
        )
    parts = urlsplit(url)
    if not parts.hostname:
        raise RayApiError(f"{origin}={value!r} names no host; use http://HOST:8265")
    return url


def _transient(e: BaseException, repeatable: bool) -> bool:
    if isinstance(e, RayUnreachableError):
        return repeatable or "refused" in str(e).lower()
    return repeatable and isinstance(e, RayApiError) and e.status in (502, 503, 504)


def _token() -> str | None:
    """The bearer token of a cluster running with token auth (never printed)."""
    token = os.environ.get("RAY_AUTH_TOKEN")
    if token:
        return token.strip()
    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or "~/.ray/auth_token").expanduser()
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def origin_of(url: str) -> tuple[str, str | None, int | None]:
    """(scheme, host, port) of ``url``, the scheme's port where none is written."""
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, parts.hostname, parts.port or default


def _same_origin(a: str, b: str) -> bool:
    return origin_of(a) == origin_of(b)


def _opener(verify: bool | str = True) -> Any:
    """urllib's opener, except that the bearer token follows a redirect only to the same
    origin (scheme, host, port): a proxy, an SSO front end or an http-to-https hop that
    redirects elsewhere never receives it. ``verify``: a CA bundle's path, or False to
    skip checking the dashboard's certificate (as a ``JobSubmissionClient`` takes it)."""

    class _SameOriginAuth(urllib.request.HTTPRedirectHandler):
        def redirect_request(  # noqa: PLR0917 (urllib's signature)
            self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
        ) -> Any:
            new = super().redirect_request(req, fp, code, msg, headers, newurl)
            if new is not None and _same_origin(req.full_url, new.full_url):
                for name, value in req.unredirected_hdrs.items():
                    if name.lower() in _CREDENTIALS:
                        new.add_unredirected_header(name, value)
            return new

    if verify is True:
        return urllib.request.build_opener(_SameOriginAuth)

    context = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
    if verify is False:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return urllib.request.build_opener(
        _SameOriginAuth, urllib.request.HTTPSHandler(context=context)
    )


_CREDENTIALS = frozenset({"authorization", "cookie", "proxy-authorization"})
"""Headers of an SDK's client that carry credentials: kept off redirects to another origin."""

_warned_in_clear: set[str] = set()


def _warn_if_token_travels_in_clear(address: str, shown: str) -> None:
    """Warns once per dashboard when the token would go over plain http to another host."""

    parts = urlsplit(address)
    host = parts.hostname or ""
    loopback = host in {"localhost", "::1"} or host.startswith("127.")
    if parts.scheme == "http" and not loopback and address not in _warned_in_clear:
        _warned_in_clear.add(address)
        logger.warning(
            "the Ray token (RAY_AUTH_TOKEN) goes to %s over plain http, readable on the"
            " network; use an https:// dashboard address",
            shown,
        )


class RayJobsClient:
    """The dashboard calls the scheduler makes, each a fresh stdlib HTTP request."""

    def __init__(
        self,
        address: str,
        origin: str = "the run option",
        *,
        timeout: float = TIMEOUT_S,
        headers: dict[str, str] | None = None,
        verify: bool | str = True,
        cookies: dict[str, str] | None = None,
    ):
        """``headers``, ``verify`` and ``cookies``: those of a ``JobSubmissionClient`` an
        SDK handed the scheduler (its OAuth bearer token, its TLS setting), sent with
        every request to its cluster."""
        self.address = address
        self.shown = mask_url(address)  # what messages show: no credentials in the URL
        self.origin = origin
        self.timeout = timeout
        self._headers = dict(headers or {})
        if cookies:
            self._headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        self._verify = verify
        own_auth = any(k.lower() == "authorization" for k in self._headers)
        self._token = None if own_auth else _token()
        if self._token or own_auth:
            _warn_if_token_travels_in_clear(address, self.shown)

    # -- transport -------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | IO[bytes] | None = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> bytes:
        """One call, with a dashboard restart or a dropped connection ridden out within
        the budget of :mod:`torchx.util.support.retry`. A job submission is sent again only when
        the connection was refused (nothing arrived), so a job never starts twice."""

        repeatable = not (method == "POST" and path == "/api/jobs/")
        return retry_call(
            lambda: self._request_once(method, path, body, content_type, timeout),
            service=f"the Ray dashboard at {self.shown}",
            is_transient=lambda e: _transient(e, repeatable),
        )

    def _request_once(
        self,
        method: str,
        path: str,
        body: bytes | IO[bytes] | None,
        content_type: str,
        timeout: float | None,
    ) -> bytes:

        headers = {"Content-Type": content_type} if body is not None else {}
        sensitive = {k: v for k, v in self._headers.items() if k.lower() in _CREDENTIALS}
        headers.update({k: v for k, v in self._headers.items() if k not in sensitive})
        if body is not None and not isinstance(body, bytes):  # a file: streamed, from its start
            body.seek(0, os.SEEK_END)
            headers["Content-Length"] = str(body.tell())
            body.seek(0)
        # the URL is http(s) only: resolve_address refuses anything else
        request = urllib.request.Request(  # noqa: S310
            self.address + path, data=body, method=method, headers=headers
        )
        if self._token:  # kept off redirects to another origin (_SameOriginAuth)
            request.add_unredirected_header("Authorization", f"Bearer {self._token}")
        for name, value in sensitive.items():  # the SDK client's credentials: the same rule
            request.add_unredirected_header(name.capitalize(), value)
        try:
            with _opener(self._verify).open(request, timeout=timeout or self.timeout) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as e:
            raise self._http_error(e, method, path) from None
        except (OSError, ValueError) as e:
            reason = getattr(e, "reason", None) or e
            raise RayUnreachableError(
                f"cannot reach the Ray dashboard at {self.shown} (from {self.origin}:"
                f" {connection_problem(reason)}); start the cluster, or point -cfg"
                " dashboard_address=http://HOST:8265 (or RAY_API_SERVER_ADDRESS) at its dashboard"
            ) from None

    def _http_error(self, e: Any, method: str, path: str) -> RayApiError:
        try:
            text = e.read().decode("utf-8", "replace")
        except OSError:
            text = ""
        try:
            detail = json.loads(text).get("detail") or json.loads(text).get("msg") or text
        except (ValueError, AttributeError):
            detail = text
        detail = escape_unprintable(" ".join(str(detail).split())[:300]) or e.reason
        if e.code == 404:
            return RayNotFoundError(f"not found on the Ray cluster at {self.shown}: {detail}", 404)
        if e.code in (401, 403):
            return RayApiError(
                f"the Ray dashboard at {self.shown} refused {method} {path} ({e.code}:"
                f" {detail}); set RAY_AUTH_TOKEN to the cluster's token",
                e.code,
            )
        return RayApiError(
            f"the Ray dashboard at {self.shown} answered {e.code} to {method} {path}: {detail}",
            e.code,
        )

    def _json(
        self, method: str, path: str, payload: Any = None, timeout: float | None = None
    ) -> Any:
        body = None if payload is None else json.dumps(payload).encode()
        return json.loads(self._request(method, path, body, timeout=timeout) or b"null")

    # -- the cluster -----------------------------------------------------------------------

    def version(self, timeout: float | None = None) -> dict[str, Any]:
        """``/api/version``; a Ray too old for this scheduler is a one-line error."""
        found: dict[str, Any] = self._json("GET", "/api/version", timeout=timeout)
        ray_version = str(found.get("ray_version", "0"))
        numbers = tuple(int(p) for p in ray_version.split(".")[:2] if p.isdigit())
        if numbers < MIN_RAY:
            raise RayApiError(
                f"the Ray cluster at {self.shown} runs Ray {ray_version}, whose Jobs API lacks"
                f" what TorchX needs; use Ray {'.'.join(map(str, MIN_RAY))} or newer"
            )
        return found

    def nodes(self, timeout: float | None = None) -> list[dict[str, Any]]:
        found = self._json("GET", "/nodes?view=summary", timeout=timeout)
        return list(((found or {}).get("data") or {}).get("summary") or [])

    # -- jobs ------------------------------------------------------------------------------

    def submit(self, body: dict[str, Any]) -> str:
        try:
            answer = self._json("POST", "/api/jobs/", body)
        except RayApiError as e:
            if e.status == 500 and "already exists" in str(e):
                raise RayApiError(
                    f"a Ray job named {body.get('submission_id')!r} already exists; run again"
                    " (a new name is generated)",
                    500,
                ) from None
            raise
        return str(answer.get("submission_id") or answer.get("job_id"))

    def job(self, job_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self._json("GET", f"/api/jobs/{quote(job_id, safe='')}")
        return found

    def jobs(self) -> list[dict[str, Any]]:
        found = self._json("GET", "/api/jobs/")
        return list(found or [])

    def driver_log(self, job_id: str) -> str:
        found = self._json("GET", f"/api/jobs/{quote(job_id, safe='')}/logs")
        return str((found or {}).get("logs", ""))

    def stop(self, job_id: str) -> bool:
        found = self._json("POST", f"/api/jobs/{quote(job_id, safe='')}/stop")
        return bool((found or {}).get("stopped"))

    def delete(self, job_id: str) -> None:
        self._request("DELETE", f"/api/jobs/{quote(job_id, safe='')}")

    # -- packages (workspaces and the driver) ----------------------------------------------

    def has_package(self, uri_name: str) -> bool:
        try:
            self._request("GET", f"/api/packages/gcs/{uri_name}")
        except RayNotFoundError:
            return False
        return True

    def upload_package(self, uri_name: str, data: bytes | IO[bytes]) -> None:
        """Uploads a working-dir zip, as bytes or streamed from a seekable file."""
        self._request("PUT", f"/api/packages/gcs/{uri_name}", data, "application/octet-stream")

    # -- replica logs ----------------------------------------------------------------------

    def actor_log(self, actor_id: str, suffix: str, lines: int = -1) -> bytes:
        """The ``out`` or ``err`` log file of an actor (its worker process): whole, or its
        last ``lines`` lines."""
        query = urlencode({"actor_id": actor_id, "suffix": suffix, "lines": lines})
        return self._request("GET", f"/api/v0/logs/file?{query}")

    def node_log(self, node_id: str, filename: str, lines: int = -1) -> bytes:
        """The log file ``filename`` of node ``node_id`` (there after its actor): whole, or
        its last ``lines`` lines.

        Ray's log monitor moves the files of a worker that has ended into the logs'
        ``old/`` directory, at a time of its own choosing (the two files of one worker
        not always together): a file not found where it was is read from there. Ray
        answers a file that is not there with a 500, or now and then with an empty 200
        (its log agent's error can travel in gRPC trailers the dashboard does not read):
        an empty answer is checked against ``old/`` as well."""
        found: bytes | None = None  # None: not found where it was
        try:
            found = self._node_file(node_id, filename, lines)
        except RayApiError as e:
            if e.status not in (404, 500):
                raise
        if found:
            return found
        try:
            return self._node_file(node_id, f"old/{filename}", lines)
        except RayApiError as e:
            if found is None or e.status not in (404, 500):
                raise
            return found  # an empty file, not moved

    def _node_file(self, node_id: str, filename: str, lines: int = -1) -> bytes:
        query = urlencode({"node_id": node_id, "filename": filename, "lines": lines})
        return self._request("GET", f"/api/v0/logs/file?{query}")
