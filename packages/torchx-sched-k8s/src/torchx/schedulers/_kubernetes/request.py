"""Renders an AppDef as the Kubernetes objects the ``kubernetes`` scheduler submits.

Everything here is plain data: the objects are the JSON dicts the API server accepts
(camelCase keys), built without the ``kubernetes`` client, whose models cost tens of
microseconds per object and whose import alone costs about a second. A 10,000-replica
role renders in a few hundred milliseconds.

Two shapes:

* Volcano (``job_type=volcano``, upstream's): one ``batch.volcano.sh/v1alpha1`` Job with one
  task (one pod) per replica.
* plain Kubernetes (``job_type=batch``): per role an Indexed ``batch/v1`` Job whose pods
  are reachable as ``<job>-<index>.<job>`` through a headless Service of the same name.
  The pod template is rendered once per role: the replica index reaches the program as
  ``$(TORCHX_REPLICA_ID)``, which the kubelet expands in ``command``/``args``/``env``.

Replicas of one role share the role-level parts of their pod (resources, volumes, mounts,
ports, node selector, tolerations, ...) as the same dict objects: copy one before changing
it for a single replica (e.g. in ``Role.pre_proc``).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from torchx.schedulers.api import HELP_KEY, StructuredOpts
from torchx.schedulers.ids import make_unique
from torchx.schedulers.shared import labels
from torchx.settings import ENV_TORCHX_ATTEMPT
from torchx.specs.api import (
    AppDef,
    BindMount,
    DeviceMount,
    InvalidRunConfigException,
    RetryPolicy,
    Role,
    VolumeMount,
)
from torchx.specs.overlays import apply_overlay, get_overlay
from torchx.specs.replica_macros import ReplicaMacros
from torchx.specs.sweep import shell_dispatch
from torchx.util.startup.lazy_dataclass import dataclass, field
from torchx.util.strings import normalize_str
from torchx.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs.sweep import AppArray

__all__ = [
    "ANNOTATIONS_ATTEMPT",
    "ANNOTATION_IMAGE_PULL_TIMEOUT",
    "ANNOTATION_ISTIO_SIDECAR",
    "COUNT_ATTEMPTS",
    "IMAGE_PULL_TIMEOUT_S",
    "LABEL_APP_NAME",
    "LABEL_INSTANCE",
    "LABEL_INSTANCE_TYPE",
    "LABEL_KIND",
    "LABEL_KUBE_APP_NAME",
    "LABEL_MANAGED_BY",
    "LABEL_REPLICA_ID",
    "LABEL_ROLE_INDEX",
    "LABEL_ROLE_NAME",
    "LABEL_VERSION",
    "RESERVED_MEMMB",
    "RESERVED_MILLICPU",
    "RETRY_POLICIES",
    "KubernetesOpts",
    "Opts",
    "RunOptionError",
    "SpecError",
    "batch_objects",
    "check_namespace",
    "jobset",
    "pod_labels",
    "pod_spec",
    "sanitize_label_value",
    "unique_app_id",
    "volcano_job",
]

LABEL_VERSION = labels.VERSION
LABEL_APP_NAME = labels.APP_NAME
LABEL_ROLE_INDEX = labels.ROLE_INDEX
LABEL_ROLE_NAME = labels.ROLE_NAME
LABEL_REPLICA_ID = labels.REPLICA_ID
LABEL_KIND = labels.JOB_TYPE
LABEL_KUBE_APP_NAME = "app.kubernetes.io/name"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_INSTANCE = "app.kubernetes.io/instance"
LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
LABEL_KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
LABEL_KUEUE_JOB_UID = "kueue.x-k8s.io/job-uid"
"""The label Kueue puts on a workload: the uid of the Job (or JobSet) it stands for."""
LABEL_KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
"""Names the app's Kueue WorkloadPriorityClass (run option ``priority_class`` with a queue)."""
LABEL_JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
LABEL_JOBSET_RJOB = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
ANNOTATION_ISTIO_SIDECAR = "sidecar.istio.io/inject"
ANNOTATION_IMAGE_PULL_TIMEOUT = "torchx.pytorch.org/image-pull-timeout"
"""Pod annotation: seconds a pod may fail to pull its image before the app is FAILED
(run option ``image_pull_timeout``; read back by ``describe``, which keeps no state)."""
IMAGE_PULL_TIMEOUT_S = 300
MANAGED_BY = labels.DOMAIN

RESERVED_MILLICPU = 100
RESERVED_MEMMB = 1024
EFA_DEVICE = "vpc.amazonaws.com/efa"
PLACEHOLDER_FIELD_PATH = "[FIELD_PATH]"
RANK0_ENV = "TORCHX_RANK0_HOST"
NAMESPACE_ENV = "TORCHX_POD_NAMESPACE"
"""``job_type=batch``: the pod's namespace (downward API), part of the rank-0 pod's FQDN."""
CLUSTER_DOMAIN = "cluster.local"
"""The DNS domain most clusters use (kubelet's ``clusterDomain``); run option ``cluster_domain``."""
REPLICA_ID_ENV = "TORCHX_REPLICA_ID"

