"""``kubernetes``: runs TorchX apps on a Kubernetes cluster, with or without Volcano.

* ``job_type=volcano`` (default, as upstream): one Volcano Job (``batch.volcano.sh``) with one
  task per replica, gang-scheduled in ``queue``. App id ``<namespace>:<job>``.
* ``job_type=batch`` (clusters without Volcano, e.g. with cluster autoscalers): per role an
  Indexed ``batch/v1`` Job and a headless Service, scheduled by the default scheduler.
  Replicas reach rank 0 as ``$TORCHX_RANK0_HOST``, its fully qualified name
  (``<job>-0.<job>.<namespace>.svc.<cluster_domain>``). App id
  ``<namespace>:batch:<app>``.
* ``job_type=jobset``: one JobSet (``jobset.x-k8s.io``) with a replicated Job per role;
  JobSet makes the headless Service, restarts the set on failure and ends it as one. App id
  ``<namespace>:jobset:<app>``.

``batch`` and ``jobset`` go through Kueue when ``queue`` names a LocalQueue: they are
created suspended with Kueue's queue label (``priority_class`` then names a Kueue
WorkloadPriorityClass), and ``status`` says why Kueue holds them (quota, eviction,
preemption). Every kind answers ``status`` (with why pods are pending), ``log`` (every
container, follow keeps line breaks), ``list``, ``cancel`` (Volcano: abort; batch and
jobset: suspend, the objects stay for inspection; queued in Kueue: delete, with the
workload) and ``delete``. Credentials: the pod's service account when running in a
cluster, else the kubeconfig (``KUBECONFIG``; context from ``TORCHX_KUBE_CONTEXT`` or the
current one).

Requests are rendered as plain JSON dicts (see :mod:`torchx.schedulers._kubernetes.request`);
the ``kubernetes`` client is imported only to talk to the cluster. With no cluster
configured, ``--dryrun`` skips the server-side validation with a note unless
``validate_spec=True`` asks for it.

This module is the entry point; its wing, ``torchx.schedulers._kubernetes``, holds the rest:

* ``request``: run options, the Volcano Job, Indexed Jobs and JobSet of an app or a sweep;
* ``status``: the cluster's objects to app status, waiting and timeline, attempts, a
  sweep's elements;
* ``failure``: pods' reasons and exit codes to root causes;
* ``logs``: every container's log (the progress tail too);
* ``readiness``: ``torchx check``;
* ``client``: the ``kubernetes`` SDK's calls;
* ``pulls``: images a pod cannot pull, named with the fix.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from torchx.schedulers._kubernetes import client as _client
from torchx.schedulers._kubernetes import failure as _failure
from torchx.schedulers._kubernetes import logs as _logs
from torchx.schedulers._kubernetes import pulls as _pulls
from torchx.schedulers._kubernetes import readiness
from torchx.schedulers._kubernetes import request as _request
from torchx.schedulers._kubernetes import status as _status
from torchx.schedulers._kubernetes.client import sdk
from torchx.schedulers._kubernetes.failure import ANNOTATION_FAILURE
from torchx.schedulers._kubernetes.request import (
    ANNOTATION_ISTIO_SIDECAR,
    LABEL_APP_NAME,
    LABEL_INSTANCE,
    LABEL_INSTANCE_TYPE,
    LABEL_KIND,
    LABEL_KUBE_APP_NAME,
    LABEL_MANAGED_BY,
    LABEL_REPLICA_ID,
    LABEL_ROLE_INDEX,
    LABEL_ROLE_NAME,
    LABEL_VERSION,
    PLACEHOLDER_FIELD_PATH,
    RESERVED_MEMMB,
    RESERVED_MILLICPU,
    RETRY_POLICIES,
    KubernetesOpts,
    Opts,
    pod_labels,
)
from torchx.schedulers._kubernetes.status import JOB_STATE, TASK_STATE
from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    LogQuery,
    Scheduler,
    with_full_job_id,
)
from torchx.schedulers.ids import current_key
from torchx.specs.api import AppDef, AppDryRunInfo, AppState, CfgVal, Role, runopts
from torchx.specs.sweep import AppArray
from torchx.util.colors import BLUE, ENDC
from torchx.util.log import get_logger
from torchx.util.startup import yaml_writer
from torchx.util.startup.lazy_dataclass import dataclass
from torchx.util.strings import normalize_str
from torchx.util.support.host_checks import is_real_submit
from torchx.workspace.docker_workspace import DockerWorkspaceMixin

TYPE_CHECKING = False
if TYPE_CHECKING:
    import docker
    from kubernetes.client import ApiClient, V1Pod

    from torchx.schedulers.list_filter import ListFilter
    from torchx.specs.failure import Failure
    from torchx.util.readiness import ReadinessCheck

TORCHX_PLUGIN_API = 1
"""The torchx plugin contract this module was built against (torchx.util.plugin_api)."""

__all__ = [
    "ANNOTATION_ISTIO_SIDECAR",
    "JOB_STATE",
    "LABEL_APP_NAME",
    "LABEL_INSTANCE",
    "LABEL_INSTANCE_TYPE",
    "LABEL_KIND",
    "LABEL_KUBE_APP_NAME",
    "LABEL_MANAGED_BY",
    "LABEL_ORGANIZATION",
    "LABEL_REPLICA_ID",
    "LABEL_ROLE_INDEX",
    "LABEL_ROLE_NAME",
    "LABEL_UNIQUE_NAME",
    "LABEL_VERSION",
    "PLACEHOLDER_FIELD_PATH",
    "RESERVED_MEMMB",
    "RESERVED_MILLICPU",
    "RETRY_POLICIES",
    "TASK_STATE",
    "KubernetesJob",
    "KubernetesOpts",
    "KubernetesScheduler",
    "Opts",
    "app_to_resource",
    "create_scheduler",
    "pod_labels",
    "prefix_container_name",
    "role_to_pod",
    "sanitize_for_serialization",
]

log = get_logger(__name__)

LABEL_ORGANIZATION = LABEL_MANAGED_BY
"""Upstream's name for the ``app.kubernetes.io/managed-by`` label key."""
LABEL_UNIQUE_NAME = LABEL_INSTANCE
"""Upstream's name for the ``app.kubernetes.io/instance`` label key (the unique app id)."""

