"""The ``local_docker`` request: run options, the containers of an app, their names.

Pure: nothing here talks to the daemon (``--dryrun`` needs none).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from torchx.schedulers.api import HELP_KEY, StructuredOpts
from torchx.schedulers.devices import get_device_mounts
from torchx.schedulers.ids import make_unique
from torchx.schedulers.shared import labels
from torchx.settings import ENV_TORCHX_ATTEMPT, ENV_TORCHX_IMAGE
from torchx.specs.api import AppDef, BindMount, DeviceMount, VolumeMount, macros
from torchx.specs.replica_macros import ReplicaMacros
from torchx.specs.sweep import AppArray
from torchx.util.startup.lazy_dataclass import dataclass, field
from torchx.version import __version__

__all__ = [
    "LABEL_APP_ID",
    "LABEL_CANCELLED",
    "LABEL_PULLED",
    "LABEL_REPLICA_ID",
    "LABEL_RESTARTABLE",
    "LABEL_ROLE_NAME",
    "LABEL_SUBMITTED",
    "LABEL_VERSION",
    "NETWORK",
    "RANK0_ENV",
    "DockerContainer",
    "DockerJob",
    "DockerOpts",
    "Opts",
    "assemble",
]

NETWORK = "torchx"
RANK0_ENV = "TORCHX_RANK0_HOST"

LABEL_VERSION = labels.VERSION
LABEL_APP_ID = labels.APP_ID
LABEL_ROLE_NAME = labels.ROLE_NAME
LABEL_REPLICA_ID = labels.REPLICA_ID
LABEL_CANCELLED = labels.CANCELLED
LABEL_RESTARTABLE = f"{labels.DOMAIN}/restartable"
"""On a container Docker may restart (``max_retries``): its state is inspected, not listed,
to count the restarts of one that ended well."""

LABEL_SUBMITTED = f"{labels.DOMAIN}/submitted"
"""When ``schedule`` began (unix seconds): the start of the app's timeline."""
LABEL_PULLED = f"{labels.DOMAIN}/pulled"
"""``<unix seconds> <image>...``: when ``schedule`` finished pulling the images it pulled."""
_ENV_NAME = re.compile(r"^[^=\0]+$")
_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_.-]")


@dataclass
class Opts(StructuredOpts):
    """Run options of ``local_docker`` (the workspace adds ``image_repo``, ``quiet``,
    ``build_args``)."""

    copy_env: list[str] | None = field(
        default=None,
        metadata={
            HELP_KEY: "glob patterns of launcher env vars to copy into the containers"
            " (e.g. 'AWS_*,WANDB_API_KEY'); the role's env wins"
        },
    )
    env: dict[str, str] | None = field(
        default=None,
        metadata={
            HELP_KEY: "env vars to set in the containers, KEY:VALUE pairs separated by ','"
            " or ';' (applied over copy_env; the role's env wins)"
        },
    )
    privileged: bool = field(
        default=False, metadata={HELP_KEY: "run the containers in privileged mode"}
    )


DockerOpts = Opts
"""Compat name of :class:`Opts` (the options were a TypedDict called ``DockerOpts``)."""


_COUNT_ATTEMPTS = [
    "/bin/sh",
    "-c",
    "n=$(cat /tmp/.torchx-attempt 2>/dev/null || echo -1); n=$((n + 1));"
    f' echo "$n" >/tmp/.torchx-attempt 2>/dev/null; export {ENV_TORCHX_ATTEMPT}="$n"; exec "$@"',
    "torchx-attempt",
]
"""Prefix of a restartable replica's command: Docker restarts a container in place with the
same environment, so the attempt is counted in a file of the container's own filesystem
(which a restart keeps) and exported before the replica's program replaces the shell.
Used only where the image has ``/bin/sh``: in one without a shell (distroless, scratch)
the role's command runs as given, and ``$TORCHX_ATTEMPT`` stays 0 across restarts."""