# Where a pod finds how often its replica ran before (downward API; "" when absent): the Job
# controller counts an index's failed pods and, apart, those a pod failure policy ignored
# (evicted, preempted); JobSet counts its own restarts on every pod it recreates.
ANNOTATIONS_ATTEMPT = (
    "batch.kubernetes.io/job-index-failure-count",
    "batch.kubernetes.io/job-index-ignored-failure-count",
)
_ATTEMPT_SOURCES = (
    ("TORCHX_K8S_FAILED", f"metadata.annotations['{ANNOTATIONS_ATTEMPT[0]}']"),
    ("TORCHX_K8S_INTERRUPTED", f"metadata.annotations['{ANNOTATIONS_ATTEMPT[1]}']"),
    ("TORCHX_K8S_RESTARTED", "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"),
)
COUNT_ATTEMPTS = [
    "/bin/sh",
    "-c",
    # `$$` is kubelet's escape of `$`: it would take `$(` for a reference to expand
    f"export {ENV_TORCHX_ATTEMPT}=$$((${{TORCHX_K8S_FAILED:-0}} + ${{TORCHX_K8S_INTERRUPTED:-0}}"
    ' + ${TORCHX_K8S_RESTARTED:-0})); exec "$@"',
    "torchx-attempt",
]
"""Prefix of a ``batch``/``jobset`` replica's command: ``$TORCHX_ATTEMPT`` is the sum of the
counts above, which only a shell can add, so the image must have ``/bin/sh``."""
DISRUPTED = [{"type": "DisruptionTarget", "status": "True"}]
"""The condition Kubernetes puts on a pod it evicts, preempts or loses with its node."""
STOPPED = {"operator": "In", "values": [128 + 15]}
"""The exit of a replica that a SIGTERM ended (kubelet's stop of a deleted pod): a plain
deletion leaves no condition on the pod, only this."""
MAX_NAME = 63
JOBSET_GROUP, JOBSET_VERSION, JOBSET_PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"
KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"

RETRY_POLICIES: dict[str, list[dict[str, str]]] = {
    RetryPolicy.REPLICA.value: [
        {"event": "PodEvicted", "action": "RestartTask"},
        {"event": "PodFailed", "action": "RestartTask"},
    ],
    RetryPolicy.APPLICATION.value: [
        {"event": "PodEvicted", "action": "RestartJob"},
        {"event": "PodFailed", "action": "RestartJob"},
    ],
}
"""Volcano task policies per retry policy (one task per replica, so REPLICA restarts the
task). ROLE is APPLICATION for a single-role app and rejected otherwise."""

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE_BAD = re.compile(r"[^A-Za-z0-9_.-]")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class SpecError(ValueError):
    """The app cannot be expressed as valid Kubernetes objects (the message says why)."""


class RunOptionError(SpecError, InvalidRunConfigException):
    """A run option the objects cannot carry (or one that is missing): a
    :class:`SpecError` like the others, and the ``InvalidRunConfigException`` callers of
    upstream's API catch. The message is the one line that names the fix."""

    def __init__(self, message: str, cfg_key: str = "") -> None:
        ValueError.__init__(self, message)
        self.cfg_key = cfg_key


