"""boto3 clients for ``aws_batch`` and the translation of AWS failures into one-line errors.

Clients come from the standard boto3 chain (env vars, ``AWS_PROFILE``, ``~/.aws``, SSO,
instance roles; ``AWS_ENDPOINT_URL`` too), one ``boto3`` session per thread because sessions
are not thread-safe. ``boto3`` is imported on the first client, never at module import.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from torchx.util.log import ensure_configured
from torchx.util.support.retry import ServiceUnavailableError, retry_call
from torchx.util.support.secrets import mask_url

__all__ = [
    "AWSBatchError",
    "AWSCredentialsError",
    "AWSRegionError",
    "BatchQueueError",
    "api_call",
    "thread_client",
]

T = TypeVar("T")

_local = threading.local()

_CREDENTIALS_HINT = (
    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run"
    " `aws configure` / `aws sso login`"
)
_REJECTED_CODES = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "AccessDeniedException",
    }
)


class AWSBatchError(RuntimeError):
    """An AWS Batch or CloudWatch Logs call failed; the message says which and why.

    ``code`` is AWS's error code when AWS answered (``ClientException``, ...).
    """

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code


class AWSCredentialsError(AWSBatchError):
    """No AWS credentials were found, or AWS rejected them."""


class AWSRegionError(AWSBatchError):
    """No AWS region is configured."""


class BatchQueueError(AWSBatchError):
    """The job queue does not exist or cannot take the job."""


def thread_client(service: str) -> Any:
    """This thread's ``service`` client (``batch`` or ``logs``), created on first use."""
    clients: dict[str, Any] | None = getattr(_local, "clients", None)
    if clients is None:
        clients = _local.clients = {}
    client = clients.get(service)
    if client is None:
        client = clients[service] = _new_client(service)
    return client


def _new_client(service: str) -> Any:
    session = getattr(_local, "session", None)
    if session is None:
        session = _local.session = new_session()
    return client_of(session, service, retry_config())


def new_session() -> Any:
    """A boto3 session from the standard chain (an empty AWS_DEFAULT_REGION falls back to
    AWS_REGION, as a user setting both would expect)."""

    ensure_configured()  # botocore logs through logging itself (masked by the CLI's format)
    import boto3

    _quiet_botocore()
    session = boto3.session.Session()
    if session.region_name == "" and os.environ.get("AWS_REGION"):
        # an empty AWS_DEFAULT_REGION hides AWS_REGION from botocore
        session = boto3.session.Session(region_name=os.environ["AWS_REGION"])
    return session


def client_of(session: Any, service: str, config: Any = None) -> Any:
    """``session.client(service)``; a missing region, profile or credentials is one line."""
    import botocore.exceptions

    no_region = (
        "no AWS region is configured; set AWS_DEFAULT_REGION (or AWS_REGION), or"
        " `region` in ~/.aws/config for your profile"
    )
    if session.region_name == "":
        # an empty AWS_DEFAULT_REGION is "set" to botocore, which then builds the
        # endpoint `batch..amazonaws.com`: say what is missing instead
        raise AWSRegionError(no_region)
    try:
        client = session.client(service, config=config)
    except botocore.exceptions.NoRegionError as e:
        raise AWSRegionError(no_region) from e
    except botocore.exceptions.ProfileNotFound as e:
        raise AWSCredentialsError(f"{e}; fix AWS_PROFILE or add the profile to ~/.aws") from e
    if session.get_credentials() is None:
        raise AWSCredentialsError(f"no AWS credentials found; {_CREDENTIALS_HINT}")
    return client


def _quiet_botocore() -> None:
    """Keeps botocore's per-client INFO lines ("Found credentials in ...") out of the CLI's
    INFO log (upstream #430); an explicitly configured level is left alone."""

    for name in ("botocore.credentials", "botocore.configprovider", "botocore.tokens"):
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


_READ_PREFIXES = ("describe_", "list_", "get_", "filter_")
_TRANSIENT_CODES = frozenset(
    {
        "Throttling", "ThrottlingException", "ThrottledException", "TooManyRequestsException",
        "RequestLimitExceeded", "ServiceUnavailable", "ServiceUnavailableException",
        "InternalFailure", "InternalServerError", "ServerException",
    }
)  # fmt: skip