JOB_TYPES = ("volcano", "batch", "jobset")
_VOLCANO_GROUP, _VOLCANO_VERSION, _VOLCANO_PLURAL = "batch.volcano.sh", "v1alpha1", "jobs"
_VOLCANO = (_VOLCANO_GROUP, _VOLCANO_VERSION, _VOLCANO_PLURAL)
_JOBSET = (_request.JOBSET_GROUP, _request.JOBSET_VERSION, _request.JOBSET_PLURAL)
_KUEUE = (_request.KUEUE_GROUP, _request.KUEUE_VERSION)
_POLL_S = 5.0  # between two describes where the API server refuses watches
_Listed = list[tuple[ListAppResponse, list[dict[str, Any]]]]
_Rows = list[ListAppResponse]
_SELECT_BY_NAME = 50
"""Up to this many apps a listing selects their pods (Kueue workloads) by name; past it,
it reads all of TorchX's (all the namespace's), as a selector has a length."""


@dataclass
class KubernetesJob:
    """The request of ``kubernetes``: the objects to create and the images to push first.

    ``resource`` is the Volcano Job, or for ``job_type=batch`` a ``v1`` ``List`` of the
    Services and Jobs. ``str()`` is YAML that ``kubectl apply -f`` accepts.
    """

    images_to_push: dict[str, tuple[str, str]]
    resource: dict[str, Any]
    namespace: str = "default"

    def __str__(self) -> str:
        return yaml_writer.dump(self.resource)

    def __repr__(self) -> str:
        return str(self)


def sanitize_for_serialization(resource: Any) -> Any:
    """``resource`` as JSON-ready data; client models (``V1Pod``...) are converted."""
    if isinstance(resource, dict):
        return {k: sanitize_for_serialization(v) for k, v in resource.items() if v is not None}
    if isinstance(resource, (list, tuple)):
        return [sanitize_for_serialization(v) for v in resource]
    if resource is None or isinstance(resource, (str, int, float, bool)):
        return resource
    api: Any = _client.sdk().client.ApiClient()
    return api.sanitize_for_serialization(resource)


def app_to_resource(  # noqa: PLR0917 (upstream's positional signature)
    app: AppDef,
    queue: str,
    service_account: str | None,
    priority_class: str | None = None,
    reserved_millicpu: int = RESERVED_MILLICPU,
    reserved_memmb: int = RESERVED_MEMMB,
    efa_device_count: int | None = None,
) -> dict[str, Any]:
    """The Volcano Job (a JSON dict) for ``app`` under a newly generated name."""
    options = Opts(
        queue=queue,
        service_account=service_account,
        priority_class=priority_class,
        reserved_millicpu=reserved_millicpu,
        reserved_memmb=reserved_memmb,
        efa_device_count=efa_device_count,
    )
    options.check()
    return _request.volcano_job(app, _request.unique_app_id(app.name), options)


def role_to_pod(  # noqa: PLR0917 (upstream's positional signature)
    name: str,
    role: Role,
    service_account: str | None,
    reserved_millicpu: int = RESERVED_MILLICPU,
    reserved_memmb: int = RESERVED_MEMMB,
    efa_device_count: int | None = None,
) -> V1Pod:
    """The pod of one replica of ``role`` as a client ``V1Pod`` (imports ``kubernetes``)."""
    options = Opts(
        service_account=service_account,
        reserved_millicpu=reserved_millicpu,
        reserved_memmb=reserved_memmb,
        efa_device_count=efa_device_count,
    )
    options.check()
    parts = _request._RoleParts(role, options)
    env = [_request._env_entry(k, v) for k, v in role.env.items()]
    env.append({"name": "TORCHX_IMAGE", "value": role.image})
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"annotations": dict(parts.annotations)},
        "spec": _request.pod_spec(name, role.image, [role.entrypoint, *role.args], env, parts),
    }
    pod: V1Pod = _to_model(body, "V1Pod")
    return pod


def _to_model(body: dict[str, Any], klass: str) -> Any:
    """``body`` as the client model ``klass`` (pydantic models from kubernetes 37 on)."""

    k8s: Any = _client.sdk().client
    model = getattr(k8s, klass)
    if hasattr(model, "from_dict"):
        return model.from_dict(body)

    class _Response:  # kubernetes < 37 deserialises a response object
        data = json.dumps(body)

    return k8s.ApiClient().deserialize(_Response(), klass)


def _parse_app_id(app_id: str) -> tuple[str, str, str]:
    """``(namespace, job_type, name)`` of ``ns:name`` (Volcano), ``ns:batch:name`` or
    ``ns:jobset:name``."""
    parts = app_id.split(":")
    if len(parts) == 2 and all(parts):
        return parts[0], "volcano", parts[1]
    if len(parts) == 3 and parts[1] in ("batch", "jobset") and parts[0] and parts[2]:
        return parts[0], parts[1], parts[2]
    raise ValueError(
        f"invalid kubernetes app id {app_id!r}: expected NAMESPACE:NAME (Volcano),"
        " NAMESPACE:batch:NAME or NAMESPACE:jobset:NAME, as printed by `torchx run`"
    )