@dataclass
class Opts(StructuredOpts):
    """Run options of ``kubernetes`` (the workspace adds ``quiet`` and ``build_args``)."""

    queue: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "Volcano queue to schedule job in (required with job_type=volcano;"
            " job_type=batch or jobset: the Kueue LocalQueue, label"
            " kueue.x-k8s.io/queue-name, none or - for no Kueue)"
        },
    )
    namespace: str = field(
        default="default", metadata={HELP_KEY: "Kubernetes namespace to schedule job in"}
    )
    service_account: str | None = field(
        default=None, metadata={HELP_KEY: "service account of the pods (serviceAccountName)"}
    )
    priority_class: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "priority class of the job: the pods' priorityClassName, or with a Kueue"
            " queue the Kueue WorkloadPriorityClass (label kueue.x-k8s.io/priority-class)"
        },
    )
    validate_spec: bool | None = field(
        default=None,
        metadata={
            HELP_KEY: "check the objects with a server-side dry run before submitting and on"
            " --dryrun, and that pod names fit 63 characters; default: when a cluster is"
            " configured (else skipped with a note); True requires it"
        },
    )
    reserved_millicpu: int = field(
        default=RESERVED_MILLICPU,
        metadata={HELP_KEY: "CPU (millicores) left out of each pod's request for system daemons"},
    )
    reserved_memmb: int = field(
        default=RESERVED_MEMMB,
        metadata={HELP_KEY: "memory (MB) left out of each pod's request for system daemons"},
    )
    efa_device_count: int | None = field(
        default=None,
        metadata={
            HELP_KEY: "EFA devices per pod (vpc.amazonaws.com/efa): unset keeps the resource's,"
            " 0 removes them, N sets N"
        },
    )
    job_type: str = field(
        default="volcano",
        metadata={
            HELP_KEY: "volcano (a Volcano Job, gang-scheduled), batch (per role an Indexed"
            " batch/v1 Job + headless Service; no Volcano needed, autoscalers work) or jobset"
            " (one JobSet, a replicated Job per role; needs JobSet)"
        },
    )
    node_selector: dict[str, str] | None = field(
        default=None, metadata={HELP_KEY: "node labels the pods must match, KEY:VALUE pairs"}
    )
    tolerations: list[str] | None = field(
        default=None,
        metadata={
            HELP_KEY: "taints the pods tolerate: KEY[=VALUE][:EFFECT] entries"
            " (e.g. nvidia.com/gpu:NoSchedule); * tolerates every taint"
        },
    )
    image_pull_secrets: list[str] | None = field(
        default=None, metadata={HELP_KEY: "secrets with registry credentials to pull the images"}
    )
    secret_mounts: dict[str, str] | None = field(
        default=None,
        metadata={HELP_KEY: "secrets mounted read-only into every pod, SECRET:/mount/path pairs"},
    )
    labels: dict[str, str] | None = field(
        default=None, metadata={HELP_KEY: "extra labels of the job and its pods, KEY:VALUE pairs"}
    )
    annotations: dict[str, str] | None = field(
        default=None,
        metadata={HELP_KEY: "extra annotations of the job and its pods, KEY:VALUE pairs"},
    )
    image_pull_timeout: int = field(
        default=IMAGE_PULL_TIMEOUT_S,
        metadata={
            HELP_KEY: "seconds a pod may fail to pull its image (ErrImagePull, ImagePullBackOff)"
            " before the app is FAILED with the image and the reason; 0: wait without end"
        },
    )
    cluster_domain: str = field(
        default=CLUSTER_DOMAIN,
        metadata={
            HELP_KEY: "the cluster's DNS domain (kubelet clusterDomain); job_type=batch names"
            " rank 0 by its fully qualified name in it"
        },
    )

    def check(self) -> None:
        """Raises :class:`RunOptionError` for an option the objects cannot carry (a bad
        label, key, domain, secret mount or timeout)."""
        try:
            self._check()
        except RunOptionError:
            raise
        except SpecError as e:
            raise RunOptionError(str(e)) from None

    def _check(self) -> None:
        check_dns_label(self.cluster_domain, "cluster_domain", limit=253, dots=True)
        for toleration in self.tolerations or ():
            parse_toleration(toleration)
        timeout = self.image_pull_timeout
        if not isinstance(timeout, int) or timeout < 0:
            raise SpecError(
                f"invalid image_pull_timeout {timeout!r}: use whole seconds, 0 to"
                " wait for a pull without end"
            )
        for key, value in (self.labels or {}).items():
            check_label(key, value)
        for key in (*(self.node_selector or {}), *(self.annotations or {})):
            if not _LABEL_KEY.match(key) or len(key.rpartition("/")[2]) > MAX_NAME:
                raise SpecError(
                    f"invalid key {key!r} in node_selector/annotations: use [prefix/]name with"
                    " letters, digits, '-', '_' and '.' (name at most 63 characters)"
                )
        for secret, path in (self.secret_mounts or {}).items():
            check_dns_label(secret, "secret name in secret_mounts", limit=253, dots=True)
            if not path.startswith("/"):
                raise SpecError(
                    f"secret_mounts: mount path {path!r} of secret {secret!r} must be absolute;"
                    " write -cfg secret_mounts=SECRET:/abs/path"
                )


# -- names and labels -------------------------------------------------------------------


def check_dns_label(value: str, what: str, *, limit: int = MAX_NAME, dots: bool = False) -> None:
    """Raises :class:`SpecError` unless ``value`` is a DNS-1123 label (or subdomain)."""
    parts = value.split(".") if dots else [value]
    if len(value) > limit or not all(_DNS_LABEL.match(p) for p in parts):
        raise SpecError(
            f"invalid {what} {value!r}: use at most {limit} lower-case letters, digits and"
            f" '-'{', dot-separated' if dots else ''}, starting and ending with a letter or digit"
        )


def check_namespace(namespace: str) -> None:
    """Raises :class:`RunOptionError` with the fix unless ``namespace`` is a valid
    namespace name."""
    try:
        check_dns_label(namespace, "namespace (-cfg namespace=...)")
    except SpecError as e:
        raise RunOptionError(str(e), "namespace") from None


def check_label(key: str, value: str) -> None:
    if not _LABEL_KEY.match(key) or len(key.rpartition("/")[2]) > MAX_NAME:
        raise SpecError(
            f"invalid label key {key!r}: use [prefix/]name with letters, digits, '-', '_', '.'"
        )
    if value and (
        len(value) > MAX_NAME
        or _LABEL_VALUE_BAD.search(value)
        or not (value[0].isalnum() and value[-1].isalnum())
    ):
        raise SpecError(
            f"invalid value {value!r} of label {key!r}: at most 63 letters, digits, '-', '_'"
            " or '.', starting and ending with a letter or digit"
        )


def sanitize_label_value(value: str) -> str:
    """``value`` made a valid label value: bad characters (and bad ends) become ``.``,
    at most 63 characters."""
    cleaned = _LABEL_VALUE_BAD.sub(".", value[:MAX_NAME])
    if cleaned and not cleaned[0].isalnum():
        cleaned = "." + cleaned[1:] if len(cleaned) > 1 else ""
        cleaned = cleaned.lstrip(".")
    if cleaned and not cleaned[-1].isalnum():
        cleaned = cleaned.rstrip("._-")
    return cleaned


