"""The TorchX data model: apps, roles, resources, mounts, macros, run configs and statuses.

Everything here is plain data plus small helpers; schedulers turn an :class:`AppDef` into
their native request. Importing this module imports neither ``dataclasses`` nor ``inspect``
(see :mod:`torchx.util.startup.lazy_dataclass`).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Mapping
from collections.abc import Mapping as _Mapping
from enum import Enum

from torchx.specs._common import (
    ALL,
    MISSING,
    NONE,
    SCHEDULER_DISTRIBUTIONS,
    TORCHX_HOME,
    UNKNOWN,
    AppHandle,
    InvalidRunConfigException,
    MalformedAppHandleException,
    ParsedAppHandle,
    UnknownAppException,
    UnknownSchedulerException,
    cases,
    make_app_handle,
    parse_app_handle,
)
from torchx.specs._runopts import CfgVal, get_type_name, runopt, runopts
from torchx.specs._workspace_spec import Workspace
from torchx.util.startup.lazy_dataclass import asdict, dataclass, deep_copy, field
from torchx.util.startup.static_typing import GenericBase

# `typing` (with the `re`, `warnings` and `contextlib` it imports) is a quarter of this
# package's import: it is needed here for the type checker only
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from torchx.specs.status import (
        AppState,
        AppStatus,
        AppStatusError,
        ReplicaState,
        ReplicaStatus,
        RoleStatus,
        is_started,
        is_terminal,
    )

# Status types are needed only once an app runs; loading them on first use keeps
# ``import torchx.specs`` within its start-up budget.
_LAZY_STATUS_NAMES = frozenset(
    {
        "AppState",
        "AppStatus",
        "AppStatusError",
        "ReplicaState",
        "ReplicaStatus",
        "RoleStatus",
        "is_started",
        "is_terminal",
    }
)


def __getattr__(name: str) -> Any:
    if name == "CfgT":  # upstream head's TypeVar of a run config, made when first asked for
        from typing import TypeVar as _TypeVar

        CfgT = _TypeVar("CfgT", bound=_Mapping[str, CfgVal])
        globals()[name] = CfgT
        return CfgT
    if name in _LAZY_STATUS_NAMES:
        import importlib

        # the states on their floor: an app's state needs no status type
        floor = name in ("AppState", "ReplicaState", "is_started", "is_terminal")
        module = importlib.import_module("torchx.specs.states" if floor else "torchx.specs.status")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'torchx.specs.api' has no attribute {name!r}")


__all__ = [
    "ALL",
    "MISSING",
    "NONE",
    "NULL_RESOURCE",
    "RESET",
    "SCHEDULER_DISTRIBUTIONS",
    "TORCHX_HOME",
    "UNKNOWN",
    "YELLOW_BOLD",
    "AppDef",
    "AppDryRunInfo",
    "AppHandle",
    "AppState",
    "AppStatus",
    "AppStatusError",
    "BindMount",
    "CfgVal",
    "DeviceMount",
    "InvalidRunConfigException",
    "MalformedAppHandleException",
    "MountType",
    "ParsedAppHandle",
    "ReplicaState",
    "ReplicaStatus",
    "Resource",
    "RetryPolicy",
    "Role",
    "RoleStatus",
    "UnknownAppException",
    "UnknownSchedulerException",
    "VolumeMount",
    "Workspace",
    "cases",
    "get_type_name",
    "is_started",
    "is_terminal",
    "macros",
    "make_app_handle",
    "parse_app_handle",
    "parse_mounts",
    "runopt",
    "runopts",
]

YELLOW_BOLD = "\033[1;33m"
"""Terminal escape: bold yellow (upstream's public name; status output colours itself)."""
RESET = "\033[0m"
"""Terminal escape: back to the default style."""

# Tags written by named-resource registration (see torchx.specs named resources).
_TAG_RESOURCE_NAME = "torchx/named_resources.name"
_TAG_IS_FRACTIONAL = "torchx/named_resources.is_fractional"


@dataclass
class Resource:
    """What one replica of a role needs: cpu cores, gpus, memory (MB) and extras.

    Attributes:
        cpu: CPU cores (a scheduler rounds or maps them to what it allocates).
        gpu: GPUs.
        memMB: memory in MB.
        capabilities: scheduler-interpreted constraints, e.g. an instance type.
        devices: named devices to counts, e.g. ``{"vpc.amazonaws.com/efa": 4}``.
        tags: non-functional metadata, such as the named resource the value came from
            (``get_resource_name()``, ``is_fractional()``).
    """

    cpu: int
    gpu: int
    memMB: int
    capabilities: dict[str, Any] = field(default_factory=dict)
    devices: dict[str, int] = field(default_factory=dict)
    tags: dict[str, object] = field(default_factory=dict)

    @staticmethod
    def copy(original: Resource, **capabilities: Any) -> Resource:
        """A copy of ``original`` whose capabilities are updated with ``capabilities``."""
        return Resource(
            cpu=original.cpu,
            gpu=original.gpu,
            memMB=original.memMB,
            capabilities={**original.capabilities, **capabilities},
            devices=dict(original.devices),
            tags=dict(original.tags),
        )

    def is_fractional(self) -> bool:
        """True for a named resource that is a fraction of a whole host."""
        return bool(self.tags.get(_TAG_IS_FRACTIONAL))

    def get_resource_name(self) -> str | None:
        """The named resource this value came from, if it was looked up by name."""
        name = self.tags.get(_TAG_RESOURCE_NAME)
        return None if name is None else str(name)


NULL_RESOURCE: Resource = Resource(cpu=-1, gpu=-1, memMB=-1)
"""Placeholder meaning "no resource was specified"."""


class MountType(str, Enum):
    BIND = "bind"
    VOLUME = "volume"
    DEVICE = "device"


@dataclass
class BindMount:
    """Mounts a host path into the container."""

    src_path: str
    dst_path: str
    read_only: bool = False


@dataclass
class VolumeMount:
    """Mounts a named volume (docker volume, PVC claim, EFS id...) into the container."""

    src: str
    dst_path: str
    read_only: bool = False


@dataclass
class DeviceMount:
    """Exposes a host device (e.g. ``/dev/fuse``) inside the container."""

    src_path: str
    dst_path: str
    permissions: str = "rwm"


_MOUNT_KEYS = {
    "type": "type",
    "src": "src",
    "source": "src",
    "dst": "dst",
    "destination": "dst",
    "target": "dst",
    "readonly": "readonly",
    "read_only": "readonly",
    "perm": "perm",
}
_MOUNT_HELP = "type=bind|volume|device,src=SRC[,dst=DST][,readonly][,perm=rwm]"


def parse_mounts(opts: list[str]) -> list[BindMount | VolumeMount | DeviceMount]:
    """Parses mount options given as ``key=value`` tokens (a comma-split ``--mounts`` value).

    ``["type=bind", "src=/a", "dst=/b", "readonly"]`` -> ``[BindMount("/a", "/b", True)]``.
    Each ``type=`` token starts a new mount.
    """
    groups: list[dict[str, str]] = []
    for token in opts:
        key, _, value = token.partition("=")
        canonical = _MOUNT_KEYS.get(key.strip().lower())
        if canonical is None:
            raise KeyError(
                f"unknown mount option {key!r} in {token!r}; accepted keys:"
                f" {', '.join(sorted(_MOUNT_KEYS))} (form: {_MOUNT_HELP})"
            )
        if canonical == "type":
            groups.append({"type": value.strip()})
            continue
        if not groups:
            raise KeyError(
                f"mount option {token!r} comes before any type=...; type must be specified"
                f" first (form: {_MOUNT_HELP})"
            )
        groups[-1][canonical] = value

    mounts: list[BindMount | VolumeMount | DeviceMount] = []
    for group in groups:
        kind = group["type"]

        def need(key: str, group: dict[str, str] = group, kind: str = kind) -> str:
            if not group.get(key):
                raise KeyError(f"{kind} mount {group} is missing {key}=...; form: {_MOUNT_HELP}")
            return group[key]

        if kind == MountType.BIND.value:
            src = need("src")
            if src.startswith("~"):
                src = os.path.expanduser(src)
            mounts.append(BindMount(src, need("dst"), "readonly" in group))
        elif kind == MountType.VOLUME.value:
            mounts.append(VolumeMount(need("src"), need("dst"), "readonly" in group))
        elif kind == MountType.DEVICE.value:
            src = need("src")
            perm = group.get("perm", "rwm")
            bad = [c for c in perm if c not in "rwm"]
            if bad:
                raise ValueError(
                    f"invalid device permissions {perm!r}; use a combination of r, w and m"
                )
            mounts.append(DeviceMount(src, group.get("dst") or src, perm))
        else:
            raise ValueError(f"invalid mount type {kind!r}; accepted types: bind, volume, device")
    return mounts


class RetryPolicy(str, Enum):
    """What a scheduler restarts when a replica fails (up to ``Role.max_retries`` times).

    ``REPLICA`` replaces only the failed replica, ``ROLE`` restarts the failing role and
    ``APPLICATION`` (supported by every scheduler) restarts the whole app.
    """

    REPLICA = "REPLICA"
    APPLICATION = "APPLICATION"
    ROLE = "ROLE"


class _ResolvedOverride:
    """Marks an ``overrides`` entry whose value was already computed."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


def _run_awaitable(awaitable: Any) -> Any:
    import asyncio

    async def wait() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    if isinstance(awaitable, asyncio.Future):
        raise RuntimeError(
            "a Role override is a future bound to the event loop running in this thread;"
            " await it yourself before reading the attribute"
        )
    # A loop is running here: drive the awaitable to completion on a private loop.
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wait()).result()


# One lock for all roles: resolving an override is rare and must happen exactly once.
_OVERRIDE_LOCK = threading.RLock()


class _RoleType(type):
    """Warns when the deprecated ``Role.base_image`` is given (constructor or
    ``dataclasses.replace``): it stays a readable field, but every scheduler ignores it.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("base_image") is not None:
            warnings.warn(
                "[Deprecated] `Role(base_image=...)` is ignored by every scheduler and will"
                " be removed; put everything the role needs in `image`",
                UserWarning,
                stacklevel=2,
            )
        return super().__call__(*args, **kwargs)


@dataclass
class Role(metaclass=_RoleType):
    """A set of identical replicas (nodes) that run the same entrypoint in the same image.

    Attributes:
        name: the role's name; replicas are ``name/0``, ``name/1``, ... in logs and handles.
        image: what the replicas run in: a directory on ``local_cwd`` and Slurm, a container
            image elsewhere.
        min_replicas: the fewest replicas an elastic job may run with (None: all of them).
        entrypoint: the program each replica runs.
        args: its arguments (``macros`` are replaced per replica).
        env: environment variables of each replica (``macros`` replaced in values).
        num_replicas: how many replicas (nodes).
        max_retries: how many times a failed replica, role or app is started again.
        retry_policy: what is restarted when a replica fails (``RetryPolicy``).
        resource: what each replica needs (``Resource``).
        port_map: named ports the replicas listen on (e.g. ``{"c10d": 29500}``).
        metadata: scheduler-interpreted settings of the role.
        mounts: bind, volume and device mounts (``BindMount``, ``VolumeMount``,
            ``DeviceMount``).
        workspace: local files the scheduler ships with the role (a directory, or a mapping
            of directories), see ``Workspace``.
        overrides: deprecated: attribute names to callables or awaitables, evaluated once
            on first read of that attribute.

    ``base_image`` (deprecated) is a field so code written against the old docs (which
    read, copy or list it) keeps working; setting it warns, and every scheduler ignores it.
    """

    name: str
    image: str
    min_replicas: int | None = None
    entrypoint: str = MISSING
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    num_replicas: int = 1
    max_retries: int = 0
    retry_policy: RetryPolicy = RetryPolicy.APPLICATION
    resource: Resource = field(default_factory=lambda: NULL_RESOURCE)
    port_map: dict[str, int] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    mounts: list[BindMount | VolumeMount | DeviceMount] = field(default_factory=list)
    workspace: Workspace | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    base_image: str | None = None

    def __getattribute__(self, attrname: str) -> Any:
        if attrname.startswith("_") or attrname == "overrides":
            return object.__getattribute__(self, attrname)
        overrides = object.__getattribute__(self, "__dict__").get("overrides")
        if not overrides or attrname not in overrides:
            return object.__getattribute__(self, attrname)
        with _OVERRIDE_LOCK:
            entry = overrides[attrname]
            if not isinstance(entry, _ResolvedOverride):
                from inspect import isawaitable

                value = _run_awaitable(entry) if isawaitable(entry) else entry()
                entry = _ResolvedOverride(value)
                overrides[attrname] = entry
        object.__setattr__(self, attrname, entry.value)
        return entry.value

    def pre_proc(self, scheduler: str, dryrun_info: AppDryRunInfo[Any]) -> AppDryRunInfo[Any]:
        """Hook to adjust the scheduler request of this role's app; returns it unchanged."""
        return dryrun_info


@dataclass
class AppDef:
    """An application: a name, its roles and free-form (scheduler-interpreted) metadata.

    Attributes:
        name: the app's name; the app id a scheduler gives it starts with it.
        roles: the app's roles (``Role``), started together.
        metadata: scheduler-interpreted settings of the whole app.
    """

    name: str
    roles: list[Role] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def get_role(self, name: str) -> Role:
        """The first role named ``name`` (the object itself: edits to it are the app's).

        Raises:
            KeyError: no role has that name; the message lists the roles there are.
        """
        for role in self.roles:
            if role.name == name:
                return role
        names = ", ".join(role.name for role in self.roles) or "none"
        raise KeyError(f"app `{self.name}` has no role named `{name}`; its roles: {names}")

    def __getitem__(self, name: str) -> Role:
        """:meth:`get_role`: by the role's name, never by position."""
        return self.get_role(name)


AppDef.__iter__ = None  # type: ignore[attr-defined]
"""``for role in app`` is a mistake (``app.roles`` is meant): it raises ``TypeError``
instead of iterating ``__getitem__`` with positions."""


def _substitute_nested(value: Any, substitute: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return substitute(value)
    if isinstance(value, dict):
        return {k: _substitute_nested(v, substitute) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute_nested(v, substitute) for v in value]
    return value


class macros:
    """Placeholders in ``Role.args``, ``Role.env`` values and ``Role.metadata`` that the
    scheduler replaces at launch time (``string.Template`` syntax, ``$$`` escapes ``$``).

    * ``img_root``: where the image was unpacked (local_cwd: the working directory)
    * ``app_id``: the scheduler-assigned app id
    * ``replica_id``: the replica index within its role (``"0"``, ``"1"``, ...)
    * ``rank0_env``: the NAME of an env var that holds rank 0's host; expand it in a shell
      with ``$${rank0_env}``
    * ``base_img_root``: deprecated, always ``"DEPRECATED"``
    """

    img_root = "${img_root}"
    base_img_root = "${base_img_root}"
    app_id = "${app_id}"
    replica_id = "${replica_id}"
    rank0_env = "${rank0_env}"

    @dataclass
    class Values:
        """The values a scheduler substitutes for the macros of one replica."""

        img_root: str
        app_id: str
        replica_id: str
        rank0_env: str = ""
        base_img_root: str = "DEPRECATED"

        def apply(self, role: Role) -> Role:
            """A deep copy of ``role`` with the macros substituted.

            The copy shares ``role.overrides`` (its values may not be copyable).
            """
            overrides = role.overrides
            copied = deep_copy(role, memo={id(overrides): overrides})
            copied.args = [self.substitute(arg) for arg in copied.args]
            copied.env = {k: self.substitute(v) for k, v in copied.env.items()}
            copied.metadata = _substitute_nested(copied.metadata, self.substitute)
            return copied

        def substitute(self, arg: str) -> str:
            """Substitutes the macros in ``arg``; unknown ``${...}`` are left as they are."""
            from torchx.util.startup.macro_template import MacroTemplate

            return MacroTemplate(arg).safe_substitute(self.to_dict())

        def to_dict(self) -> dict[str, str]:
            return asdict(self)


if TYPE_CHECKING:
    T = TypeVar("T")
else:
    T = "T"  # the parameter's name: a TypeVar would need typing


class AppDryRunInfo(GenericBase[T]):
    """The scheduler request an app would be submitted as, printable through ``fmt``.

    ``app`` (the resolved app the request was rendered from) and ``cfg`` (the resolved run
    config) are filled in by ``Scheduler.submit_dryrun`` and are plain attributes, as
    upstream's head has them (``_app``/``_cfg`` name the same values); ``_scheduler`` by
    the runner, and ``idempotency_key``: the key the request was rendered for (its app's
    name is the key's, see :func:`torchx.schedulers.ids.keyed_ids`), which
    ``Runner.schedule`` submits it with.
    """

    def __init__(self, request: T, fmt: Callable[[T], str]) -> None:
        self.request = request
        self._fmt = fmt
        self._app: AppDef | None = None
        self._cfg: Mapping[str, CfgVal] = {}
        self._scheduler: str | None = None
        self.idempotency_key: str | None = None
        self.unbuilt: object | None = None
        """The runner's record of workspaces a dry run planned but did not build (rendered
        again, built, by ``Runner.schedule``); ``None``: nothing left to build."""

    @property
    def app(self) -> AppDef | None:
        return self._app

    @app.setter
    def app(self, value: AppDef | None) -> None:
        self._app = value

    @property
    def cfg(self) -> Mapping[str, CfgVal]:
        """The resolved run config: the object the scheduler was given (not a copy)."""
        return self._cfg

    @cfg.setter
    def cfg(self, value: Mapping[str, CfgVal]) -> None:
        self._cfg = value

    def __repr__(self) -> str:
        return self._fmt(self.request)
