"""Talking to the Kubernetes API server: credentials, calls, and errors a user can act on.

The ``kubernetes`` client is imported here only (:func:`sdk`, the backend's one lazy seam),
and only when the cluster is contacted (its import costs about a second). Reads ask for the
raw JSON (``_preload_content=False``) and parse it with ``json``: turning a list of 10,000
pods into client models would cost seconds and is not needed.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from torchx.util.log import ensure_configured
from torchx.util.strings import connection_problem
from torchx.util.support.retry import retry_call

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kubernetes.client import ApiClient

__all__ = [
    "KubernetesApiError",
    "KubernetesConfigError",
    "NotFound",
    "call",
    "cluster_configured",
    "connect",
    "first_event",
    "read_json",
]

SERVICE_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"  # noqa: S105 (a path)
REQUEST_TIMEOUT_S = 60

R = TypeVar("R")


class KubernetesConfigError(RuntimeError):
    """No usable cluster configuration (no kubeconfig, unknown context, not in a pod)."""


class KubernetesApiError(RuntimeError):
    """The API server refused a request; the message says what to do about it."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFound(KubernetesApiError):
    """A 404 from the API server (the object or the API itself does not exist)."""


class ApiMissing(NotFound):
    """A 404 for an API the cluster does not serve (Volcano, JobSet, Kueue not installed)."""


def _kubeconfig_paths() -> list[str]:
    value = os.environ.get("KUBECONFIG")
    paths = value.split(os.pathsep) if value else ["~/.kube/config"]
    return [os.path.expanduser(p) for p in paths if p]


def kubeconfig_arg() -> str:
    """``KUBECONFIG`` as read now (the client reads it once, when it is imported)."""
    return os.pathsep.join(_kubeconfig_paths())


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(SERVICE_TOKEN)


def cluster_configured() -> bool:
    """Whether this process could reach a cluster config (a cheap check, no import)."""
    return _in_cluster() or any(os.path.isfile(p) for p in _kubeconfig_paths())


def sdk() -> Any:
    """The ``kubernetes`` package with its ``client`` and ``config`` loaded: every use of the
    SDK in this backend goes through here, so it is imported once, on first contact."""

    ensure_configured()  # the SDK logs through logging itself
    import kubernetes.client
    import kubernetes.config

    return kubernetes


def stream_broke(e: BaseException) -> bool:
    """Whether ``e`` is a followed stream cut short (rather than an answer)."""
    from urllib3.exceptions import HTTPError  # urllib3 comes with the SDK

    return isinstance(e, (OSError, HTTPError))


def connect(context: str | None = None) -> ApiClient:
    """An API client: the pod's service account when in a cluster, else the kubeconfig.

    ``context`` picks a kubeconfig context (default: its current context). Raises
    :class:`KubernetesConfigError` with the fix when neither works.
    """
    import yaml

    kubernetes = sdk()
    client, config = kubernetes.client, kubernetes.config
    ConfigException = kubernetes.config.ConfigException
    _quiet_retries()

    configuration = client.Configuration()
    if _in_cluster() and not context:
        try:
            config.load_incluster_config(client_configuration=configuration)
            return client.ApiClient(configuration)
        except ConfigException:
            pass  # a broken service account mount: try the kubeconfig next
    paths = _kubeconfig_paths()
    if not any(os.path.isfile(p) for p in paths):
        raise KubernetesConfigError(
            "no Kubernetes cluster configured: not running in a pod and no kubeconfig at"
            f" {os.pathsep.join(paths)}; point KUBECONFIG at your cluster's config (e.g."
            " `aws eks update-kubeconfig`, `gcloud container clusters get-credentials`)"
        )
    try:
        config.load_kube_config(
            config_file=kubeconfig_arg(), context=context, client_configuration=configuration
        )
    except ConfigException as e:
        raise KubernetesConfigError(_config_problem(str(e), context)) from e
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise KubernetesConfigError(
            f"cannot read the kubeconfig {os.pathsep.join(paths)}: {_first_line(e)}; fix the"
            " file or point KUBECONFIG at a valid one"
        ) from e
    return client.ApiClient(configuration)


class _NoRetryNotes:
    """Drops urllib3's "Retrying (...)" warnings: the one-line error after them says it."""

    def filter(self, record: Any) -> bool:
        return not str(record.msg).startswith("Retrying (")


def _quiet_retries() -> None:
    pool_log = logging.getLogger("urllib3.connectionpool")
    if not any(isinstance(f, _NoRetryNotes) for f in pool_log.filters):
        pool_log.addFilter(_NoRetryNotes())