def unique_app_id(app_name: str) -> str:
    """``normalize_str(make_unique(app.name))``: the Job name and app id part."""

    return normalize_str(make_unique(app_name))


def parse_toleration(spec: str) -> dict[str, str]:
    """``key[=value][:Effect]`` (kubectl taint syntax) as a toleration; ``*`` tolerates all."""
    body, _, effect = spec.partition(":")
    key, eq, value = body.partition("=")
    if effect and effect not in _TAINT_EFFECTS:
        raise SpecError(
            f"invalid toleration {spec!r}: effect {effect!r} is not one of"
            f" {', '.join(_TAINT_EFFECTS)}; write KEY[=VALUE][:EFFECT], e.g. gpu=true:NoSchedule"
        )
    toleration: dict[str, str] = {}
    if key == "*":
        toleration["operator"] = "Exists"
    elif not key:
        raise SpecError(f"invalid toleration {spec!r}: no key; write KEY[=VALUE][:EFFECT]")
    else:
        toleration["key"] = key
        toleration["operator"] = "Equal" if eq else "Exists"
        if eq:
            toleration["value"] = value
    if effect:
        toleration["effect"] = effect
    return toleration


def pod_labels(
    app: AppDef, role_idx: int, role: Role, replica_id: int | None, app_id: str
) -> dict[str, str]:
    """The labels TorchX puts on every pod of ``role`` (values made label-safe)."""

    labels = {
        LABEL_VERSION: sanitize_label_value(__version__),
        LABEL_APP_NAME: sanitize_label_value(app.name),
        LABEL_ROLE_INDEX: str(role_idx),
        LABEL_ROLE_NAME: sanitize_label_value(role.name),
    }
    if replica_id is not None:
        labels[LABEL_REPLICA_ID] = str(replica_id)
    labels[LABEL_KUBE_APP_NAME] = sanitize_label_value(app.name)
    labels[LABEL_MANAGED_BY] = MANAGED_BY
    labels[LABEL_INSTANCE] = app_id
    return labels


# -- pod spec ----------------------------------------------------------------------------


def _resources(role: Role, opts: Opts) -> dict[str, dict[str, str]]:
    resource = role.resource
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    if resource.cpu > 0:
        mcpu = int(resource.cpu * 1000)
        limits["cpu"] = f"{mcpu}m"
        requests["cpu"] = f"{max(mcpu - opts.reserved_millicpu, 0)}m"
    if resource.memMB > 0:
        limits["memory"] = f"{int(resource.memMB)}M"
        requests["memory"] = f"{max(int(resource.memMB) - opts.reserved_memmb, 0)}M"
    if resource.gpu > 0:
        limits["nvidia.com/gpu"] = requests["nvidia.com/gpu"] = str(resource.gpu)
    devices = dict(resource.devices)
    if opts.efa_device_count is not None:
        if opts.efa_device_count <= 0:
            devices.pop(EFA_DEVICE, None)
        else:
            devices[EFA_DEVICE] = opts.efa_device_count
    for name, count in devices.items():
        if count > 0:
            limits[name] = str(count)
    result: dict[str, dict[str, str]] = {}
    if limits:
        result["limits"] = limits
    if requests:
        result["requests"] = requests
    return result


def _volumes(role: Role, opts: Opts) -> tuple[list[Any], list[Any], bool]:
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]  # noqa: S108
    privileged = False
    for i, mount in enumerate(role.mounts):
        name = f"mount-{i}"
        if isinstance(mount, BindMount):
            volumes.append({"name": name, "hostPath": {"path": mount.src_path}})
            mounts.append({"name": name, "mountPath": mount.dst_path, "readOnly": mount.read_only})
        elif isinstance(mount, VolumeMount):
            volumes.append({"name": name, "persistentVolumeClaim": {"claimName": mount.src}})
            mounts.append({"name": name, "mountPath": mount.dst_path, "readOnly": mount.read_only})
        elif isinstance(mount, DeviceMount):
            volumes.append({"name": name, "hostPath": {"path": mount.src_path}})
            read_only = "w" not in mount.permissions and "m" not in mount.permissions
            mounts.append({"name": name, "mountPath": mount.dst_path, "readOnly": read_only})
            privileged = True
        else:
            raise TypeError(f"unknown mount type {type(mount).__name__} in role {role.name!r}")
    for i, (secret, path) in enumerate((opts.secret_mounts or {}).items()):
        name = f"secret-{i}"
        volumes.append({"name": name, "secret": {"secretName": secret}})
        mounts.append({"name": name, "mountPath": path, "readOnly": True})
    return volumes, mounts, privileged


