"""The ``aws_batch`` request: run options, and an ``AppDef`` as a multi-node job definition
(pure data, no boto3).

One node range per role, never one per replica: Batch limits a job definition to five node
ranges (upstream TorchX issue #700), so a role of any size is one ``"start:end"`` range and
the app may have at most five roles. Every node of a role runs the same container
properties; what differs per node is resolved on the node:

* ``${replica_id}`` is the node's index within its role. A role of one replica gets ``0``;
  in a larger role the command is wrapped in ``/bin/sh -c`` and the index is computed from
  ``$AWS_BATCH_JOB_NODE_INDEX`` (set by Batch on every node) minus the role's first node.
  Arguments and env values are shell-quoted, so nothing the user wrote is ever evaluated.
* ``${rank0_env}`` names ``AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS`` (unset on the main
  node itself, hence ``${...:=localhost}`` in ``dist.ddp``); ``${app_id}`` is the job name.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

from torchx.schedulers.api import HELP_KEY, StructuredOpts
from torchx.schedulers.devices import get_device_mounts
from torchx.schedulers.ids import make_unique
from torchx.settings import (
    ENV_TORCHX_ATTEMPT,
    ENV_TORCHX_IMAGE,
    ENV_TORCHX_ROLE_IDX,
    ENV_TORCHX_ROLE_NAME,
)
from torchx.specs.api import (
    AppDef,
    BindMount,
    DeviceMount,
    Resource,
    Role,
    VolumeMount,
    macros,
)
from torchx.specs.named_resources_aws import K8S_ITYPE
from torchx.specs.sweep import shell_dispatch
from torchx.util.startup.lazy_dataclass import asdict, dataclass, field, shallow_copy
from torchx.util.strings import carried_env, is_shell_name
from torchx.util.support.user import current_user

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs.sweep import AppArray

__all__ = [
    "DEFAULT_ROLE_NAME",
    "ENV_TORCHX_IMAGE",
    "ENV_TORCHX_ROLE_IDX",
    "ENV_TORCHX_ROLE_NAME",
    "MAX_NODE_RANGES",
    "MAX_RETRY_ATTEMPTS",
    "PARAMETER",
    "RANK0_ENV",
    "AWSBatchOpts",
    "BatchJob",
    "Opts",
    "ResourceType",
    "array_job",
    "check_role_count",
    "job_name_for",
    "node_range",
    "node_ranges",
    "parse_target_nodes",
    "parse_ulimits",
    "resource_from_resource_requirements",
    "resource_requirements_from_resource",
    "retry_strategy",
]

DEFAULT_ROLE_NAME = "node"
RANK0_ENV = "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"
MAX_NODE_RANGES = 5
"""Batch accepts at most five node ranges (``nodeRangeProperties``) per job definition."""
MAX_RETRY_ATTEMPTS = 10
"""Batch's ``retryStrategy.attempts`` is 1..10 (so at most 9 retries)."""

_NAME_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_NAME_MAX = 100  # Batch allows 128; leave room for make_unique's "-<id>"
_REPLICA_MARK = "\0torchx-replica-id\0"
_NODE_INDEX_VAR = "AWS_BATCH_JOB_NODE_INDEX"
_ULIMIT = re.compile(r"^\s*([A-Za-z_]+)\s*:\s*(-?\d+)\s*:\s*(-?\d+)\s*$")


class ResourceType(str, Enum):
    """The ``type`` of a Batch ``resourceRequirements`` entry."""

    VCPU = "VCPU"
    GPU = "GPU"
    MEMORY = "MEMORY"

    @staticmethod
    def from_str(value: str) -> ResourceType:
        for member in ResourceType:
            if member.value == value.upper():
                return member
        raise ValueError(
            f"unknown AWS Batch resource type {value!r}; expected one of VCPU, GPU, MEMORY"
        )


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def resource_requirements_from_resource(resource: Resource) -> list[dict[str, str]]:
    """Batch ``resourceRequirements`` of ``resource``: VCPU (1 when unset), MEMORY, and GPU
    when it asks for any. Memory must be set: Batch requires it."""
    if resource.memMB <= 0:
        raise ValueError(
            f"resource {resource} has no memory (memMB={resource.memMB}); AWS Batch needs a"
            " MEMORY requirement: set memMB or use a named resource (-h/--h)"
        )
    reqs = [
        {
            "type": ResourceType.VCPU.value,
            "value": _number(resource.cpu if resource.cpu > 0 else 1),
        },
        {"type": ResourceType.MEMORY.value, "value": _number(resource.memMB)},
    ]
    if resource.gpu > 0:
        reqs.append({"type": ResourceType.GPU.value, "value": _number(resource.gpu)})
    return reqs


