"""A small Docker Engine API client for the calls ``local_docker`` makes on every command.

Why not the docker SDK for these: importing it (``requests``, ``urllib3``...) costs about
0.2 s, as much as half of a whole ``docker run``, and every ``torchx run``/``status``/
``log``/``cancel`` on ``local_docker`` would pay it. This client speaks HTTP/1.1 with the
standard library to a daemon on a unix socket or plain TCP, and offers the methods of the
SDK's low-level ``docker.APIClient`` that the scheduler uses, with the same arguments and
results, so the scheduler's code is the same with either. Everything else (pulling,
building and pushing images; TLS or SSH daemons, where :func:`from_env` returns ``None``)
goes through the docker SDK.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator, Mapping
from datetime import timezone
from http.client import HTTPConnection, HTTPResponse
from typing import Any
from urllib.parse import quote, urlencode

__all__ = [
    "EngineClient",
    "EngineError",
    "container_body",
    "from_env",
    "parse_bytes",
    "unix_time",
]

API_VERSION = "v1.41"
"""Docker 20.10's API; newer daemons serve it too."""

_DEFAULT_SOCKET = "/var/run/docker.sock"
_TIMEOUT_S = 60.0

_BYTE_UNITS = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}

# Keyword arguments of the SDK's ``containers.create`` that container_body() translates.
SUPPORTED_CREATE_KWARGS = frozenset(
    {
        "name", "hostname", "environment", "labels", "network", "privileged", "init",
        "mounts", "devices", "device_requests", "mem_limit", "shm_size", "nano_cpus",
        "restart_policy",
    }
)  # fmt: skip


class EngineError(Exception):
    """An error answer of the daemon; ``status_code`` and ``explanation`` as the SDK's."""

    def __init__(self, status_code: int, explanation: str) -> None:
        super().__init__(f"{status_code}: {explanation}")
        self.status_code = status_code
        self.explanation = explanation


class _UnixConnection(HTTPConnection):
    def __init__(self, path: str, timeout: float | None) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def from_env(environ: Mapping[str, str] | None = None) -> EngineClient | None:
    """A client for ``DOCKER_HOST`` (default: the local socket), or ``None`` when the
    daemon needs what only the SDK does (TLS, SSH, named pipes)."""
    env = os.environ if environ is None else environ
    host = env.get("DOCKER_HOST") or f"unix://{_DEFAULT_SOCKET}"
    if host.startswith("unix://"):
        return EngineClient(unix_socket=host[len("unix://") :] or _DEFAULT_SOCKET)
    if host.startswith("tcp://") and not env.get("DOCKER_TLS_VERIFY"):
        address = host[len("tcp://") :].rstrip("/")
        hostname, _, port = address.rpartition(":")
        if hostname and port.isdigit():
            return EngineClient(tcp=(hostname, int(port)))
    return None