class _RoleParts:
    """The parts of a pod that are the same for every replica of a role."""

    __slots__ = ("annotations", "container_tail", "spec_base")

    def __init__(self, role: Role, opts: Opts) -> None:
        volumes, volume_mounts, privileged = _volumes(role, opts)
        tail: dict[str, Any] = {}
        if role.port_map:
            tail["ports"] = [{"name": k, "containerPort": v} for k, v in role.port_map.items()]
        tail["resources"] = _resources(role, opts)
        if privileged:
            tail["securityContext"] = {"privileged": True}
        tail["volumeMounts"] = volume_mounts
        self.container_tail = tail
        spec: dict[str, Any] = {"restartPolicy": "Never"}
        if opts.service_account:
            spec["serviceAccountName"] = opts.service_account
        node_selector = {}
        itype = role.resource.capabilities.get(LABEL_INSTANCE_TYPE)
        if itype is not None:
            node_selector[LABEL_INSTANCE_TYPE] = str(itype)
        node_selector.update(opts.node_selector or {})
        if node_selector:
            spec["nodeSelector"] = node_selector
        if opts.tolerations:
            spec["tolerations"] = [parse_toleration(t) for t in opts.tolerations]
        if opts.image_pull_secrets:
            spec["imagePullSecrets"] = [{"name": s} for s in opts.image_pull_secrets]
        spec["volumes"] = volumes
        self.spec_base = spec
        self.annotations = {ANNOTATION_ISTIO_SIDECAR: "false", **(opts.annotations or {})}
        if opts.image_pull_timeout != IMAGE_PULL_TIMEOUT_S:  # the default goes unsaid
            self.annotations[ANNOTATION_IMAGE_PULL_TIMEOUT] = str(opts.image_pull_timeout)


_REPLICA_ID_MARK = "\x00torchx-replica-id\x00"
"""Stands for the replica id in an Indexed Job's args until they are made literal (a NUL
is refused in a role's args and env, so it cannot be the user's)."""


_KUBELET_SPECIAL = re.compile(r"\$(?=[$(])")


def kubelet_literal(text: str) -> str:
    """``text`` written so that kubelet passes it on as it is: it expands ``$(NAME)`` in a
    container's command, args and env values and reads ``$$`` as ``$``, so a ``$`` before
    ``(`` or ``$`` is doubled (any other ``$`` it leaves alone, as the request leaves it);
    the replica id TorchX put in (:data:`_REPLICA_ID_MARK`) becomes the reference it is."""
    return _KUBELET_SPECIAL.sub("$$", text).replace(_REPLICA_ID_MARK, f"$({REPLICA_ID_ENV})")


def _env_entry(name: str, value: str) -> dict[str, Any]:
    if value.startswith(PLACEHOLDER_FIELD_PATH):
        path = value.removeprefix(PLACEHOLDER_FIELD_PATH)
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}
    return {"name": name, "value": kubelet_literal(value)}


def pod_spec(
    container_name: str,
    image: str,
    command: list[str],
    env: list[dict[str, Any]],
    parts: _RoleParts,
) -> dict[str, Any]:
    """The pod ``spec`` of one replica (one container named ``container_name``); ``parts``
    holds what every replica of the role shares."""
    container = {"name": container_name, "image": image, "command": command, "env": env}
    container.update(parts.container_tail)
    spec = {"containers": [container]}
    spec.update(parts.spec_base)
    return spec


def _role_overlay(role: Role) -> dict[str, Any]:
    return get_overlay(role, "kubernetes", "V1Pod")


def _apply_pod_overlay(pod: dict[str, Any], overlay: dict[str, Any]) -> None:
    """Merges a role's ``V1Pod`` overlay into ``pod``; only metadata and spec are kept."""

    patched = copy.deepcopy({"metadata": pod["metadata"], "spec": pod["spec"]})
    apply_overlay(patched, overlay)
    pod["metadata"] = patched.get("metadata") or {}
    pod["spec"] = patched.get("spec") or {}


def _check_retry_policy(app: AppDef) -> None:
    for role in app.roles:
        if (
            role.max_retries > 0
            and RetryPolicy(role.retry_policy) == RetryPolicy.ROLE
            and len(app.roles) > 1
        ):
            raise SpecError(
                f"role {role.name!r} asks for retry_policy ROLE, which Volcano cannot express"
                " for one role of several (each replica is its own task); use REPLICA or"
                " APPLICATION"
            )


def _check_pod_names(app_id: str, task_names: list[str]) -> None:
    for task in task_names:
        pod = f"{app_id}-{task}-0"
        if len(pod) > MAX_NAME:
            raise SpecError(
                f"pod name {pod!r} is {len(pod)} characters long; Kubernetes allows {MAX_NAME}."
                " Shorten the app name (e.g. dist.ddp --name) or the role name"
            )


