"""``torchx check`` probes of the ``kubernetes`` scheduler: the kubeconfig (context and
namespace), the API server, what this user may do there (SelfSubjectAccessReviews, which
the API server answers without storing anything), whether Volcano and JobSet are installed,
and Kueue with the LocalQueues of the namespace."""

from __future__ import annotations

import json
import os
from typing import Any

from torchx.schedulers._kubernetes.client import (
    KubernetesConfigError,
    api_error,
    cluster_configured,
    connect,
    kubeconfig_arg,
    sdk,
)
from torchx.util.readiness import ReadinessCheck, not_configured, not_ready, ready

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kubernetes.client import ApiClient

TIMEOUT_S = 3.0

# (verb, API group, resource, subresource) the scheduler needs, per job type
_NEEDED = {
    "volcano": [
        ("create", "batch.volcano.sh", "jobs", ""),
        ("get", "", "pods", ""),
        ("get", "", "pods", "log"),
    ],
    "batch": [
        ("create", "batch", "jobs", ""),
        ("create", "", "services", ""),
        ("get", "", "pods", ""),
        ("get", "", "pods", "log"),
    ],
    "jobset": [
        ("create", "jobset.x-k8s.io", "jobsets", ""),
        ("get", "", "pods", ""),
        ("get", "", "pods", "log"),
    ],
}


def _context() -> tuple[str, str]:
    """(context name, its namespace) of the kubeconfig, as the scheduler would use them."""
    config = sdk().config
    contexts, active = config.list_kube_config_contexts(config_file=kubeconfig_arg())
    wanted = os.environ.get("TORCHX_KUBE_CONTEXT")
    if wanted:
        active = next((c for c in contexts or () if c.get("name") == wanted), None)
        if active is None:
            raise ValueError(f"context {wanted!r} (TORCHX_KUBE_CONTEXT) is not in the kubeconfig")
    active = active or {}
    return str(active.get("name", "")), str((active.get("context") or {}).get("namespace") or "")


def _json_of(response: Any) -> Any:
    try:
        return json.loads(response.data or b"{}")
    finally:
        response.release_conn()


def _version(client: ApiClient) -> Any:
    raw = (
        sdk().client.VersionApi(client).get_code(_preload_content=False, _request_timeout=TIMEOUT_S)
    )
    return _json_of(raw)


def _served(client: ApiClient) -> set[str]:
    """Every ``group/version`` the API server serves (one discovery call for Volcano,
    JobSet and Kueue together)."""
    raw = (
        sdk()
        .client.ApisApi(client)
        .get_api_versions(_preload_content=False, _request_timeout=TIMEOUT_S)
    )
    return {
        str(v.get("groupVersion"))
        for group in _json_of(raw).get("groups") or ()
        for v in group.get("versions") or ()
    }


def _review(  # noqa: PLR0917 (one access question)
    client: ApiClient, namespace: str, verb: str, group: str, resource: str, sub: str
) -> Any:
    k8s = sdk().client
    attributes = k8s.V1ResourceAttributes(
        namespace=namespace, verb=verb, group=group, resource=resource, subresource=sub or None
    )
    body = k8s.V1SelfSubjectAccessReview(
        api_version="authorization.k8s.io/v1",
        kind="SelfSubjectAccessReview",
        spec=k8s.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes),
    )
    raw = k8s.AuthorizationV1Api(client).create_self_subject_access_review(
        body, _preload_content=False, _request_timeout=TIMEOUT_S
    )
    return _json_of(raw)


def _error_of(e: Exception, action: str, namespace: str) -> tuple[str, str]:
    """(found, fix) for a failed API call, from the scheduler's own one-line errors."""

    text = str(api_error(e, action, namespace))
    found, sep, fix = text.partition("; ")
    return found, fix if sep else "see `kubectl cluster-info` and `kubectl auth can-i --list`"


def checks(cfg: dict[str, Any]) -> list[ReadinessCheck]:
    if not cluster_configured():
        return [
            not_configured(
                "kubeconfig",
                f"no kubeconfig at {kubeconfig_arg()} and not running in a pod",
                "point KUBECONFIG at your cluster's config (e.g. `aws eks update-kubeconfig`,"
                " `gcloud container clusters get-credentials`)",
            )
        ]
    try:
        client = connect(os.environ.get("TORCHX_KUBE_CONTEXT") or None)
        context, context_ns = _context()
    except (KubernetesConfigError, ValueError) as e:
        found, _, fix = str(e).partition("; ")
        return [not_ready("kubeconfig", found, fix or "fix the kubeconfig (`kubectl config view`)")]
    _no_retries(client)
    namespace = str(cfg.get("namespace") or context_ns or "default")
    job_type = str(cfg.get("job_type") or "volcano")
    host = client.configuration.host
    checks = [ready("kubeconfig", f"context {context or '(in-cluster)'}, namespace {namespace}")]

    try:
        version = _version(client)
    except Exception as e:
        found, fix = _error_of(e, "asking for its version", namespace)
        checks.append(not_ready("api server", found, fix))
        return checks
    checks.append(ready("api server", f"Kubernetes {version.get('gitVersion', '?')} at {host}"))
    try:
        served = _served(client)
    except Exception as e:
        found, fix = _error_of(e, "listing its APIs", namespace)
        checks.append(not_ready("apis", found, fix))
        return checks
    checks.append(_volcano_check("batch.volcano.sh/v1alpha1" in served, job_type))
    checks.append(_jobset_check("jobset.x-k8s.io/v1alpha2" in served, job_type))
    checks.append(_kueue_check(client, "kueue.x-k8s.io/v1beta2" in served, cfg, namespace))
    checks.append(_permissions_check(client, job_type, namespace))
    return checks


