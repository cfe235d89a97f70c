"""TorchX app specs: describe an app once (:class:`AppDef` of :class:`Role` s), run it anywhere.

Importing this package is cheap by design (see docs/design.md): named resources are
discovered on first lookup and heavier helpers (``materialize_appdef``, the named-resource
tables) are loaded on first attribute access.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from torchx.specs._resource_library import (
    GiB,
    ResourceFactory,
    get_named_resources,
    load_custom_named_resources,
    named_resources,
    resource,
)
from torchx.specs.api import (
    ALL,
    MISSING,
    NONE,
    NULL_RESOURCE,
    TORCHX_HOME,
    UNKNOWN,
    AppDef,
    AppDryRunInfo,
    AppHandle,
    BindMount,
    CfgVal,
    DeviceMount,
    InvalidRunConfigException,
    MalformedAppHandleException,
    MountType,
    ParsedAppHandle,
    Resource,
    RetryPolicy,
    Role,
    UnknownAppException,
    UnknownSchedulerException,
    VolumeMount,
    Workspace,
    cases,
    get_type_name,
    macros,
    make_app_handle,
    parse_app_handle,
    parse_mounts,
    runopt,
    runopts,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from torchx.specs.attempts import Attempt
    from torchx.specs.builders import materialize_appdef
    from torchx.specs.capabilities import CapabilityKey
    from torchx.specs.failure import Failure
    from torchx.specs.metadata_keys import NA, TORCHX_CONTEXT_NAME, app_metadata
    from torchx.specs.progress import Progress
    from torchx.specs.status import (
        AppState,
        AppStatus,
        AppStatusError,
        ArrayStatus,
        ReplicaState,
        ReplicaStatus,
        RoleStatus,
        is_started,
        is_terminal,
    )
    from torchx.specs.sweep import AppArray, ArrayElement, app_array
    from torchx.specs.timeline import Phase, Waiting
    from torchx.specs.vocabulary import Cause, PhaseName

__all__ = [
    "ALL",
    "MISSING",
    "NA",
    "NONE",
    "NULL_RESOURCE",
    "TORCHX_CONTEXT_NAME",
    "TORCHX_HOME",
    "UNKNOWN",
    "AppArray",
    "AppDef",
    "AppDryRunInfo",
    "AppHandle",
    "AppState",
    "AppStatus",
    "AppStatusError",
    "ArrayElement",
    "ArrayStatus",
    "Attempt",
    "BindMount",
    "CapabilityKey",
    "Cause",
    "CfgVal",
    "DeviceMount",
    "Failure",
    "GiB",
    "InvalidRunConfigException",
    "MalformedAppHandleException",
    "MountType",
    "ParsedAppHandle",
    "Phase",
    "PhaseName",
    "Progress",
    "ReplicaState",
    "ReplicaStatus",
    "Resource",
    "ResourceFactory",
    "RetryPolicy",
    "Role",
    "RoleStatus",
    "UnknownAppException",
    "UnknownSchedulerException",
    "VolumeMount",
    "Waiting",
    "Workspace",
    "app_array",
    "app_metadata",
    "cases",
    "get_named_resources",
    "get_type_name",
    "is_started",
    "is_terminal",
    "macros",
    "make_app_handle",
    "materialize_appdef",
    "named_resources",
    "parse_app_handle",
    "parse_mounts",
    "resource",
    "runopt",
    "runopts",
]

_named_resource_factories = named_resources.factories()
"""Compat: writable ``name -> factory`` view of the named-resource table (seed doctests)."""


# name -> (module, attribute): loaded on first access so that ``import torchx.specs`` stays
# within its start-up budget (docs/design.md).
_LAZY: dict[str, tuple[str, str]] = {
    **{
        name: ("torchx.specs.status", name)
        for name in ("AppStatus", "AppStatusError", "ReplicaStatus", "RoleStatus", "ArrayStatus")
    },
    **{
        name: ("torchx.specs.states", name)
        for name in ("AppState", "ReplicaState", "is_started", "is_terminal")
    },
    **{name: ("torchx.specs.sweep", name) for name in ("AppArray", "ArrayElement", "app_array")},
    "CapabilityKey": ("torchx.specs.capabilities", "CapabilityKey"),
    "Failure": ("torchx.specs.failure", "Failure"),
    "Attempt": ("torchx.specs.attempts", "Attempt"),
    "Phase": ("torchx.specs.timeline", "Phase"),
    "Waiting": ("torchx.specs.timeline", "Waiting"),
    "Progress": ("torchx.specs.progress", "Progress"),
    "Cause": ("torchx.specs.vocabulary", "Cause"),
    "PhaseName": ("torchx.specs.vocabulary", "PhaseName"),
    "NA": ("torchx.specs.metadata_keys", "NA"),
    "TORCHX_CONTEXT_NAME": ("torchx.specs.metadata_keys", "TORCHX_CONTEXT_NAME"),
    "app_metadata": ("torchx.specs.metadata_keys", "app_metadata"),
    "materialize_appdef": ("torchx.specs.builders", "materialize_appdef"),
    "AWS_NAMED_RESOURCES": ("torchx.specs.named_resources_aws", "NAMED_RESOURCES"),
    "GENERIC_NAMED_RESOURCES": ("torchx.specs.named_resources_generic", "NAMED_RESOURCES"),
}


def _custom_named_resources() -> dict[str, Callable[[], Resource]]:
    return load_custom_named_resources()


def __getattr__(name: str) -> Any:
    if name in ("CUSTOM_NAMED_RESOURCES", "FB_NAMED_RESOURCES"):
        value: Any = _custom_named_resources()
    elif name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
    else:
        raise AttributeError(f"module 'torchx.specs' has no attribute {name!r}")
    globals()[name] = value
    return value