def volcano_job(app: AppDef, app_id: str, opts: Opts) -> dict[str, Any]:
    """The Volcano Job of ``app``: one task (one pod) per replica, role-major order."""
    if not opts.queue:
        raise RunOptionError(
            "the kubernetes scheduler needs a Volcano queue: -cfg queue=NAME (or"
            " -cfg job_type=batch on a cluster without Volcano)",
            "queue",
        )
    for role in app.roles:
        _check_pod_names(app_id, [normalize_str(f"{role.name}-{role.num_replicas - 1}")])
    check_dns_label(app_id, "job name (from the app name)")
    _check_retry_policy(app)
    roles = app.roles
    rank0_other = f"VC_{normalize_str(roles[0].name)}_0_HOSTS".upper()
    job_labels = {
        LABEL_MANAGED_BY: MANAGED_BY,
        LABEL_INSTANCE: app_id,
        LABEL_KUBE_APP_NAME: sanitize_label_value(app.name),
        LABEL_KIND: "volcano",
        **(opts.labels or {}),
    }
    tasks: list[dict[str, Any]] = []
    for role_idx, role in enumerate(roles):
        n = role.num_replicas
        parts = _RoleParts(role, opts)
        subst = ReplicaMacros(role.args, role.env)
        overlay = _role_overlay(role)
        base_labels = pod_labels(app, role_idx, role, None, app_id)
        base_labels.update(opts.labels or {})
        image_env = {"name": "TORCHX_IMAGE", "value": role.image}
        # Volcano gives a restarted job's pods the job's new version (0 first)
        attempt_env = {
            "name": ENV_TORCHX_ATTEMPT,
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.annotations['volcano.sh/job-version']"}
            },
        }
        retries: dict[str, Any] = {}
        if role.max_retries > 0:
            policy = RetryPolicy(role.retry_policy).value
            if policy == RetryPolicy.ROLE.value:
                policy = RetryPolicy.APPLICATION.value
            retries = {"maxRetry": role.max_retries, "policies": RETRY_POLICIES[policy]}
        mapping = {
            "img_root": "",
            "app_id": app_id,
            "replica_id": "0",
            "rank0_env": rank0_other,
            "base_img_root": "DEPRECATED",
        }
        finished: dict[bool, tuple[list[str], list[dict[str, Any]]]] = {}
        for replica_id in range(n):
            rank0 = role_idx == 0 and replica_id == 0
            done = None if subst.per_replica else finished.get(rank0)
            if done is None:
                mapping["replica_id"] = str(replica_id)
                mapping["rank0_env"] = RANK0_ENV if rank0 else rank0_other
                args, role_env = subst.apply(mapping)
                env = [*(_env_entry(k, v) for k, v in role_env.items()), image_env, attempt_env]
                if rank0:
                    env.append({"name": RANK0_ENV, "value": "localhost"})
                done = ([kubelet_literal(word) for word in (role.entrypoint, *args)], env)
                if not subst.per_replica:
                    finished[rank0] = done
            command, env = done
            name = normalize_str(f"{role.name}-{replica_id}")
            labels = dict(base_labels)
            labels[LABEL_REPLICA_ID] = str(replica_id)
            pod: dict[str, Any] = {
                "metadata": {"annotations": parts.annotations},
                "spec": pod_spec(name, role.image, command, env, parts),
            }
            if overlay:
                _apply_pod_overlay(pod, overlay)
            pod["metadata"]["labels"] = labels
            task: dict[str, Any] = {"name": name, "replicas": 1, "template": pod}
            if retries:
                task.update(retries)
            if role.min_replicas is not None:
                task["minAvailable"] = 1 if replica_id < role.min_replicas else 0
            tasks.append(task)
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "queue": opts.queue,
        "maxRetry": min(role.max_retries for role in roles),
        "plugins": {"svc": ["--publish-not-ready-addresses"], "env": []},
        "tasks": tasks,
    }
    if opts.priority_class:
        spec["priorityClassName"] = opts.priority_class
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": app_id, "labels": job_labels, **_annotations(opts)},
        "spec": spec,
    }


def _annotations(opts: Opts) -> dict[str, Any]:
    return {"annotations": dict(opts.annotations)} if opts.annotations else {}


def batch_job_name(app_id: str, role_name: str) -> str:
    """Name of the Job (and headless Service) of one role in ``job_type=batch``."""
    return normalize_str(f"{app_id}-{role_name}")


def kueue_labels(opts: Opts) -> dict[str, str]:
    """The labels that put a batch Job or a JobSet in Kueue's LocalQueue ``opts.queue``
    (and its WorkloadPriorityClass ``opts.priority_class``); none for ``queue=-``."""
    if not queued(opts):
        return {}
    assert opts.queue is not None
    check_label(LABEL_KUEUE_QUEUE, opts.queue)
    labels = {LABEL_KUEUE_QUEUE: opts.queue}
    if opts.priority_class:
        check_label(LABEL_KUEUE_PRIORITY, opts.priority_class)
        labels[LABEL_KUEUE_PRIORITY] = opts.priority_class
    return labels


def queued(opts: Opts) -> bool:
    """Whether a batch Job or JobSet goes through Kueue (a LocalQueue is named)."""
    return bool(opts.queue) and opts.queue != "-"