def resource_from_resource_requirements(reqs: Iterable[Mapping[str, str]]) -> Resource:
    """The ``Resource`` that :func:`resource_requirements_from_resource` was given (the
    capabilities and devices are not recoverable from Batch's requirements)."""
    values = {ResourceType.from_str(r["type"]): float(r["value"]) for r in reqs}
    return Resource(
        cpu=int(values.get(ResourceType.VCPU, 0)),
        gpu=int(values.get(ResourceType.GPU, 0)),
        memMB=int(values.get(ResourceType.MEMORY, 0)),
    )


def parse_ulimits(ulimits_list: Sequence[str]) -> list[dict[str, Any]]:
    """``["nofile:65536:65536", "memlock:-1:-1"]`` as Batch container ``ulimits``.

    Each item is ``name:soft:hard`` with integer limits (``-1``: unlimited).
    """
    ulimits: list[dict[str, Any]] = []
    for item in ulimits_list:
        match = _ULIMIT.match(str(item))
        if match is None:
            raise ValueError(
                f"malformed ulimit {item!r}; write each as name:soft:hard with integer"
                " limits, e.g. -cfg ulimits=nofile:65536:65536,memlock:-1:-1"
            )
        name, soft, hard = match.groups()
        ulimits.append({"name": name, "softLimit": int(soft), "hardLimit": int(hard)})
    return ulimits


def job_name_for(app_name: str, share_id: str | None = None) -> str:
    """A unique Batch job (and job definition) name for an app: letters, digits, ``-``
    and ``_`` only, starting with a letter or digit, at most 128 characters."""

    base = app_name + (f"-{share_id}" if share_id else "")
    base = _NAME_BAD_CHARS.sub("-", base).strip("-_")[:_NAME_MAX].rstrip("-_") or "app"
    return make_unique(base)


def parse_target_nodes(target: str, num_nodes: int) -> tuple[int, int]:
    """The first and last node of a ``targetNodes`` value (``"a:b"``, ``":b"``, ``"a:"``
    or ``"n"``)."""
    start, sep, end = target.partition(":")
    if not sep:
        return int(start), int(start)
    return (int(start) if start else 0), (int(end) if end else num_nodes - 1)


INTERRUPTION_RETRIES = 3
"""How often a job that asks for no retries is still retried when its host is taken away."""
_HOST_LOST = {"onStatusReason": "Host EC2*", "action": "RETRY"}
"""Batch's reason for an attempt whose instance terminated (a Spot reclaim, a lost host)."""


def retry_strategy(app: AppDef) -> dict[str, Any]:
    """Retries for ``max_retries`` (the most any role asks for) and for lost hosts.

    Batch has one attempt count for both. Without ``max_retries`` the job's own failure
    exits at once and a lost host is retried up to :data:`INTERRUPTION_RETRIES` times;
    with it, ``max_retries + 1`` attempts cover both. A successful exit is never retried.
    """
    retries = max(role.max_retries for role in app.roles)
    if retries + 1 > MAX_RETRY_ATTEMPTS:
        raise ValueError(
            f"max_retries={retries} is more than AWS Batch allows ({MAX_RETRY_ATTEMPTS - 1}"
            " retries per job); lower the role's max_retries"
        )
    rules: list[dict[str, str]] = [_HOST_LOST, {"onExitCode": "0", "action": "EXIT"}]
    if retries == 0:
        rules.append({"onReason": "*", "action": "EXIT"})  # its own failure: no retry
        return {"attempts": 1 + INTERRUPTION_RETRIES, "evaluateOnExit": rules}
    return {"attempts": retries + 1, "evaluateOnExit": rules}


def _mounts(
    mounts: Iterable[BindMount | VolumeMount | DeviceMount],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mountPoints, devices) for the container properties."""
    volumes: list[dict[str, Any]] = []
    points: list[dict[str, Any]] = []
    devices: list[dict[str, Any]] = []
    for mount in mounts:
        if isinstance(mount, DeviceMount):
            permissions = [
                name for flag, name in (("r", "READ"), ("w", "WRITE"), ("m", "MKNOD"))
                if flag in mount.permissions
            ]  # fmt: skip
            devices.append(
                {
                    "hostPath": mount.src_path,
                    "containerPath": mount.dst_path,
                    "permissions": permissions,
                }
            )
            continue
        name = f"mount_{len(volumes)}"
        if isinstance(mount, BindMount):
            volumes.append({"name": name, "host": {"sourcePath": mount.src_path}})
        else:  # an EFS file system, by id
            volumes.append({"name": name, "efsVolumeConfiguration": {"fileSystemId": mount.src}})
        points.append(
            {"containerPath": mount.dst_path, "readOnly": mount.read_only, "sourceVolume": name}
        )
    return volumes, points, devices


def _shell_word(arg: str) -> str:
    """``arg`` quoted for ``sh`` with each replica-id mark turned into ``"$r"``."""

    return (
        '"$r"'.join(shlex.quote(part) if part else "" for part in arg.split(_REPLICA_MARK)) or "''"
    )


_ATTEMPT_EXPORT = f"{ENV_TORCHX_ATTEMPT}=$((${{AWS_BATCH_JOB_ATTEMPT:-1}} - 1))"
"""Batch numbers a job's attempts from 1 (``AWS_BATCH_JOB_ATTEMPT``); TorchX from 0."""