def _config_problem(message: str, context: str | None) -> str:
    config = sdk().config

    try:
        contexts, active = config.list_kube_config_contexts(config_file=kubeconfig_arg())
        names = [str(c.get("name")) for c in contexts or ()]
        current = str((active or {}).get("name", ""))
    except Exception:
        names, current = [], ""
    wanted = context or current
    if wanted and wanted not in names:
        where = "TORCHX_KUBE_CONTEXT" if context else "the kubeconfig's current-context"
        known = ", ".join(names) or "<none>"
        return (
            f"Kubernetes context {wanted!r} (from {where}) is not in the kubeconfig; its"
            f" contexts are: {known}. Pick one with `kubectl config use-context NAME` or"
            " TORCHX_KUBE_CONTEXT=NAME"
        )
    if not wanted:
        return (
            "the kubeconfig has no current-context; pick one with"
            " `kubectl config use-context NAME` or set TORCHX_KUBE_CONTEXT=NAME"
        )
    return f"invalid kubeconfig: {_first_line(message)}; fix it (see `kubectl config view`)"


def _first_line(e: object) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__


def _server_message(body: Any) -> str:
    try:
        status = json.loads(body)
    except (TypeError, ValueError):
        return _first_line(body) if body else ""
    if isinstance(status, dict):
        return str(status.get("message") or status.get("reason") or "")
    return ""


_MISSING_APIS = (
    (
        "Volcano",
        "Volcano is not installed on this cluster (no batch.volcano.sh API; found while"
        " {action}); run with -cfg job_type=batch (plain Kubernetes Jobs, no Volcano needed)"
        " or install Volcano",
    ),
    (
        "JobSet",
        "JobSet is not installed on this cluster (no jobset.x-k8s.io API; found while"
        " {action}); run with -cfg job_type=batch (an Indexed Job per role) or install JobSet"
        " (https://jobset.sigs.k8s.io/docs/installation/)",
    ),
    (
        "Kueue",
        "Kueue is not installed on this cluster (no kueue.x-k8s.io API; found while"
        " {action}); run with -cfg queue=- (no queue) or install Kueue"
        " (https://kueue.sigs.k8s.io/docs/installation/)",
    ),
)
"""The API an action (``creating JobSet 'x'``) names, and what to say when it is missing."""


def _missing_api(action: str, message: str) -> str | None:
    """The line for a 404 that means the API itself is missing (not an object), or None."""
    if "could not find the requested resource" not in message and "page not found" not in message:
        return None
    for word, text in _MISSING_APIS:
        if word in action:
            return text.format(action=action)
    return None


def api_error(e: Exception, action: str, namespace: str) -> KubernetesApiError:
    """A one-line error for an ``ApiException`` (or connection failure) while ``action``."""
    if not isinstance(e, sdk().client.exceptions.ApiException):
        host = _host_of(e)
        return KubernetesApiError(
            f"cannot reach the Kubernetes API server{host} while {action}: {_short(e)};"
            " check that the cluster is up and the kubeconfig points at it"
            " (`kubectl cluster-info`)"
        )
    status = int(e.status or 0)
    message = _server_message(e.body) or str(e.reason or "")
    if status == 401:
        text = (
            f"the API server rejected the credentials while {action} ({message}); refresh"
            " them (log in again or renew the kubeconfig token)"
        )
    elif status == 403:
        text = (
            f"forbidden while {action}: {message}; ask a cluster admin for RBAC permission"
            f" in namespace {namespace!r}, or pick a namespace you may use (-cfg namespace=...)"
        )
    elif status == 404:
        if "namespaces" in message and "not found" in message:
            text = (
                f"namespace {namespace!r} does not exist ({message}); create it"
                f" (`kubectl create namespace {namespace}`) or pass -cfg namespace=..."
            )
        elif (missing := _missing_api(action, message)) is not None:
            return ApiMissing(" ".join(missing.split()), status)
        else:
            text = f"not found while {action}: {message or 'no such object or API'}"
        return NotFound(text, status)
    elif status == 409:
        text = (
            f"conflict while {action}: {message}; the name is taken, run again (a new"
            " name is generated) or delete the old app with `torchx delete`"
        )
    elif status == 422:
        text = (
            f"invalid job spec, rejected by the API server: {message}; fix the role or run option"
        )
    else:
        text = f"the Kubernetes API server answered {status} while {action}: {message}"
    return KubernetesApiError(" ".join(text.split()), status)