def _indexed_pod(
    app: AppDef,
    app_id: str,
    role_idx: int,
    opts: Opts,
    *,
    job_type: str,
    rank0_host: str,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The pod template of one role's Indexed Job (``batch`` and ``jobset``) and the labels
    TorchX gives the role's objects: replica ``k`` is the pod of completion index ``k``."""
    role = app.roles[role_idx]
    parts = _RoleParts(role, opts)
    mapping = {
        "img_root": "",
        "app_id": app_id,
        "replica_id": _REPLICA_ID_MARK,
        "rank0_env": RANK0_ENV,
        "base_img_root": "DEPRECATED",
    }
    args, role_env = ReplicaMacros(role.args, role.env).apply(mapping)
    env: list[dict[str, Any]] = [
        {
            "name": REPLICA_ID_ENV,
            "valueFrom": {
                "fieldRef": {"fieldPath": f"metadata.annotations['{LABEL_COMPLETION_INDEX}']"}
            },
        },
        {"name": NAMESPACE_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        *({"name": k, "valueFrom": {"fieldRef": {"fieldPath": v}}} for k, v in _ATTEMPT_SOURCES),
        {"name": RANK0_ENV, "value": rank0_host},
        *(_env_entry(k, v) for k, v in role_env.items()),
        {"name": "TORCHX_IMAGE", "value": role.image},
    ]
    labels = pod_labels(app, role_idx, role, None, app_id)
    labels[LABEL_KIND] = job_type
    labels.update(opts.labels or {})
    spec = pod_spec(normalize_str(role.name) or "main", role.image,
                    [*COUNT_ATTEMPTS, *map(kubelet_literal, (role.entrypoint, *args))],
                    env, parts=parts)  # fmt: skip
    pod: dict[str, Any] = {"metadata": {"annotations": parts.annotations}, "spec": spec}
    overlay = _role_overlay(role)
    if overlay:
        _apply_pod_overlay(pod, overlay)
    pod["metadata"]["labels"] = dict(labels)
    pod["spec"].setdefault("restartPolicy", "Never")  # an overlay's choice stands
    if opts.priority_class and not queued(opts):  # with Kueue it names a workload priority
        pod["spec"]["priorityClassName"] = opts.priority_class
    return pod, labels


def _indexed_job_spec(role: Role, pod: dict[str, Any], *, per_index: bool) -> dict[str, Any]:
    """The ``spec`` of one role's Indexed Job: a pod per replica. With ``per_index`` each
    replica retries its own pod up to ``max_retries`` times (``backoffLimitPerIndex``; the
    Job fails with its first index that runs out); else the Job fails with its first failed
    pod and whoever owns it restarts it. Either way a pod Kubernetes disrupted (evicted,
    preempted, its node lost) or deleted (its replica ended by SIGTERM, exit 143) is not
    the replica's own failure: replaced without spending a retry (``per_index``), or
    failing the Job for that reason (``PodFailurePolicy``)."""
    job_spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": role.num_replicas,
        "parallelism": role.num_replicas,
    }
    never = pod["spec"].get("restartPolicy") == "Never"  # per index and a policy need it
    if per_index and never:
        job_spec["backoffLimitPerIndex"] = role.max_retries
        job_spec["maxFailedIndexes"] = 0
    elif per_index:  # an overlay's in-place restarts (OnFailure): the role's retries at once
        job_spec["backoffLimit"] = role.max_retries * role.num_replicas
    else:
        job_spec["backoffLimit"] = 0
    if never:
        action = "Ignore" if per_index else "FailJob"
        job_spec["podFailurePolicy"] = {
            "rules": [
                {"action": action, "onPodConditions": DISRUPTED},
                {"action": action, "onExitCodes": STOPPED},
            ]
        }
    job_spec["template"] = pod
    return job_spec


def _check_hostname(hostname: str) -> None:
    if len(hostname) > MAX_NAME:
        raise SpecError(
            f"pod hostname {hostname!r} is {len(hostname)} characters long; Kubernetes"
            f" allows {MAX_NAME}. Shorten the app name (e.g. dist.ddp --name) or the role name"
        )


def batch_objects(app: AppDef, app_id: str, opts: Opts) -> list[dict[str, Any]]:
    """Per role a headless Service and an Indexed Job (``job_type=batch``), in that order."""
    roles = app.roles
    job0 = batch_job_name(app_id, roles[0].name)
    # The fully qualified name, the first one kubelet writes in the pod's /etc/hosts: torchrun
    # on the rank-0 pod then knows the name as its own before the DNS record exists (with
    # `<job>-0.<job>` it asks DNS, may get no answer yet and never host the c10d store).
    rank0_host = f"{job0}-0.{job0}.$({NAMESPACE_ENV}).svc.{opts.cluster_domain}"
    objects: list[dict[str, Any]] = []
    for role_idx, role in enumerate(roles):
        job = batch_job_name(app_id, role.name)
        _check_hostname(f"{job}-{role.num_replicas - 1}")
        check_dns_label(job, "job name (from the app and role names)")
        pod, labels = _indexed_pod(
            app, app_id, role_idx, opts, job_type="batch", rank0_host=rank0_host
        )
        labels.update(kueue_labels(opts))
        pod["spec"]["subdomain"] = job
        meta = {"name": job, "labels": labels, **_annotations(opts)}
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": dict(meta),
                "spec": {
                    "clusterIP": "None",
                    "publishNotReadyAddresses": True,
                    "selector": {LABEL_INSTANCE: app_id, LABEL_ROLE_INDEX: str(role_idx)},
                },
            }
        )
        job_spec = _indexed_job_spec(role, pod, per_index=True)
        if queued(opts):
            job_spec["suspend"] = True  # Kueue resumes it once admitted
        objects.append(
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec}
        )
    return objects


def jobset_replicated_job(role_name: str) -> str:
    """Name of the replicated Job of one role in ``job_type=jobset``."""
    return normalize_str(role_name) or "role"