class EngineClient:
    """HTTP/1.1 to the Docker daemon; a fresh connection per call (cheap on a socket) so
    the client can be used from several threads (log followers, the wait loop)."""

    def __init__(self, unix_socket: str | None = None, tcp: tuple[str, int] | None = None) -> None:
        self.unix_socket = unix_socket
        self.tcp = tcp

    @property
    def address(self) -> str:
        if self.tcp is not None:
            return f"tcp://{self.tcp[0]}:{self.tcp[1]}"
        return f"unix://{self.unix_socket}"

    # -- transport -------------------------------------------------------------------------

    def _connection(self, timeout: float | None) -> HTTPConnection:
        if self.tcp is not None:
            return HTTPConnection(self.tcp[0], self.tcp[1], timeout=timeout)
        return _UnixConnection(self.unix_socket or _DEFAULT_SOCKET, timeout)

    def _request(  # noqa: PLR0917 (internal)
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        timeout: float | None = _TIMEOUT_S,
        ok_statuses: tuple[int, ...] = (),
    ) -> tuple[HTTPConnection, HTTPResponse]:
        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        url = f"/{API_VERSION}{path}" + (f"?{urlencode(query)}" if query else "")
        conn = self._connection(timeout)
        headers = {"Host": "docker"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, url, body=data, headers=headers)
            response = conn.getresponse()
        except BaseException:
            conn.close()
            raise
        if response.status >= 400 and response.status not in ok_statuses:
            raw = response.read()
            conn.close()
            try:
                message = str(json.loads(raw).get("message", ""))
            except (ValueError, AttributeError):
                message = raw.decode("utf-8", errors="replace").strip()
            raise EngineError(response.status, message or response.reason)
        return conn, response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        conn, response = self._request(method, path, **kwargs)
        try:
            raw = response.read()
        finally:
            conn.close()
        return json.loads(raw) if raw.strip() else None

    # -- the APIClient subset --------------------------------------------------------------

    def ping(self) -> bool:
        conn, response = self._request("GET", "/_ping")
        try:
            return response.read().strip() == b"OK"
        finally:
            conn.close()

    def images(self, filters: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._json(
            "GET", "/images/json", params={"filters": _filters(filters)}
        )
        return found

    def inspect_image(self, image: str) -> dict[str, Any]:
        found: dict[str, Any] = self._json("GET", f"/images/{quote(image, safe='/:@')}/json")
        return found

    def networks(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        filters = {"name": names} if names else None
        found: list[dict[str, Any]] = self._json(
            "GET", "/networks", params={"filters": _filters(filters)}
        )
        return found

    def create_network(
        self, name: str, driver: str | None = None, check_duplicate: bool | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"Name": name, "Driver": driver or "bridge"}
        if check_duplicate is not None:
            body["CheckDuplicate"] = check_duplicate
        created: dict[str, Any] = self._json("POST", "/networks/create", body=body)
        return created

    def create_container_from_body(
        self, name: str | None, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        created: dict[str, Any] = self._json(
            "POST", "/containers/create", params={"name": name}, body=body
        )
        return created

    def start(self, container: str) -> None:
        self._json("POST", f"/containers/{container}/start", ok_statuses=(304,))

    def stop(self, container: str, timeout: int | None = None) -> None:
        wait = 10 if timeout is None else timeout
        self._json(
            "POST",
            f"/containers/{container}/stop",
            params={"t": wait},
            timeout=_TIMEOUT_S + wait,
            ok_statuses=(304,),
        )

    def path_exists(self, container: str, path: str) -> bool:
        """Whether ``path`` is in ``container``'s file system (a link counts); the
        container need not run."""
        conn, response = self._request(
            "HEAD", f"/containers/{container}/archive", params={"path": path}, ok_statuses=(404,)
        )
        conn.close()
        return response.status == 200

    def remove_container(self, container: str, v: bool = False, force: bool = False) -> None:
        self._json("DELETE", f"/containers/{container}", params={"v": v, "force": force})

    def containers(
        self, all: bool = False, filters: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._json(
            "GET", "/containers/json", params={"all": all, "filters": _filters(filters)}
        )
        return found

    def inspect_container(self, container: str) -> dict[str, Any]:
        found: dict[str, Any] = self._json("GET", f"/containers/{container}/json")
        return found

    def volumes(self, filters: Mapping[str, Any] | None = None) -> dict[str, Any]:
        found: dict[str, Any] = self._json("GET", "/volumes", params={"filters": _filters(filters)})
        return found

    def create_volume(
        self, name: str | None = None, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        body = {"Name": name or "", "Labels": dict(labels or {})}
        created: dict[str, Any] = self._json("POST", "/volumes/create", body=body)
        return created

    def remove_volume(self, name: str, force: bool = False) -> None:
        self._json("DELETE", f"/volumes/{name}", params={"force": force})

    def events(
        self,
        since: Any = None,
        until: Any = None,
        filters: Mapping[str, Any] | None = None,
        decode: bool = True,
    ) -> Iterator[dict[str, Any]]:
        """Decoded events, streamed until ``until`` (a Unix time, fractions allowed)."""
        del decode  # always decoded: the scheduler needs nothing else
        conn, response = self._request(
            "GET",
            "/events",
            params={"since": since, "until": until, "filters": _filters(filters)},
            timeout=None,
        )
        return _json_lines(conn, response)

    def logs(  # noqa: PLR0917 (the SDK's signature)
        self,
        container: str,
        stdout: bool = True,
        stderr: bool = True,
        stream: bool = False,
        follow: bool = False,
        since: Any = None,
        until: Any = None,
        timestamps: bool = False,
        tail: int | str = "all",
    ) -> Iterator[bytes]:
        """The container's output as the payloads of Docker's multiplexed frames (each
        entry prefixed with its RFC 3339 time and a space with ``timestamps``); ``tail``:
        only the last so many lines (the daemon reads them from the end of its log)."""
        del stream  # always streamed
        conn, response = self._request(
            "GET",
            f"/containers/{container}/logs",
            params={
                "stdout": stdout,
                "stderr": stderr,
                "follow": follow,
                "timestamps": timestamps,
                "tail": tail,
                "since": unix_time(since),
                "until": unix_time(until),
            },
            timeout=None,
        )
        return _frames(conn, response)


def _filters(filters: Mapping[str, Any] | None) -> dict[str, list[str]] | None:
    """Filters as the API takes them: every value a list (the SDK accepts a bare string)."""
    if not filters:
        return None
    return {k: [v] if isinstance(v, str) else list(v) for k, v in filters.items()}


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def unix_time(value: Any) -> Any:
    """A datetime as whole seconds since the epoch (as the SDK sends it); else unchanged."""
    if value is None or isinstance(value, (int, float, str)):
        return value

    return int(value.astimezone(timezone.utc).timestamp())


def _json_lines(conn: HTTPConnection, response: HTTPResponse) -> Iterator[dict[str, Any]]:
    try:
        while True:
            line = response.readline()
            if not line:
                return
            if line.strip():
                yield json.loads(line)
    finally:
        conn.close()


def _frames(conn: HTTPConnection, response: HTTPResponse) -> Iterator[bytes]:
    """Payloads of the ``[stream, 0, 0, 0, size(4, big endian)]``-framed log stream."""
    try:
        while True:
            header = response.read(8)
            if len(header) < 8:
                return
            size = int.from_bytes(header[4:8], "big")
            payload = response.read(size) if size else b""
            if payload:
                yield payload
            if len(payload) < size:
                return
    finally:
        conn.close()


def parse_bytes(value: int | float | str) -> int:
    """``"1024m"`` -> bytes, as the docker SDK reads ``mem_limit``/``shm_size``."""
    if isinstance(value, (int, float)):
        return int(value)
    text = value.strip().lower().removesuffix("b") if len(value) > 1 else value.strip()
    if text and text[-1] in _BYTE_UNITS:
        return int(float(text[:-1]) * _BYTE_UNITS[text[-1]])
    try:
        return int(float(text))
    except ValueError:
        raise ValueError(
            f"invalid memory size {value!r}; write a number with a unit b, k, m or g"
        ) from None


def container_body(image: str, command: list[str], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The ``POST /containers/create`` body for the SDK-style ``kwargs`` torchx generates
    (only the keys in :data:`SUPPORTED_CREATE_KWARGS`)."""
    host: dict[str, Any] = {}
    body: dict[str, Any] = {"Image": image, "Cmd": list(command), "HostConfig": host}
    if "hostname" in kwargs:
        body["Hostname"] = kwargs["hostname"]
    if "environment" in kwargs:
        body["Env"] = [f"{k}={v}" for k, v in dict(kwargs["environment"]).items()]
    if "labels" in kwargs:
        body["Labels"] = dict(kwargs["labels"])
    network = kwargs.get("network")
    if network:
        host["NetworkMode"] = network
        body["NetworkingConfig"] = {"EndpointsConfig": {network: {}}}
    if "privileged" in kwargs:
        host["Privileged"] = bool(kwargs["privileged"])
    if kwargs.get("init") is not None:
        host["Init"] = bool(kwargs["init"])
    if kwargs.get("mounts"):
        host["Mounts"] = [dict(m) for m in kwargs["mounts"]]
    if kwargs.get("devices"):
        host["Devices"] = [_device(d) for d in kwargs["devices"]]
    if kwargs.get("device_requests"):
        host["DeviceRequests"] = [_device_request(r) for r in kwargs["device_requests"]]
    if kwargs.get("mem_limit") is not None:
        host["Memory"] = parse_bytes(kwargs["mem_limit"])
    if kwargs.get("shm_size") is not None:
        host["ShmSize"] = parse_bytes(kwargs["shm_size"])
    if kwargs.get("nano_cpus") is not None:
        host["NanoCpus"] = int(kwargs["nano_cpus"])
    if kwargs.get("restart_policy"):
        host["RestartPolicy"] = dict(kwargs["restart_policy"])
    return body


def _device(spec: str) -> dict[str, str]:
    parts = spec.split(":")
    host_path = parts[0]
    container_path = parts[1] if len(parts) > 1 and parts[1] else host_path
    permissions = parts[2] if len(parts) > 2 else "rwm"
    return {
        "PathOnHost": host_path,
        "PathInContainer": container_path,
        "CgroupPermissions": permissions,
    }


def _device_request(request: Mapping[str, Any]) -> dict[str, Any]:
    def get(snake: str, camel: str, default: Any) -> Any:
        return request.get(snake, request.get(camel, default))

    return {
        "Driver": get("driver", "Driver", ""),
        "Count": get("count", "Count", 0),
        "DeviceIDs": get("device_ids", "DeviceIDs", None) or [],
        "Capabilities": get("capabilities", "Capabilities", None) or [],
        "Options": get("options", "Options", None) or {},
    }