COUNT_ATTEMPTS_NOTE = (
    "the /bin/sh -c prefix counts Docker's restarts ($TORCHX_ATTEMPT); a real run drops it"
    " when the image has no /bin/sh (looked for at submit), and the role's command then"
    " runs as given"
)
"""What a dry run says beside a command with :data:`_COUNT_ATTEMPTS` (a dry run does not
look into the image)."""


@dataclass
class DockerContainer:
    """One container to start: image, command and the ``containers.create`` keyword args.

    ``kwargs`` hold plain data in the docker SDK's high-level names (``name``,
    ``environment``, ``labels``, ``mounts`` as Engine API dicts, ...); a role's
    ``pre_proc`` may edit them.
    """

    image: str
    command: list[str]
    kwargs: dict[str, Any] = field(default_factory=dict)


LABEL_ARRAY = f"{labels.DOMAIN}/array"
"""A sweep element's container: its index in the sweep, its values and the sweep's size
(JSON)."""


@dataclass
class DockerJob:
    """The request of ``local_docker``: the app id and one container per replica."""

    app_id: str
    containers: list[DockerContainer]
    max_parallel: int | None = None
    """A sweep's: at most this many of its containers (its elements) run at once."""

    def __str__(self) -> str:
        docs: list[dict[str, Any]] = []
        for c in self.containers:
            doc: dict[str, Any] = {"image": c.image, "command": c.command, "kwargs": c.kwargs}
            if c.command[: len(_COUNT_ATTEMPTS)] == _COUNT_ATTEMPTS:
                doc["note"] = COUNT_ATTEMPTS_NOTE
            docs.append(doc)
        return json.dumps(docs, indent=2, default=str)

    def __repr__(self) -> str:
        return str(self)


def _container_name_prefix(app_id: str, role_name: str) -> str:
    """``<app_id[-30:]>-<role[:30]>``, made a valid start of a container name/hostname."""
    return _NAME_CHARS.sub("-", f"{app_id[-30:]}-{role_name[:30]}").lstrip("_.-") or "torchx"


def _container_name(app_id: str, role_name: str, replica_id: int) -> str:
    """``<app_id[-30:]>-<role[:30]>-<replica>``: a valid container name and hostname."""
    return f"{_container_name_prefix(app_id, role_name)}-{replica_id}"


def app_id_base(name: str) -> str:
    """The part of an app's id its name gives (``make_unique`` adds the random rest)."""
    return _NAME_CHARS.sub("-", name).strip("_.-")[:40] or "app"


def _mount_dicts(
    mounts: Iterable[BindMount | VolumeMount | DeviceMount],
) -> tuple[list[dict[str, Any]], list[str]]:
    binds: list[dict[str, Any]] = []
    devices: list[str] = []
    for mount in mounts:
        if isinstance(mount, BindMount):
            binds.append(
                {
                    "Target": mount.dst_path,
                    "Source": mount.src_path,
                    "Type": "bind",
                    "ReadOnly": mount.read_only,
                }
            )
        elif isinstance(mount, VolumeMount):
            binds.append(
                {
                    "Target": mount.dst_path,
                    "Source": mount.src,
                    "Type": "volume",
                    "ReadOnly": mount.read_only,
                }
            )
        else:
            devices.append(f"{mount.src_path}:{mount.dst_path}:{mount.permissions}")
    return binds, devices


def _check_env_names(env: Mapping[str, str], where: str) -> None:
    for key in env:
        if not _ENV_NAME.match(key):
            raise ValueError(
                f"invalid env var name {key!r} in {where}; names must be non-empty and"
                " contain no '='"
            )


def _base_env(opts: Opts) -> dict[str, str]:
    env: dict[str, str] = {}
    if opts.copy_env:
        for pattern in opts.copy_env:
            env.update({k: v for k, v in os.environ.items() if fnmatch.fnmatchcase(k, pattern)})
    if opts.env:  # a dict[str, str]: runopts.resolve has checked the type
        _check_env_names(opts.env, "the `env` run option")
        env.update(opts.env)
    return env