def _per_node_command(
    command: list[str], env: dict[str, str], first_node: int
) -> tuple[list[str], dict[str, str]]:
    """``command`` and ``env`` as the node runs them: the role's own command as given when
    nothing is left to resolve on the node (an image without a shell runs, and the job
    definition shows the role's command); else run by ``sh``, which resolves the replica-id
    marks and also exports ``TORCHX_ATTEMPT`` (Batch numbers its attempts from 1 in
    ``AWS_BATCH_JOB_ATTEMPT``, which every node has either way).

    Variables whose names a shell cannot hold (``MY-VAR``) are set by ``env`` after the
    shell too: ``dash`` drops them from the environment it passes on."""
    marked = any(_REPLICA_MARK in v for v in env.values()) or any(
        _REPLICA_MARK in a for a in command
    )
    if not marked and all(is_shell_name(k) for k in env):
        return list(command), dict(env)
    lines = [f"export {_ATTEMPT_EXPORT}"]
    if marked:
        lines.append(f"r=$((${{{_NODE_INDEX_VAR}:?is not set by AWS Batch}} - {first_node}))")
    marked_env = {
        k: v for k, v in env.items() if (marked and _REPLICA_MARK in v) or not is_shell_name(k)
    }
    # `env NAME=VALUE`, each one quoted word: a name is never shell text
    assignments = [_shell_word(f"{k}={v}") for k, v in marked_env.items()]
    words = ["env", "--", *assignments] if assignments else []
    lines.append("exec " + " ".join([*words, *(_shell_word(a) for a in command)]))
    plain_env = {k: v for k, v in env.items() if k not in marked_env}
    return ["/bin/sh", "-c", "; ".join(lines)], plain_env


def role_command(command: list[str]) -> list[str]:
    """The role's own command (entrypoint and args) in a node's ``command``: the words the
    ``sh`` of :func:`_per_node_command` runs, its ``env`` assignments left out and a replica
    id the node computes shown as ``$r``."""

    if command[:2] != ["/bin/sh", "-c"] or len(command) != 3:
        return command
    script = command[2]
    if not script.startswith(f"export {_ATTEMPT_EXPORT}"):
        return command
    words = shlex.split(script.rpartition("; exec ")[2])
    if words[:2] == ["env", "--"]:
        words = words[2:]
        while words and "=" in words[0]:
            words = words[1:]
    return words


def node_range(
    role: Role,
    role_idx: int,
    first_node: int,
    app_id: str,
    container_extra: Mapping[str, Any],
) -> dict[str, Any]:
    """The ``nodeRangeProperties`` entry of one role (nodes ``first_node`` and up)."""

    replica = "0" if role.num_replicas == 1 else _REPLICA_MARK
    values = macros.Values(img_root="", app_id=app_id, replica_id=replica, rank0_env=RANK0_ENV)
    resolved = values.apply(role)
    env = carried_env(role.name, resolved.env)
    env[ENV_TORCHX_ROLE_IDX] = str(role_idx)
    env[ENV_TORCHX_ROLE_NAME] = role.name
    env[ENV_TORCHX_IMAGE] = role.image
    command, env = _per_node_command([resolved.entrypoint, *resolved.args], env, first_node)

    resource = role.resource
    mounts = [*role.mounts, *get_device_mounts(resource.devices)]
    volumes, points, devices = _mounts(mounts)
    linux: dict[str, Any] = {}
    if resource.memMB > 0:
        linux["sharedMemorySize"] = int(resource.memMB)
    if devices:
        linux["devices"] = devices
    container: dict[str, Any] = {
        "command": command,
        "image": role.image,
        "environment": [{"name": k, "value": v} for k, v in env.items()],
        "resourceRequirements": resource_requirements_from_resource(resource),
        "linuxParameters": linux,
        "logConfiguration": {"logDriver": "awslogs"},
        "mountPoints": points,
        "volumes": volumes,
    }
    instance_type = resource.capabilities.get(K8S_ITYPE)
    if instance_type:
        container["instanceType"] = str(instance_type)
    container.update(container_extra)
    last = first_node + role.num_replicas - 1
    return {"targetNodes": f"{first_node}:{last}", "container": container}