def _no_retries(client: ApiClient) -> None:
    """One attempt per call: a probe reports a down server at once rather than retrying."""
    client.configuration.retries = False
    pool = getattr(client.rest_client, "pool_manager", None)
    if pool is not None:
        pool.connection_pool_kw["retries"] = False


def _volcano_check(installed: bool, job_type: str) -> ReadinessCheck:
    if installed:
        return ready("volcano", f"installed (batch.volcano.sh); job_type={job_type} applies")
    if job_type == "volcano":
        return not_ready(
            "volcano",
            "not installed (no batch.volcano.sh API), and job_type=volcano (the default)",
            "run with -cfg job_type=batch (plain Kubernetes Jobs; or set it in [kubernetes] of"
            " .torchxconfig), or install Volcano",
        )
    return ready("volcano", "not installed; job_type=batch needs none")


def _permissions_check(client: ApiClient, job_type: str, namespace: str) -> ReadinessCheck:
    needed = _NEEDED.get(job_type, _NEEDED["volcano"])
    denied = []
    for verb, group, resource, sub in needed:
        what = f"{verb} {resource}{'/' + sub if sub else ''}{'.' + group if group else ''}"
        try:
            review = _review(client, namespace, verb, group, resource, sub)
        except Exception as e:
            found, _ = _error_of(e, "asking what you may do (SelfSubjectAccessReview)", namespace)
            return not_ready(
                "permissions",
                found,
                "ask a cluster admin to let you create selfsubjectaccessreviews"
                " (authorization.k8s.io), or check with `kubectl auth can-i --list`",
            )
        if not (review.get("status") or {}).get("allowed"):
            denied.append(what)
    if denied:
        return not_ready(
            "permissions",
            f"in namespace {namespace} you may not: {', '.join(denied)}",
            f"ask a cluster admin for a Role granting {', '.join(denied)} in namespace"
            f" {namespace}, or pick a namespace you may use (-cfg namespace=...)",
        )
    allowed = ", ".join(f"{v} {r}{'/' + s if s else ''}" for v, _, r, s in needed)
    return ready("permissions", f"in namespace {namespace} you may {allowed}")


def _jobset_check(installed: bool, job_type: str) -> ReadinessCheck:
    if installed:
        return ready("jobset", "installed (jobset.x-k8s.io); -cfg job_type=jobset works")
    if job_type == "jobset":
        return not_ready(
            "jobset",
            "not installed (no jobset.x-k8s.io API), and job_type=jobset",
            "install JobSet (https://jobset.sigs.k8s.io/docs/installation/) or run with"
            " -cfg job_type=batch (an Indexed Job per role)",
        )
    return ready("jobset", f"not installed; job_type={job_type} needs none")


def _local_queues(client: ApiClient, namespace: str) -> dict[str, str]:
    raw = (
        sdk()
        .client.CustomObjectsApi(client)
        .list_namespaced_custom_object(
            "kueue.x-k8s.io",
            "v1beta2",
            namespace,
            "localqueues",
            _preload_content=False,
            _request_timeout=TIMEOUT_S,
        )
    )
    return {
        str(q["metadata"]["name"]): str((q.get("spec") or {}).get("clusterQueue") or "?")
        for q in _json_of(raw).get("items") or ()
    }


def _kueue_check(
    client: ApiClient, installed: bool, cfg: dict[str, Any], namespace: str
) -> ReadinessCheck:
    """Kueue's API, and the LocalQueues of the namespace (the apps' ``queue``)."""
    queue = str(cfg.get("queue") or "")
    wanted = queue not in ("", "-") and str(cfg.get("job_type")) in ("batch", "jobset")
    try:
        queues = _local_queues(client, namespace) if installed else {}
    except sdk().client.exceptions.ApiException as e:
        if e.status == 403 and not wanted:  # a user who does not queue need not see them
            return ready("kueue", f"installed; you may not list the LocalQueues of {namespace}")
        found, fix = _error_of(e, "looking for Kueue and its LocalQueues", namespace)
        return not_ready("kueue", found, fix)
    if not installed:
        if wanted:
            return not_ready(
                "kueue",
                f"not installed (no kueue.x-k8s.io API), and queue={queue} asks for it",
                "install Kueue (https://kueue.sigs.k8s.io/docs/installation/) or run with"
                " -cfg queue=- (no queue)",
            )
        return ready("kueue", "not installed; needed only for job_type=batch/jobset with a queue")
    listed = ", ".join(f"{q} (ClusterQueue {cq})" for q, cq in sorted(queues.items())) or "none"
    if wanted and queue not in queues:
        return not_ready(
            "kueue",
            f"LocalQueue {queue} does not exist in namespace {namespace} (LocalQueues there:"
            f" {listed})",
            "pass -cfg queue=NAME of one of them, ask a cluster admin for one, or run with"
            " -cfg queue=- (no queue)",
        )
    return ready("kueue", f"installed; LocalQueues in {namespace} to submit to: {listed}")