def probe_config(timeout_s: float) -> Any:
    """One try within ``timeout_s``: for ``torchx check``'s probes, which must answer fast."""
    from botocore.config import Config

    return Config(
        connect_timeout=timeout_s,
        read_timeout=timeout_s,
        retries={"max_attempts": 1, "mode": "standard"},
    )


def retry_config() -> Any:
    """botocore's ``standard`` retry mode (jittered backoff on throttling, 5xx and dropped
    connections, 3 tries): set once here for every client, unless the user chose a mode
    or a number of tries (``AWS_RETRY_MODE``, ``AWS_MAX_ATTEMPTS``, or ~/.aws/config)."""
    if os.environ.get("AWS_RETRY_MODE") or os.environ.get("AWS_MAX_ATTEMPTS"):
        return None
    from botocore.config import Config

    return Config(retries={"mode": "standard"})


def _transient(e: BaseException, read: bool) -> bool:
    """An outage or throttling that outlived botocore's own tries: worth waiting for. A
    call that changes something is retried only if it surely never reached AWS."""
    import botocore.exceptions

    if isinstance(e, botocore.exceptions.EndpointConnectionError):
        return True  # the connection was refused: nothing was sent
    if not read:
        return False
    if isinstance(e, botocore.exceptions.ClientError):
        error = e.response.get("Error", {})
        status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        return str(error.get("Code", "")) in _TRANSIENT_CODES or status in (500, 502, 503, 504)
    return isinstance(e, (botocore.exceptions.ConnectionError, botocore.exceptions.HTTPClientError))


def api_call(what: str, fn: Callable[..., T], **kwargs: Any) -> T:
    """``fn(**kwargs)`` with botocore's failures raised as one-line :class:`AWSBatchError`s.

    ``what`` names the call for the message (``"describe the job queue q"``). An outage
    is ridden out within the retry budget of :mod:`torchx.util.support.retry`.
    """

    read = getattr(fn, "__name__", "").startswith(_READ_PREFIXES)
    try:
        return retry_call(
            lambda: fn(**kwargs),
            service="AWS",
            is_transient=lambda e: _transient(e, read),
        )
    except ServiceUnavailableError as e:  # gave up on an outage: say so after the error
        last = e.last if isinstance(e.last, Exception) else e
        raise _one_line(what, last, f" ({e.retried})") from e
    except Exception as e:
        raise _one_line(what, e) from e


def _one_line(what: str, e: Exception, note: str = "") -> Exception:
    """The one-line error for botocore's failure ``e`` of the call ``what``, ``note``
    appended (``e`` itself when it is not botocore's)."""
    error = _botocore_error(what, e)
    if note and isinstance(error, AWSBatchError):
        return type(error)(f"{error}{note}", error.code)
    return error


def _botocore_error(what: str, e: Exception) -> Exception:
    import botocore.exceptions as bx

    if isinstance(e, bx.ClientError):
        error = e.response.get("Error", {})
        code = str(error.get("Code", "")) or type(e).__name__
        message = " ".join(str(error.get("Message", "") or e).split())
        if code in _REJECTED_CODES:
            return AWSCredentialsError(
                f"AWS rejected the request to {what} ({code}: {message}); check the"
                f" credentials and their permissions ({_CREDENTIALS_HINT})",
                code,
            )
        return AWSBatchError(f"could not {what}: {code}: {message}", code)
    if isinstance(e, bx.NoCredentialsError):
        return AWSCredentialsError(f"no AWS credentials found; {_CREDENTIALS_HINT}")
    if isinstance(e, bx.NoRegionError):
        return AWSRegionError("no AWS region is configured; set AWS_DEFAULT_REGION (or AWS_REGION)")
    if isinstance(e, bx.EndpointConnectionError):
        return AWSBatchError(
            f"could not {what}: cannot reach"
            f" {mask_url(str(e.kwargs.get('endpoint_url', 'AWS')))};"
            " check the network, the region and AWS_ENDPOINT_URL"
        )
    if isinstance(e, bx.BotoCoreError):
        return AWSBatchError(f"could not {what}: {' '.join(str(e).split())}")
    return e