def check_role_count(app: AppDef) -> None:
    """Refuses apps with more roles than a job definition has node ranges."""
    if len(app.roles) > MAX_NODE_RANGES:
        raise ValueError(
            f"app {app.name!r} has {len(app.roles)} roles; an AWS Batch multi-node job takes"
            f" at most {MAX_NODE_RANGES} (one node range per role): merge roles or submit"
            " several apps"
        )


def node_ranges(
    app: AppDef, app_id: str, container_extra: Mapping[str, Any]
) -> tuple[int, list[dict[str, Any]]]:
    """(number of nodes, one node range per role), roles on consecutive nodes from 0."""
    check_role_count(app)
    ranges: list[dict[str, Any]] = []
    next_node = 0
    for idx, role in enumerate(app.roles):
        ranges.append(node_range(role, idx, next_node, app_id, container_extra))
        next_node += role.num_replicas
    return next_node, ranges


@dataclass
class Opts(StructuredOpts):
    """Run options of ``aws_batch`` (the workspace adds ``image_repo``, ``quiet``,
    ``build_args``)."""

    queue: str = field(metadata={HELP_KEY: "the AWS Batch job queue to submit to"})
    user: str = field(
        default=current_user(),
        metadata={HELP_KEY: "the user recorded in the job's torchx.pytorch.org/user tag"},
    )
    privileged: bool = field(
        default=False,
        metadata={HELP_KEY: "run the containers privileged (needed for EFA devices)"},
    )
    share_id: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "fair-share identifier; required by (and only allowed on) queues with a"
            " scheduling policy"
        },
    )
    priority: int = field(
        default=0,
        metadata={HELP_KEY: "scheduling priority 0-9999 within the share (needs share_id)"},
    )
    job_role_arn: str | None = field(
        default=None,
        metadata={HELP_KEY: "IAM role the job's containers assume (AWS API access)"},
    )
    execution_role_arn: str | None = field(
        default=None,
        metadata={HELP_KEY: "IAM role the container agent uses (image pulls, logs)"},
    )
    ulimits: list[str] | None = field(
        default=None,
        metadata={
            HELP_KEY: "container ulimits as name:soft:hard items (-1: unlimited), e.g."
            " nofile:65536:65536,memlock:-1:-1"
        },
    )


AWSBatchOpts = Opts
"""Compat name of :class:`Opts` (upstream's options were a TypedDict ``AWSBatchOpts``)."""


@dataclass
class BatchJob:
    """The request of ``aws_batch``: the job definition to register and the job to submit.

    ``str()`` is JSON (which is also valid YAML): the same document upstream printed.
    """

    name: str
    queue: str
    share_id: str | None
    job_def: dict[str, Any]
    images_to_push: dict[str, tuple[str, str]]
    submit: dict[str, Any] = field(default_factory=dict)
    """What ``SubmitJob`` takes besides the name, queue and definition (a sweep's array)."""

    def __str__(self) -> str:
        doc = asdict(self)
        if not doc["submit"]:
            del doc["submit"]  # an app's document stays upstream's; a sweep's shows its array
        return json.dumps(doc, indent=2, default=str)

    def __repr__(self) -> str:
        return str(self)


PARAMETER = "torchxArray"
"""The job parameter holding a sweep's elements (JSON)."""


_POSITION = "${AWS_BATCH_JOB_ARRAY_INDEX:-${AWS_BATCH_JOB_ID##*:}}"


def array_job(
    array: AppArray,
    name: str,
    app_id: str,
    container_extra: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the job definition's container properties, what ``SubmitJob`` adds: the array's
    size, its dependency type, the elements' parameter) of a sweep."""

    size = len(array.elements)
    if array.max_parallel is not None and 1 < array.max_parallel < size:
        raise ValueError(
            f"max_parallel={array.max_parallel}: AWS Batch runs an array's children all at"
            " once or one after another; give --max-parallel 1, none, or limit the compute"
            " environment's vCPUs"
        )
    values = macros.Values(img_root="", app_id=app_id, replica_id="0", rank0_env="")
    role = shallow_copy(array.role)
    role.entrypoint = "/bin/sh"
    role.args = ["-c", shell_dispatch(array, _POSITION, values.to_dict())]
    container = node_range(role, 0, 0, app_id, container_extra)["container"]
    container.pop("instanceType", None)  # a node range's, not a single container's
    submit: dict[str, Any] = {
        "arrayProperties": {"size": size},
        "parameters": {PARAMETER: json.dumps(array.record())},
    }
    if array.max_parallel == 1 and size > 1:
        submit["dependsOn"] = [{"type": "SEQUENTIAL"}]
    return container, submit