class KubernetesScheduler(DockerWorkspaceMixin, Scheduler[Opts]):
    """Submits apps to the cluster of the kubeconfig (or the one this pod runs in)."""

    has_event_source = True  # wait_for_change: a watch of the app's job(s)
    supports_arrays = True  # a sweep is one Indexed Job (_request.sweep_job)

    def __init__(
        self,
        session_name: str,
        client: ApiClient | None = None,
        docker_client: docker.DockerClient | None = None,
        kube_context: str | None = None,
    ) -> None:
        super().__init__("kubernetes", session_name, docker_client=docker_client)
        self._client = client
        self._kube_context = kube_context or None
        # app id -> resource version of its job(s) as the last describe read them
        self._versions: dict[str, str] = {}
        self._watch_refused = False  # RBAC without `watch`: poll instead of asking again

    # -- client ----------------------------------------------------------------------------

    def _api_client(self) -> ApiClient:
        if self._client is None:
            self._client = _client.connect(self._kube_context)
        return self._client

    def _custom(self) -> Any:
        return _client.sdk().client.CustomObjectsApi(self._api_client())

    def _core(self) -> Any:
        return _client.sdk().client.CoreV1Api(self._api_client())

    def _batch(self) -> Any:
        return _client.sdk().client.BatchV1Api(self._api_client())

    # -- options and validation ------------------------------------------------------------

    def load_for_check(self) -> None:
        """The kubernetes client (seconds to import on a busy machine)."""

        sdk()

    def check_ready(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ReadinessCheck]:
        """The kubeconfig, the API server, your permissions there, and Volcano."""

        return readiness.checks(dict(cfg or {}))

    def _run_opts(self) -> runopts:
        return Opts.as_runopts()

    def configure_placeholders(self) -> tuple[str, ...]:
        """``queue``: the default job type (Volcano) needs one, as upstream's required
        option had it."""
        return ("queue",) if Opts().job_type == "volcano" else ()

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Roles need no resource: a pod without one gets no requests or limits."""

    # -- dry run ---------------------------------------------------------------------------

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[KubernetesJob]:
        opts = Opts.from_cfg(cfg)
        if opts.queue is not None and not isinstance(opts.queue, str):
            raise TypeError(f"run option `queue` must be a string, got {opts.queue!r}")
        _request.check_namespace(opts.namespace)
        if opts.job_type not in JOB_TYPES:
            raise _request.RunOptionError(
                f"unknown job_type {opts.job_type!r}; use -cfg job_type=volcano (Volcano Job),"
                " job_type=batch (Indexed batch/v1 Jobs, no Volcano needed) or job_type=jobset"
                " (a JobSet)",
                "job_type",
            )
        images_to_push = self.dryrun_push_images(app, cfg)
        opts.check()
        app_id = _request.unique_app_id(app.name)

        job_type = "batch" if isinstance(app, AppArray) else opts.job_type  # a sweep: a Job
        # $TORCHX_JOB_ID is the handle `run` prints
        app = with_full_job_id(app, _status.app_id_of(opts.namespace, job_type, app_id))
        if isinstance(app, AppArray):
            resource = {
                "apiVersion": "v1",
                "kind": "List",
                "items": [_request.sweep_job(app, app_id, opts)],
            }
        elif opts.job_type == "volcano":
            resource = _request.volcano_job(app, app_id, opts)
        elif opts.job_type == "jobset":
            resource = _request.jobset(app, app_id, opts)
        else:
            resource = {
                "apiVersion": "v1",
                "kind": "List",
                "items": _request.batch_objects(app, app_id, opts),
            }
        job = KubernetesJob(images_to_push, resource, opts.namespace)
        self._validate_on_server(job, opts.validate_spec)
        return AppDryRunInfo(job, repr)

    def _validate_on_server(self, job: KubernetesJob, wanted: bool | None) -> None:
        if wanted is False:
            return
        if wanted is None and not _client.cluster_configured():
            if is_real_submit():
                return  # submitting says what is missing, in one line
            log.warning(
                "kubernetes: no cluster configured, skipped the server-side check of the job"
                " spec (-cfg validate_spec=True requires it)"
            )
            return
        try:
            self._create(job, dry_run=True)
        except (_client.KubernetesConfigError, _client.KubernetesApiError) as e:
            if getattr(e, "status", None) == 409 and current_key() is not None:
                return  # the app of this idempotency key exists: the runner finds it
            unreachable = isinstance(e, _client.KubernetesConfigError) or e.status is None
            if wanted or not unreachable:
                raise
            if not is_real_submit():  # submitting fails next with this very line
                log.warning("kubernetes: skipped the server-side check of the job spec: %s", e)

    # -- submit ----------------------------------------------------------------------------

    def _create(self, job: KubernetesJob, dry_run: bool = False) -> str:
        """Creates the job's objects (or checks them, ``dry_run``); returns the app id.

        ``job_type=batch`` creates several objects: if one fails, the ones already created
        are deleted again, so a failed submission leaves nothing behind.
        """
        ns = job.namespace
        kw: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
        verb = "checking (server-side dry run)" if dry_run else "creating"
        resource = job.resource
        self._check_local_queue(resource, ns)
        if resource.get("kind") == "JobSet":
            name = resource["metadata"]["name"]
            custom = self._custom()
            _client.call(
                lambda: custom.create_namespaced_custom_object(*_JOBSET[:2], ns, _JOBSET[2],
                                                               resource, **kw),
                f"{verb} JobSet {name!r}",
                ns,
                repeatable=dry_run,
            )  # fmt: skip
            return _status.app_id_of(ns, "jobset", name)
        if resource.get("kind") != "List":
            name = resource["metadata"]["name"]
            custom = self._custom()
            _client.call(
                lambda: custom.create_namespaced_custom_object(
                    _VOLCANO_GROUP, _VOLCANO_VERSION, ns, _VOLCANO_PLURAL, resource, **kw
                ),
                f"{verb} Volcano job {name!r}",
                ns,
                repeatable=dry_run,
            )
            return _status.app_id_of(ns, "volcano", name)
        core, batch = self._core(), self._batch()
        created: list[tuple[str, str]] = []
        app_id = ""
        try:
            for obj in resource["items"]:
                kind, name = obj["kind"], obj["metadata"]["name"]
                app_id = obj["metadata"]["labels"][LABEL_INSTANCE]
                create = (
                    core.create_namespaced_service
                    if kind == "Service"
                    else batch.create_namespaced_job
                )
                _client.call(
                    functools.partial(create, ns, obj, **kw),
                    f"{verb} {kind} {name!r}",
                    ns,
                    repeatable=dry_run,
                )
                created.append((kind, name))
        except BaseException:
            if not dry_run:
                self._remove_created(ns, created)
            raise
        return _status.app_id_of(ns, "batch", app_id)

    def _check_local_queue(self, resource: dict[str, Any], ns: str) -> None:
        """A Kueue LocalQueue the app names must exist before anything is created: Kueue
        would hold the app without end (one line instead, naming the queues there are)."""
        first = resource["items"][-1] if resource.get("kind") == "List" else resource
        queue = _status.labels_of(first).get(_request.LABEL_KUEUE_QUEUE)
        if not queue:
            return
        custom = self._custom()
        try:
            _client.read_json(
                custom.get_namespaced_custom_object,
                f"reading Kueue LocalQueue {queue!r}",
                ns,
                *_KUEUE,
                ns,
                "localqueues",
                queue,
            )
        except _client.ApiMissing:
            raise
        except _client.NotFound:
            known = ", ".join(sorted(self._local_queues(ns))) or "none"
            raise _client.KubernetesApiError(
                f"Kueue LocalQueue {queue!r} does not exist in namespace {ns!r} (LocalQueues"
                f" there: {known}); pass -cfg queue=NAME of one of them, or -cfg queue=- to"
                " run without Kueue",
                404,
            ) from None
        except _client.KubernetesApiError as e:
            if e.status != 403:
                raise
            log.debug("cannot read LocalQueue %s (%s); submitting anyway", queue, e)

    def _local_queues(self, ns: str) -> dict[str, str]:
        """``{LocalQueue: its ClusterQueue}`` in ``ns`` (empty when they cannot be read)."""
        custom = self._custom()
        try:
            found = _client.read_json(
                custom.list_namespaced_custom_object,
                "listing Kueue LocalQueues",
                ns,
                *_KUEUE,
                ns,
                "localqueues",
            )
        except _client.KubernetesApiError:
            return {}
        return {
            str(q["metadata"]["name"]): str((q.get("spec") or {}).get("clusterQueue") or "")
            for q in found.get("items") or ()
        }

    def _kueue(self, ns: str, objects: list[dict[str, Any]]) -> tuple[str, Failure | None]:
        """(why Kueue holds the app, or ``""``; its rejection of the app, if it rejected it)."""
        queue = next(
            (q for o in objects if (q := _status.labels_of(o).get(_request.LABEL_KUEUE_QUEUE))), ""
        )
        if not queue or not any(o["metadata"].get("uid") for o in objects):
            return "", None
        try:
            items = self._workloads(ns, objects)
        except _client.KubernetesApiError as e:  # no right to read them: say what is known
            log.debug("cannot read the Kueue workloads of the app (%s)", e)
            return f"queued in LocalQueue {queue!r}", None
        role = _status.labels_of(objects[0]).get(LABEL_ROLE_NAME, "")
        rejected = _status.kueue_rejection(items, role)
        cluster_queue = self._local_queues(ns).get(queue) or None
        return _status.kueue_reason(items, queue, cluster_queue), rejected

    def _remove_created(self, ns: str, created: list[tuple[str, str]]) -> None:
        core, batch = self._core(), self._batch()
        for kind, name in reversed(created):
            try:
                if kind == "Service":
                    core.delete_namespaced_service(name, ns)
                else:
                    batch.delete_namespaced_job(name, ns, propagation_policy="Background")
            except Exception as e:  # best effort: report and go on with the others
                log.warning("could not remove %s %s/%s again: %s", kind, ns, name, e)

    def schedule(self, dryrun_info: AppDryRunInfo[KubernetesJob]) -> str:
        job = dryrun_info.request
        if job.images_to_push:
            self.push_images(job.images_to_push, quiet=bool(dryrun_info._cfg.get("quiet")))
        return self._create(job)

    # -- state -----------------------------------------------------------------------------

    def _pods(self, ns: str, selector: str) -> list[dict[str, Any]]:
        core = self._core()
        found = _client.read_json(
            core.list_namespaced_pod, "listing pods", ns, ns, label_selector=selector
        )
        return list(found.get("items") or [])

    def _batch_jobs(
        self, ns: str, selector: str, app_id: str | None = None
    ) -> list[dict[str, Any]]:
        batch = self._batch()
        found = _client.read_json(
            batch.list_namespaced_job, "listing jobs", ns, ns, label_selector=selector
        )
        if app_id is not None:
            self._remember_version(app_id, found)
        return list(found.get("items") or [])

    def _remember_version(self, app_id: str, obj: dict[str, Any]) -> None:
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            self._versions[app_id] = str(version)
        else:
            self._versions.pop(app_id, None)

    def _custom_object(
        self, ns: str, api: tuple[str, str, str], name: str, what: str
    ) -> dict[str, Any] | None:
        """One custom object (``api``: group, version, plural), or None if it is gone."""
        custom = self._custom()
        group, version, plural = api
        try:
            found: dict[str, Any] = _client.read_json(
                custom.get_namespaced_custom_object,
                f"reading {what} {name!r}",
                ns,
                group,
                version,
                ns,
                plural,
                name,
            )
        except _client.NotFound:
            return None
        return found

    def _volcano_job(self, ns: str, name: str) -> dict[str, Any] | None:
        return self._custom_object(ns, _VOLCANO, name, "Volcano job")

    def _jobset(self, ns: str, name: str) -> dict[str, Any] | None:
        return self._custom_object(ns, _JOBSET, name, "JobSet")

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The app's state in two API calls (its job(s) and its pods), or None if gone; for
        a failed app one more, the end of its root cause's log. An app TorchX finds
        failed itself (an image it cannot pull) is stopped: it holds nothing after."""
        ns, job_type, name = _parse_app_id(app_id)

        def tail(pod: dict[str, Any]) -> str:
            return _logs.log_tail(self._core(), ns, pod)

        if job_type == "volcano":
            job = self._volcano_job(ns, name)
            if job is None:
                return None
            self._remember_version(app_id, job)
            objects, rejected = [job], None
            pods = self._pods(ns, f"{LABEL_INSTANCE}={name}")
            response = _status.describe_volcano(app_id, ns, job, pods, tail=tail)
        elif job_type == "jobset":
            jobset = self._jobset(ns, name)
            if jobset is None:
                return None
            self._remember_version(app_id, jobset)
            objects = [jobset]
            pods = self._pods(ns, f"{_request.LABEL_JOBSET_NAME}={name}")
            kueue, rejected = "", None
            if _status.jobset_app_state(jobset) == AppState.PENDING:
                kueue, rejected = self._kueue(ns, [jobset])
            response = _status.describe_jobset(app_id, ns, jobset, pods, kueue, tail=tail)
        else:
            objects = self._batch_jobs(ns, f"{LABEL_INSTANCE}={name}", app_id)
            if not objects:
                return None
            pods = self._pods(ns, f"{LABEL_INSTANCE}={name}")
            kueue, rejected = "", None
            if _status.batch_app_state(objects) == AppState.PENDING:
                kueue, rejected = self._kueue(ns, objects)
            response = _status.describe_batch(app_id, ns, objects, pods, kueue, tail=tail)
            response.array = _status.sweep_status(objects, response)
        if rejected is not None and response.state == AppState.PENDING:
            if not rejected.role and response.roles:
                rejected.role = response.roles[0].name
            response.state, response.failure = AppState.FAILED, rejected
            response.msg = rejected.message
        failure = response.failure
        ended = any(_failure.failure_of_annotation(o) is not None for o in objects)
        if failure is not None and failure.cause == "image_pull" and not ended:
            self._end_failed(app_id, objects, failure)
        if response.waiting is not None and (pod := _pulls.awaiting_start(pods)):
            _pulls.with_image_pull(response, self._events(ns, pod))
        if (first := _status.first_replica_pod(pods)) is not None:
            response.progress_tail = functools.partial(tail, first)  # read when asked
        return response

    def describe_native(self, app_id: str) -> AppDryRunInfo[KubernetesJob] | None:
        """The app's objects as the cluster holds them now (its Volcano job or JobSet, or
        for ``job_type=batch`` a ``List`` of its Services and Jobs), in the request type of
        a dry run; ``images_to_push`` is empty (they were pushed at submission). None once
        the app is gone."""
        ns, job_type, name = _parse_app_id(app_id)
        resource: dict[str, Any] | None
        if job_type == "volcano":
            resource = self._volcano_job(ns, name)
        elif job_type == "jobset":
            resource = self._jobset(ns, name)
        else:
            selector = f"{LABEL_INSTANCE}={name}"
            jobs = self._batch_jobs(ns, selector)
            core = self._core()
            services = _client.read_json(
                core.list_namespaced_service, "listing services", ns, ns, label_selector=selector
            )
            items = [
                *(
                    {"apiVersion": "v1", "kind": "Service", **o}
                    for o in services.get("items") or []
                ),
                *({"apiVersion": "batch/v1", "kind": "Job", **o} for o in jobs),
            ]
            resource = {"apiVersion": "v1", "kind": "List", "items": items} if jobs else None
        if resource is None:
            return None
        return AppDryRunInfo(
            KubernetesJob(images_to_push={}, resource=resource, namespace=ns), repr
        )

    def _events(self, ns: str, pod: str) -> list[dict[str, Any]]:
        """The events of one pod (kubelet's pulls), none when they cannot be read."""
        core = self._core()
        try:
            found = _client.read_json(
                core.list_namespaced_event,
                "listing the events of a pod",
                ns,
                ns,
                field_selector=f"involvedObject.kind=Pod,involvedObject.name={pod}",
            )
        except _client.KubernetesApiError as e:  # no right to read them: say what is known
            log.debug("cannot read the events of pod %s (%s)", pod, e)
            return []
        return list(found.get("items") or ())

    def _end_failed(self, app_id: str, objects: list[dict[str, Any]], failure: Failure) -> None:
        """Ends an app TorchX found failed: the failure is written on its objects (for
        ``describe``), then they are stopped as ``cancel`` stops them (Volcano: aborted;
        Jobs and JobSets: suspended, their pods deleted by their controllers) or, queued in
        Kueue, their workloads deactivated (Kueue then stops them and never requeues)."""
        ns, job_type, name = _parse_app_id(app_id)
        note = {
            "metadata": {
                "annotations": {ANNOTATION_FAILURE: _failure.failure_to_annotation(failure)}
            }
        }
        queued = any(_status.labels_of(o).get(_request.LABEL_KUEUE_QUEUE) for o in objects)
        stop: dict[str, Any] = {} if queued else {"spec": {"suspend": True}}
        custom = self._custom()
        if job_type == "jobset":
            _client.call(
                lambda: custom.patch_namespaced_custom_object(
                    *_JOBSET[:2], ns, _JOBSET[2], name, {**note, **stop}
                ),
                f"ending JobSet {name!r} (it failed)",
                ns,
            )
        elif job_type == "volcano":
            _client.call(
                lambda: custom.patch_namespaced_custom_object(
                    _VOLCANO_GROUP, _VOLCANO_VERSION, ns, _VOLCANO_PLURAL, name, note
                ),
                f"marking Volcano job {name!r} failed",
                ns,
            )
            self._cancel_existing(app_id)  # aborts it
        else:
            batch = self._batch()
            for job in objects:
                job_name = job["metadata"]["name"]
                _client.call(
                    functools.partial(batch.patch_namespaced_job, job_name, ns, {**note, **stop}),
                    f"ending Job {job_name!r} (it failed)",
                    ns,
                )
        if queued:
            self._deactivate_workloads(ns, objects)

    def _workloads(self, ns: str, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The Kueue workloads of ``objects`` (by their uids), in one list call (of all
        the namespace's workloads when they are many: a selector has a length)."""
        uids = [str(o["metadata"].get("uid")) for o in objects if o["metadata"].get("uid")]
        by_uid: dict[str, str] = {}
        if len(uids) <= _SELECT_BY_NAME:
            by_uid["label_selector"] = f"{_request.LABEL_KUEUE_JOB_UID} in ({','.join(uids)})"
        found = _client.read_json(
            self._custom().list_namespaced_custom_object,
            "listing Kueue workloads",
            ns,
            *_KUEUE,
            ns,
            "workloads",
            **by_uid,
        )
        wanted = set(uids)
        return [
            w
            for w in found.get("items") or ()
            if _status.labels_of(w).get(_request.LABEL_KUEUE_JOB_UID) in wanted
        ]

    def _deactivate_workloads(self, ns: str, objects: list[dict[str, Any]]) -> None:
        """Sets ``spec.active: false`` on the Kueue workloads of ``objects``."""
        custom = self._custom()
        for workload in self._workloads(ns, objects):
            wl_name = workload["metadata"]["name"]
            _client.call(
                functools.partial(
                    custom.patch_namespaced_custom_object,
                    *_KUEUE,
                    ns,
                    "workloads",
                    wl_name,
                    {"spec": {"active": False}},
                ),
                f"deactivating Kueue workload {wl_name!r}",
                ns,
            )

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        """Returns at the first change of the app's job(s), or after ``timeout`` seconds.

        A job object changes whenever one of its pods does (Volcano's task counts, the Job
        controller's active/ready/succeeded/failed counts and conditions), so one watch of
        the job(s) sees every state change. It starts after the resource version the last
        ``describe`` read, so nothing that happened in between is missed (without one, the
        watch lists the job(s) first and returns at once). Where the server refuses the
        watch (RBAC without ``watch``) this polls: it sleeps at most ``_POLL_S``.
        """

        if timeout <= 0:
            return
        if self._watch_refused:
            time.sleep(min(timeout, _POLL_S))
            return
        ns, job_type, name = _parse_app_id(app_id)
        since = {"resource_version": self._versions[app_id]} if app_id in self._versions else {}
        start = time.monotonic()
        try:
            if job_type == "volcano":
                _client.first_event(
                    self._custom().list_namespaced_custom_object,
                    f"watching Volcano job {name!r}",
                    ns,
                    timeout,
                    _VOLCANO_GROUP,
                    _VOLCANO_VERSION,
                    ns,
                    _VOLCANO_PLURAL,
                    field_selector=f"metadata.name={name}",
                    **since,
                )
            elif job_type == "jobset":
                _client.first_event(
                    self._custom().list_namespaced_custom_object,
                    f"watching JobSet {name!r}",
                    ns,
                    timeout,
                    *_JOBSET[:2],
                    ns,
                    _JOBSET[2],
                    field_selector=f"metadata.name={name}",
                    **since,
                )
            else:
                _client.first_event(
                    self._batch().list_namespaced_job,
                    f"watching the jobs of {name!r}",
                    ns,
                    timeout,
                    ns,
                    label_selector=f"{LABEL_INSTANCE}={name}",
                    **since,
                )
        except _client.KubernetesApiError as e:
            if e.status == 410:  # the version expired: describe again for a fresh one
                self._versions.pop(app_id, None)
                return
            log.debug("cannot watch %s (%s); polling instead", app_id, e)
            self._watch_refused = e.status == 403
            time.sleep(max(0.0, min(timeout, _POLL_S) - (time.monotonic() - start)))

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """TorchX apps in ``cfg["namespace"]`` (else the kube context's, else default)."""
        return list(self._rows(cfg))

    def list_iter(
        self, cfg: Mapping[str, CfgVal] | None = None, list_filter: ListFilter | None = None
    ) -> Iterator[ListAppResponse]:
        """:meth:`list` page by page: the Volcano jobs of each page as it arrives, then
        the batch apps (an app's Jobs may span pages, so they come once all are read)."""
        if list_filter is not None and list_filter.since is not None:
            yield from super().list_iter(cfg, list_filter)  # says that --since is not applied
            return
        for row in self._rows(cfg):
            if list_filter is None or list_filter.apply([row]):
                yield row

    def _rows(self, cfg: Mapping[str, CfgVal] | None) -> Iterator[ListAppResponse]:
        ns = str((cfg or {}).get("namespace") or self._default_namespace())
        _request.check_namespace(ns)
        selector = f"{LABEL_MANAGED_BY}={_request.MANAGED_BY}"
        custom = self._custom()
        volcano = _pages(
            custom.list_namespaced_custom_object,
            "listing Volcano jobs",
            ns,
            _VOLCANO_GROUP,
            _VOLCANO_VERSION,
            ns,
            _VOLCANO_PLURAL,
            label_selector=selector,
        )
        try:
            for page in volcano:
                yield from self._with_waiting(ns, _status.list_rows(ns, page, []))
        except _client.NotFound:  # no Volcano on this cluster
            pass
        batch = _pages(
            self._batch().list_namespaced_job,
            "listing jobs",
            ns,
            ns,
            label_selector=f"{selector},{LABEL_KIND}=batch",
        )
        jobs = [job for page in batch for job in page]
        yield from self._with_waiting(ns, _status.list_rows(ns, [], jobs))
        jobsets = _pages(
            custom.list_namespaced_custom_object,
            "listing JobSets",
            ns,
            *_JOBSET[:2],
            ns,
            _JOBSET[2],
            label_selector=selector,
        )
        try:
            for page in jobsets:
                yield from self._with_waiting(ns, _status.list_rows(ns, [], [], page))
        except _client.NotFound:  # no JobSet on this cluster
            pass

    def _with_waiting(self, ns: str, rows: _Listed) -> _Rows:
        """The rows, each pending one with why it waits: at most two calls for all of them
        (the Kueue workloads of those Kueue holds, the pods of the others), none when no
        app waits."""
        pending = [(row, objects) for row, objects in rows if row.state == AppState.PENDING]
        if not pending:
            return [row for row, _ in rows]
        queued = [
            o for _, objects in pending for o in objects
            if _status.labels_of(o).get(_request.LABEL_KUEUE_QUEUE)
        ]  # fmt: skip
        workloads: list[dict[str, Any]] | None = []
        if queued:
            try:
                workloads = self._workloads(ns, queued)
            except _client.KubernetesApiError as e:  # no right to read them
                log.debug("cannot read Kueue workloads (%s)", e)
                workloads = None
        names = sorted(
            {
                n
                for _, objects in pending
                if (n := _status.labels_of(objects[0]).get(LABEL_INSTANCE))
            }
        )
        selector = f"{LABEL_MANAGED_BY}={_request.MANAGED_BY}"
        if len(names) <= _SELECT_BY_NAME:  # else every TorchX pod: a selector has a length
            selector = f"{LABEL_INSTANCE} in ({','.join(names)})"
        pods: list[dict[str, Any]] | None = []
        if names:
            try:
                pods = self._pods(ns, selector)
            except _client.KubernetesApiError as e:  # no right to list pods: the state only
                log.debug("cannot list the pods of waiting apps (%s)", e)
                pods = None
        for row, objects in pending:
            row.waiting = _status.list_waiting(objects, workloads, pods)
        return [row for row, _ in rows]

    def _default_namespace(self) -> str:
        if _client._in_cluster() and not self._kube_context:
            path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
            if os.path.exists(path):
                with open(path) as f:
                    return f.read().strip() or "default"
        try:
            config: Any = _client.sdk().config

            contexts, active = config.list_kube_config_contexts(
                config_file=_client.kubeconfig_arg()
            )
            if self._kube_context:
                active = next((c for c in contexts if c.get("name") == self._kube_context), active)
            return str(((active or {}).get("context") or {}).get("namespace") or "default")
        except Exception:
            return "default"

    # -- cancel / delete -------------------------------------------------------------------

    def cancel(self, app_id: str) -> None:
        """Cancels the app; an unknown one is ignored by the calls themselves, so no
        ``describe`` (a job read plus a pod list) comes first."""
        self._cancel_existing(app_id)

    def delete(self, app_id: str) -> None:
        """Deletes the app; deleting an unknown one changes nothing (see :meth:`cancel`)."""
        self._delete_existing(app_id)

    def _cancel_existing(self, app_id: str) -> None:
        """Volcano: aborts the job; batch and jobset: suspends the Job(s) or JobSet; all are
        kept for inspection. An app queued in Kueue is deleted with its workload instead
        (Kueue owns the suspension of what it queues)."""
        ns, job_type, name = _parse_app_id(app_id)
        if job_type == "jobset":
            jobset = self._jobset(ns, name)
            if jobset is None:
                return
            if _status.labels_of(jobset).get(_request.LABEL_KUEUE_QUEUE):
                self._delete_existing(app_id)
                return
            custom = self._custom()
            _client.call(
                lambda: custom.patch_namespaced_custom_object(
                    *_JOBSET[:2], ns, _JOBSET[2], name, {"spec": {"suspend": True}}
                ),
                f"suspending JobSet {name!r}",
                ns,
            )
            return
        if job_type == "volcano":
            job = self._volcano_job(ns, name)
            if job is None:
                return
            status = job.setdefault("status", {})
            status.setdefault("state", {})["phase"] = "Aborted"
            custom = self._custom()
            _client.call(
                lambda: custom.replace_namespaced_custom_object_status(
                    _VOLCANO_GROUP, _VOLCANO_VERSION, ns, _VOLCANO_PLURAL, name, job
                ),
                f"aborting Volcano job {name!r}",
                ns,
            )
            return
        batch = self._batch()
        jobs = self._batch_jobs(ns, f"{LABEL_INSTANCE}={name}")
        if any(_status.labels_of(job).get(_request.LABEL_KUEUE_QUEUE) for job in jobs):
            self._delete_existing(app_id)
            return
        for job in jobs:
            job_name = job["metadata"]["name"]
            _client.call(
                functools.partial(
                    batch.patch_namespaced_job, job_name, ns, {"spec": {"suspend": True}}
                ),
                f"suspending Job {job_name!r}",
                ns,
            )

    def _delete_existing(self, app_id: str) -> None:
        """Deletes the job(s) (and Services); their pods go with them."""
        ns, job_type, name = _parse_app_id(app_id)
        if job_type == "jobset":  # its Service and Jobs (and a Kueue workload) go with it
            custom = self._custom()
            with contextlib.suppress(_client.NotFound):  # deleted meanwhile
                _client.call(
                    lambda: custom.delete_namespaced_custom_object(
                        *_JOBSET[:2], ns, _JOBSET[2], name, propagation_policy="Background"
                    ),
                    f"deleting JobSet {name!r}",
                    ns,
                )
            return
        if job_type == "volcano":
            custom = self._custom()
            with contextlib.suppress(_client.NotFound):  # deleted meanwhile
                _client.call(
                    lambda: custom.delete_namespaced_custom_object(
                        _VOLCANO_GROUP, _VOLCANO_VERSION, ns, _VOLCANO_PLURAL, name,
                        propagation_policy="Background",
                    ),
                    f"deleting Volcano job {name!r}",
                    ns,
                )  # fmt: skip
            return
        selector = f"{LABEL_INSTANCE}={name}"
        batch, core = self._batch(), self._core()
        _client.call(
            lambda: batch.delete_collection_namespaced_job(
                ns, label_selector=selector, propagation_policy="Background"
            ),
            f"deleting the Jobs of {name!r}",
            ns,
        )
        _client.call(
            lambda: core.delete_collection_namespaced_service(ns, label_selector=selector),
            f"deleting the Services of {name!r}",
            ns,
        )

    # -- logs ------------------------------------------------------------------------------

    def _replica_pod(self, app_id: str, role_name: str, k: int) -> tuple[str, dict[str, Any]]:
        ns, job_type, name = _parse_app_id(app_id)
        if job_type == "volcano":
            pod_name = normalize_str(f"{name}-{role_name}-{k}-0")
            core = self._core()
            try:
                pod = _client.read_json(
                    core.read_namespaced_pod, f"reading pod {pod_name!r}", ns, pod_name, ns
                )
            except _client.NotFound:
                pod = None
        else:
            if job_type == "jobset":
                rjob = _request.jobset_replicated_job(role_name)
                selector = (
                    f"{_request.LABEL_JOBSET_NAME}={name},{_request.LABEL_JOBSET_RJOB}={rjob}"
                )
            else:
                selector = f"job-name={_request.batch_job_name(name, role_name)}"
            pods = self._pods(ns, f"{selector},{_request.LABEL_COMPLETION_INDEX}={k}")
            pod = _status.newest_pod(pods) if pods else None
        if pod is None:
            raise ValueError(
                f"no pod for replica {k} of role {role_name!r} of app {app_id} (not started"
                " yet, or deleted); check `torchx status` for the role names and replica ids"
            )
        return ns, pod

    def _log_lines(self, query: LogQuery) -> Iterable[str]:
        """Lines (timestamped by Kubernetes) of every container of replica ``k``
        (:func:`torchx.schedulers._kubernetes.logs.replica_lines`)."""
        _logs.check_stream(query.stream)
        ns, pod = self._replica_pod(query.app_id, query.role_name, query.k)
        return _logs.replica_lines(self._core(), ns, pod, query)


LIST_PAGE = 500
"""Objects per list request: a namespace of thousands of jobs is read in pages (the API
server's ``continue`` token), so no single answer is huge."""


def _pages(
    fn: Callable[..., Any], action: str, ns: str, /, *args: Any, **kw: Any
) -> Iterator[list[dict[str, Any]]]:
    """The items of a list call, a page at a time (``limit`` + ``continue``), each page
    asked for only when the one before is used."""
    token: str | None = None
    while True:
        page_kw = dict(kw, limit=LIST_PAGE)
        if token:
            page_kw["_continue"] = token
        page = _client.read_json(fn, action, ns, *args, **page_kw)
        yield list(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


def prefix_container_name(container_name: str, role_name: str, replica_id: int) -> str:
    """What goes before a log line of a pod's container: nothing for the replica's own
    container (``<role>-<replica>``), else the container's name, coloured on a terminal."""
    if container_name == f"{role_name}-{replica_id}":
        return ""

    return f"{BLUE}{container_name}{ENDC} "


def create_scheduler(
    session_name: str,
    client: ApiClient | None = None,
    docker_client: docker.DockerClient | None = None,
    kube_context: str | None = None,
    **kwargs: Any,
) -> KubernetesScheduler:
    """Entry point of ``kubernetes``. ``kube_context`` (env ``TORCHX_KUBE_CONTEXT``) picks a
    kubeconfig context; other ``kwargs`` (``TORCHX_*`` env vars the runner forwards) are
    ignored."""
    del kwargs
    return KubernetesScheduler(
        session_name, client=client, docker_client=docker_client, kube_context=kube_context
    )
