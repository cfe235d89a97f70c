"""The ``torchx.pytorch.org/...`` keys of the labels and tags TorchX puts on what it creates.

Containers, pods, Batch jobs and images are found again (``describe``, ``list``, the
image cache) by these keys, and tools outside TorchX filter on them, so every backend
spells them from here. The backends keep their upstream public names for them
(``kubernetes_scheduler.LABEL_VERSION``, ``aws_batch_scheduler.TAG_TORCHX_VER``, ...).
"""

from collections.abc import Mapping

from torchx.schedulers.ids import ENV_REQUEST, ENV_REQUEST_HASH

__all__ = [
    "APP_ID",
    "APP_NAME",
    "CANCELLED",
    "COMMAND",
    "DOMAIN",
    "JOB_TYPE",
    "REPLICA_ID",
    "REQUEST",
    "REQUEST_HASH",
    "ROLE_INDEX",
    "ROLE_NAME",
    "USER",
    "VERSION",
    "WORKSPACE_HASH",
    "request_env",
    "request_labels",
]

DOMAIN = "torchx.pytorch.org"
"""Also the ``app.kubernetes.io/managed-by`` value of TorchX's Kubernetes objects."""

VERSION = f"{DOMAIN}/version"
"""The TorchX version that created the object."""
APP_ID = f"{DOMAIN}/app-id"
APP_NAME = f"{DOMAIN}/app-name"
ROLE_INDEX = f"{DOMAIN}/role-index"
ROLE_NAME = f"{DOMAIN}/role-name"
REPLICA_ID = f"{DOMAIN}/replica-id"
JOB_TYPE = f"{DOMAIN}/job-type"
USER = f"{DOMAIN}/user"
CANCELLED = f"{DOMAIN}/cancelled"
"""Marks a local_docker app that ``torchx cancel`` stopped (the daemon cannot tell)."""
COMMAND = f"{DOMAIN}/command"
"""The replica's command (entrypoint and args) as a JSON list, where the backend's own
record of it is lossy (Docker lists a container's command as one string)."""
REQUEST_HASH = f"{DOMAIN}/request-hash"
"""The hash of the request an idempotency key's app was made from (its env's
``TORCHX_REQUEST_HASH``), where the backend lists its objects without their env."""
REQUEST = f"{DOMAIN}/request"
"""The words that made that app (its env's ``TORCHX_REQUEST``), beside the hash."""
WORKSPACE_HASH = f"{DOMAIN}/workspace-hash"
"""Content hash of the workspace an image was built from (the image workspace's cache)."""


def request_labels(env: Mapping[str, str]) -> dict[str, str]:
    """The labels that keep an idempotency key's request (:data:`REQUEST_HASH`,
    :data:`REQUEST`) from a replica's ``env``; none for an app run without a key."""
    if ENV_REQUEST_HASH not in env:
        return {}
    return {REQUEST_HASH: env[ENV_REQUEST_HASH], REQUEST: env.get(ENV_REQUEST, "")}


def request_env(found: Mapping[str, str]) -> dict[str, str]:
    """The request's env (``TORCHX_REQUEST_HASH``, ``TORCHX_REQUEST``) from ``found``
    labels, as a role's env reads back; empty where they keep none."""
    if REQUEST_HASH not in found:
        return {}
    return {ENV_REQUEST_HASH: found[REQUEST_HASH], ENV_REQUEST: found.get(REQUEST, "")}