def jobset(app: AppDef, app_id: str, opts: Opts) -> dict[str, Any]:
    """One JobSet (``jobset.x-k8s.io/v1alpha2``, ``job_type=jobset``) for ``app``: per role
    a replicated Job (one Indexed Job, a pod per replica). JobSet makes the headless Service
    (named after the app) that gives each pod its hostname ``<app>-<role>-0-<replica>``.

    Retries: a role with retry policy REPLICA retries its own pods (the Job's
    ``backoffLimitPerIndex``); for the other policies the JobSet is restarted as a whole, up
    to the largest ``max_retries`` of those roles (``failurePolicy.maxRestarts``).
    """
    check_dns_label(app_id, "JobSet name (from the app name)")
    roles = app.roles
    names = [jobset_replicated_job(role.name) for role in roles]
    if len(set(names)) != len(names):
        raise SpecError(
            f"role names {[r.name for r in roles]} give the same replicated Job name; give"
            " each role a distinct name"
        )
    rank0_host = f"{app_id}-{names[0]}-0-0.{app_id}.$({NAMESPACE_ENV}).svc.{opts.cluster_domain}"
    replicated = []
    restarts = 0
    for role_idx, role in enumerate(roles):
        _check_hostname(f"{app_id}-{names[role_idx]}-0-{role.num_replicas - 1}")
        pod, _ = _indexed_pod(app, app_id, role_idx, opts, job_type="jobset", rank0_host=rank0_host)
        per_index = RetryPolicy(role.retry_policy) == RetryPolicy.REPLICA
        job_spec = _indexed_job_spec(role, pod, per_index=per_index)
        if not per_index:  # the JobSet restarts instead
            restarts = max(restarts, role.max_retries)
        replicated.append({"name": names[role_idx], "replicas": 1, "template": {"spec": job_spec}})
    labels = {
        LABEL_MANAGED_BY: MANAGED_BY,
        LABEL_INSTANCE: app_id,
        LABEL_KUBE_APP_NAME: sanitize_label_value(app.name),
        LABEL_APP_NAME: sanitize_label_value(app.name),
        LABEL_KIND: "jobset",
        **(opts.labels or {}),
        **kueue_labels(opts),
    }
    spec: dict[str, Any] = {
        "replicatedJobs": replicated,
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "failurePolicy": {
            "maxRestarts": restarts,
            # a Job failed by its pod failure policy lost a pod to Kubernetes, not to itself
            "rules": [
                {
                    "name": "interrupted",
                    "action": "RestartJobSetAndIgnoreMaxRestarts",
                    "onJobFailureReasons": ["PodFailurePolicy"],
                }
            ],
        },
    }
    if queued(opts):
        spec["suspend"] = True  # Kueue resumes it once admitted
    return {
        "apiVersion": f"{JOBSET_GROUP}/{JOBSET_VERSION}",
        "kind": "JobSet",
        "metadata": {"name": app_id, "labels": labels, **_annotations(opts)},
        "spec": spec,
    }


ANNOTATION_ARRAY = "torchx.pytorch.org/array"
"""A sweep's Job: its elements' indices and values and the sweep's size (JSON), read back
by ``describe``."""


def sweep_job(array: AppArray, app_id: str, opts: Opts) -> dict[str, Any]:
    """One Indexed Job for a sweep (whatever ``job_type``): completion index ``p`` runs
    element ``p`` (its args and env picked by ``/bin/sh`` from ``$JOB_COMPLETION_INDEX``),
    at most ``max_parallel`` at once (``parallelism``); each element retries its own pod up
    to ``max_retries`` times and a failed element does not stop the others
    (``maxFailedIndexes``): the Job fails once all have ended and one failed."""

    job = batch_job_name(app_id, array.role.name)
    check_dns_label(job, "job name (from the app and role names)")
    pod, labels = _indexed_pod(array, app_id, 0, opts, job_type="batch", rank0_host="")
    labels.update(kueue_labels(opts))
    mapping = {
        "img_root": "",
        "app_id": app_id,
        "replica_id": _REPLICA_ID_MARK,
        "rank0_env": RANK0_ENV,
        "base_img_root": "DEPRECATED",
    }
    # kubelet expands $(NAME) in it, as in any role's args (the replica_id macro)
    script = kubelet_literal(shell_dispatch(array, "$JOB_COMPLETION_INDEX", mapping))
    container = pod["spec"]["containers"][0]
    container["command"] = [*COUNT_ATTEMPTS, "/bin/sh", "-c", script]
    size = len(array.elements)
    spec = _indexed_job_spec(array.role, pod, per_index=True)
    spec["completions"] = size
    spec["parallelism"] = min(array.max_parallel or size, size)
    if "backoffLimitPerIndex" in spec:
        spec["maxFailedIndexes"] = size  # every element runs; the Job fails at the end
    if queued(opts):
        spec["suspend"] = True  # Kueue resumes it once admitted
    meta = {
        "name": job,
        "labels": labels,
        "annotations": {**(opts.annotations or {}), ANNOTATION_ARRAY: json.dumps(array.record())},
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


KubernetesOpts = Opts
"""Compat name of :class:`Opts` (the options were a TypedDict called ``KubernetesOpts``)."""