def assemble(app: AppDef, opts: Opts, app_id: str | None = None) -> DockerJob:
    """The containers of ``app``, one per replica, under ``app_id`` (a new one when not
    given; no daemon needed)."""
    base_env = _base_env(opts)
    app_id = app_id or make_unique(app_id_base(app.name))
    rank0_host = _container_name(app_id, app.roles[0].name, 0)
    containers: list[DockerContainer] = []

    array = app if isinstance(app, AppArray) else None
    for role in app.roles:
        _check_env_names(role.env, f"the env of role `{role.name}`")
        resource = role.resource
        binds, devices = _mount_dicts(
            [*role.mounts, *get_device_mounts(resource.devices)]
            if resource.devices
            else role.mounts
        )
        role_env = {**base_env, **role.env}
        host_limits: dict[str, Any] = {}
        if resource.memMB >= 0:
            host_limits["mem_limit"] = f"{int(resource.memMB)}m"
            host_limits["shm_size"] = f"{int(resource.memMB)}m"
        if resource.cpu >= 0:
            host_limits["nano_cpus"] = int(resource.cpu * 1e9)
        if resource.gpu > 0:
            host_limits["device_requests"] = [
                {"count": resource.gpu, "capabilities": [["compute", "utility"]]}
            ]
        if role.max_retries > 0:
            host_limits["restart_policy"] = {
                "Name": "on-failure",
                "MaximumRetryCount": role.max_retries,
            }
        subst = ReplicaMacros(role.args, role_env)
        mapping = macros.Values(
            img_root="", app_id=app_id, replica_id="0", rank0_env=RANK0_ENV
        ).to_dict()
        shared = None if subst.per_replica else subst.apply(mapping)
        image = role.image
        entrypoint, role_name = role.entrypoint, role.name
        # the command is the same for every replica unless a macro differs per replica
        shared_command = json.dumps([entrypoint, *shared[0]]) if shared else None
        name_prefix = _container_name_prefix(app_id, role_name)
        privileged = bool(opts.privileged)
        count = len(array.elements) if array is not None else role.num_replicas
        for replica_id in range(count):
            rid = str(replica_id)
            name = f"{name_prefix}-{rid}"
            mapping["replica_id"] = rid
            if array is not None:  # a sweep's element: its own args and env
                element = array.element_role(replica_id)
                _check_env_names(element.env, f"the env of role `{role.name}`")
                args, env = ReplicaMacros(element.args, {**base_env, **element.env}).apply(mapping)
            elif shared is None:
                args, env = subst.apply(mapping)
            else:
                args, env = shared[0], dict(shared[1])
            env[RANK0_ENV] = rank0_host
            env[ENV_TORCHX_IMAGE] = image
            env[ENV_TORCHX_ATTEMPT] = "0"
            kwargs: dict[str, Any] = {
                "name": name,
                "hostname": name,
                "environment": env,
                "labels": {
                    LABEL_VERSION: __version__,
                    LABEL_APP_ID: app_id,
                    labels.APP_NAME: app.name,
                    LABEL_ROLE_NAME: role_name,
                    LABEL_REPLICA_ID: rid,
                    labels.COMMAND: (shared_command if array is None else None)
                    or json.dumps([entrypoint, *args]),
                    **labels.request_labels(env),
                },
                "network": NETWORK,
                "privileged": privileged,
                "init": True,
                "mounts": [dict(b) for b in binds],
                "devices": list(devices),
                **host_limits,
            }
            command = [entrypoint, *args]
            if role.max_retries > 0:  # Docker restarts it in place: count in the container
                command = [*_COUNT_ATTEMPTS, *command]
                kwargs["labels"][LABEL_RESTARTABLE] = "1"
            if array is not None:
                element_of = array.elements[replica_id]
                kwargs["labels"][LABEL_ARRAY] = json.dumps(
                    {
                        "index": element_of.index,
                        "values": element_of.values,
                        "size": array.size_of(),
                    },
                    separators=(",", ":"),
                )
            containers.append(DockerContainer(image, command, kwargs))
    return DockerJob(
        app_id=app_id,
        containers=containers,
        max_parallel=array.max_parallel if array is not None else None,
    )