def _short(e: Exception) -> str:
    return connection_problem(getattr(e, "reason", None) or e)


def _host_of(e: Exception) -> str:
    # urllib3 2.x names the connection `conn` (`pool` is deprecated there), 1.x `pool`
    attrs = getattr(e, "__dict__", {})
    pool = attrs.get("conn") or attrs.get("pool")
    host = getattr(pool, "host", None)
    port = getattr(pool, "port", None)
    return f" at {host}:{port}" if host else ""


_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


def _transient(e: BaseException, repeatable: bool) -> bool:
    """Throttling (429), an overloaded or restarting server (5xx) or a lost connection:
    worth asking again. A create is asked again only when it surely did not arrive (429,
    or a refused connection), so an object is never created twice."""
    if not isinstance(e, KubernetesApiError):
        return False
    if e.status is not None:
        return e.status in _RETRY_STATUSES if repeatable else e.status == 429
    return repeatable or "refused" in str(e).lower()


def call(fn: Callable[[], R], action: str, namespace: str, *, repeatable: bool = True) -> R:
    """Runs one API call, turning client failures into :class:`KubernetesApiError`.

    Transient failures are retried within the budget of :mod:`torchx.util.support.retry`;
    ``repeatable=False`` (creates) retries only what cannot have reached the server.
    """

    return retry_call(
        lambda: _call_once(fn, action, namespace),
        service="the Kubernetes API server",
        is_transient=lambda e: _transient(e, repeatable),
    )


def _call_once(fn: Callable[[], R], action: str, namespace: str) -> R:
    from urllib3.exceptions import HTTPError  # urllib3 comes with the SDK

    api_exception = sdk().client.exceptions.ApiException
    try:
        return fn()
    except (api_exception, HTTPError, OSError) as e:
        raise api_error(e, action, namespace) from e
    except ValueError as e:
        errors = getattr(e, "errors", None)
        if not callable(errors):
            raise
        # kubernetes >= 37 checks request bodies against its models (pydantic) first
        first = errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())[1:] if not str(p).isdigit() or p)
        raise KubernetesApiError(
            f"invalid job spec, rejected by the kubernetes client while {action}: {where}:"
            f" {first.get('msg')}; fix the role, run option or pod overlay",
            422,
        ) from e


def read_json(fn: Callable[..., Any], action: str, namespace: str, /, *args: Any, **kw: Any) -> Any:
    """Calls an API method for its raw response and returns the parsed JSON body."""
    response = call(
        lambda: fn(*args, _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S, **kw),
        action,
        namespace,
    )
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()


def first_event(
    fn: Callable[..., Any], action: str, namespace: str, timeout: float, /, *args: Any, **kw: Any
) -> bool:
    """Watches ``fn``'s list (``watch=True``) until its first event or for ``timeout``
    seconds; whether an event came. ``kw`` picks the objects (selectors) and the
    ``resource_version`` to start after. A dropped watch reads as no event (the caller
    lists again); an ``ERROR`` event is raised as :class:`KubernetesApiError` with its
    code (410: the version expired, list again)."""
    from urllib3.exceptions import HTTPError

    response = call(
        lambda: fn(
            *args,
            watch=True,
            timeout_seconds=max(1, round(timeout)),
            _preload_content=False,
            _request_timeout=(REQUEST_TIMEOUT_S, timeout + 5),
            **kw,
        ),
        action,
        namespace,
    )
    try:
        for line in _lines(response.stream(64 * 1024, decode_content=True)):
            _raise_error_event(line, action)
            return True
        return False
    except (OSError, HTTPError):  # a read timeout or a dropped connection: no event
        return False
    finally:
        response.close()  # a watch is never read to its end: drop the connection
        response.release_conn()


def _lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    pending = b""
    for chunk in chunks:
        *done, pending = (pending + chunk).split(b"\n")
        yield from (line for line in done if line.strip())
    if pending.strip():
        yield pending


def _raise_error_event(line: bytes, action: str) -> None:
    try:
        event = json.loads(line)
    except ValueError:
        return
    if isinstance(event, dict) and event.get("type") == "ERROR":
        status = event.get("object") or {}
        code = int(status.get("code") or 0) or None
        raise KubernetesApiError(
            f"the watch ended while {action}: {status.get('message') or status.get('reason')}",
            code,
        )


def iter_chunks(response: Any) -> Iterator[bytes]:
    """The body of a streamed response as it arrives (one chunk per server write)."""
    try:
        yield from response.stream(64 * 1024, decode_content=True)
    finally:
        response.release_conn()
