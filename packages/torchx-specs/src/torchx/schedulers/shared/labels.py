"""The ``torchx.pytorch.org/...`` keys of the labels and tags TorchX puts on what it creates.

Containers, pods, Batch jobs and images are found again (``describe``, ``list``, the
image cache) by these keys, and tools outside TorchX filter on them, so every backend
spells them from here. The backends keep their upstream public names for them
(``kubernetes_scheduler.LABEL_VERSION``, ``aws_batch_scheduler.TAG_TORCHX_VER``, ...).
"""

__all__ = [
    "APP_ID",
    "APP_NAME",
    "CANCELLED",
    "COMMAND",
    "DOMAIN",
    "JOB_TYPE",
    "REPLICA_ID",
    "ROLE_INDEX",
    "ROLE_NAME",
    "USER",
    "VERSION",
    "WORKSPACE_HASH",
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
WORKSPACE_HASH = f"{DOMAIN}/workspace-hash"
"""Content hash of the workspace an image was built from (the image workspace's cache)."""
