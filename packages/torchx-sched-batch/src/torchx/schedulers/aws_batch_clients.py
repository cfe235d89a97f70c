"""boto3 clients for ``aws_batch`` and the translation of AWS failures into one-line errors.

Clients come from the standard boto3 chain (env vars, ``AWS_PROFILE``, ``~/.aws``, SSO,
instance roles; ``AWS_ENDPOINT_URL`` too), one ``boto3`` session per thread because sessions
are not thread-safe. ``boto3`` is imported on the first client, never at module import.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

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
    return client_of(session, service)


def new_session() -> Any:
    """A boto3 session from the standard chain (an empty AWS_DEFAULT_REGION falls back to
    AWS_REGION, as a user setting both would expect)."""
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
    import logging

    for name in ("botocore.credentials", "botocore.configprovider", "botocore.tokens"):
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


def api_call(what: str, fn: Callable[..., T], **kwargs: Any) -> T:
    """``fn(**kwargs)`` with botocore's failures raised as one-line :class:`AWSBatchError`s.

    ``what`` names the call for the message (``"describe the job queue q"``).
    """
    import botocore.exceptions

    try:
        return fn(**kwargs)
    except botocore.exceptions.ClientError as e:
        error = e.response.get("Error", {})
        code = str(error.get("Code", "")) or type(e).__name__
        message = " ".join(str(error.get("Message", "") or e).split())
        if code in _REJECTED_CODES:
            raise AWSCredentialsError(
                f"AWS rejected the request to {what} ({code}: {message}); check the"
                f" credentials and their permissions ({_CREDENTIALS_HINT})",
                code,
            ) from e
        raise AWSBatchError(f"could not {what}: {code}: {message}", code) from e
    except botocore.exceptions.NoCredentialsError as e:
        raise AWSCredentialsError(f"no AWS credentials found; {_CREDENTIALS_HINT}") from e
    except botocore.exceptions.NoRegionError as e:
        raise AWSRegionError(
            "no AWS region is configured; set AWS_DEFAULT_REGION (or AWS_REGION)"
        ) from e
    except botocore.exceptions.EndpointConnectionError as e:
        raise AWSBatchError(
            f"could not {what}: cannot reach {e.kwargs.get('endpoint_url', 'AWS')};"
            " check the network, the region and AWS_ENDPOINT_URL"
        ) from e
    except botocore.exceptions.BotoCoreError as e:
        raise AWSBatchError(f"could not {what}: {' '.join(str(e).split())}") from e
