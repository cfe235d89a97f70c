"""Why a replica failed on Kubernetes, from its pod as the API server returns it (plain
JSON): a container's ``terminated`` state (``OOMKilled``, its exit code and signal, when
it finished), the pod's own ``reason`` (``DeadlineExceeded``, ``Evicted``), its
``DisruptionTarget`` condition (preempted, evicted, its node lost), or the image it cannot
pull. A Job can also fail with no failed pod left (``DeadlineExceeded``).

When TorchX itself ends an app (an image that cannot be pulled, after
``image_pull_timeout``), the failure is written on the app's top object as the
:data:`ANNOTATION_FAILURE` annotation, so ``describe`` keeps saying why once the pods are
gone.
"""

from __future__ import annotations

import datetime as dt
import json

from torchx.specs.failure import Failure, from_exit_status
from torchx.specs.vocabulary import Cause

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ANNOTATION_FAILURE",
    "CAUSES",
    "failure_of_annotation",
    "failure_to_annotation",
    "job_failure",
    "pod_failure",
    "unix_time",
]

CAUSES: dict[Cause, str | None] = {
    Cause.EXCEPTION: "the traceback at the end of the container's log",
    Cause.EXIT_CODE: "the container's terminated exitCode",
    Cause.SIGNAL: "the container's terminated signal, or an exitCode of 128 + N",
    Cause.OOM: "the container's terminated reason OOMKilled",
    Cause.TIME_LIMIT: "the Job's DeadlineExceeded (activeDeadlineSeconds)",
    Cause.PREEMPTED: "the pod's DisruptionTarget condition: an eviction or a preemption",
    Cause.NODE_FAILURE: "the pod's DisruptionTarget condition: its node was lost",
    Cause.IMAGE_PULL: "ErrImagePull or ImagePullBackOff of a waiting container",
    Cause.REJECTED: "Kueue deactivated or evicted the app's workload",
    Cause.CANCELLED: None,
    Cause.UNKNOWN: "a failed pod with no terminated container",
}
"""How this backend names each cause: the native evidence it reads it from, or ``None``
where it never names it (tests/test_backend_wings.py keeps the table whole and true)."""

ANNOTATION_FAILURE = "torchx.pytorch.org/failure"
"""On a Job, JobSet or Volcano Job that TorchX ended as FAILED: the failure, as JSON."""

_PREEMPTED = frozenset({"PreemptionByScheduler", "EvictionByEvictionAPI", "TerminationByKubelet"})
_NODE_LOST = frozenset({"DeletionByTaintManager", "DeletionByPodGC"})


def unix_time(stamp: object) -> float | None:
    """Unix seconds of an API server time (``2026-11-29T04:25:43Z``), None if none."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _memory_limit(pod: dict[str, Any], container: str) -> str:
    for spec in (pod.get("spec") or {}).get("containers") or ():
        if spec.get("name") == container:
            limits = (spec.get("resources") or {}).get("limits") or {}
            return str(limits.get("memory") or "")
    return ""


def pod_failure(role: str, replica_id: int, pod: dict[str, Any]) -> Failure:
    """The failure of replica ``replica_id`` of ``role``, whose pod failed."""
    status = pod.get("status") or {}
    failure = Failure(role=role, replica_id=replica_id)
    ended = []
    for container in status.get("containerStatuses") or ():
        done = (container.get("state") or {}).get("terminated") or {}
        if done and done.get("exitCode") not in (0, None):
            ended.append((unix_time(done.get("finishedAt")) or float("inf"), container, done))
    if ended:
        when, container, done = min(ended, key=lambda e: e[0])
        failure.time = None if when == float("inf") else when
        code = done.get("exitCode")
        from_exit_status(
            failure,
            code if isinstance(code, int) else None,
            int(done.get("signal") or 0),
            signal_exits=True,
        )
        if done.get("reason") == "OOMKilled":
            limit = _memory_limit(pod, str(container.get("name")))
            failure.cause = "oom"
            failure.message = (
                f"out of memory: container {container.get('name')} killed (OOMKilled)"
                + (f" over its limit of {limit}" if limit else "")
                + " (raise the role's memMB)"
            )
        elif isinstance(done.get("message"), str) and done["message"].strip():
            failure.message = done["message"].strip().splitlines()[-1]
    disruption = next(
        (
            c
            for c in status.get("conditions") or ()
            if c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        ),
        None,
    )
    reason = str(status.get("reason") or "")
    if reason == "DeadlineExceeded":
        failure.cause = "time_limit"
        failure.message = status.get("message") or "the pod ran past its activeDeadlineSeconds"
    elif reason == "Evicted":
        failure.cause = "preempted"
        failure.message = f"evicted: {status.get('message') or 'by the kubelet'}"
    elif disruption is not None and failure.cause != "oom":
        why = str(disruption.get("reason") or "")
        if why in _PREEMPTED or why in _NODE_LOST:
            failure.cause = "node_failure" if why in _NODE_LOST else "preempted"
            failure.message = f"{why}: {disruption.get('message') or ''}".rstrip(": ")
            failure.time = failure.time or unix_time(disruption.get("lastTransitionTime"))
    if not failure.message:
        failure.message = reason or "the pod failed"
    return failure


def job_failure(role: str, job: dict[str, Any]) -> Failure | None:
    """A Job's own failure where no failed pod says more: ``DeadlineExceeded`` (its
    ``activeDeadlineSeconds``), which removes the pods it stops."""
    for condition in (job.get("status") or {}).get("conditions") or ():
        failed = condition.get("type") in ("Failed", "FailureTarget")
        true = condition.get("status") == "True"
        if failed and true and condition.get("reason") == "DeadlineExceeded":
            return Failure(
                role=role,
                replica_id=0,
                cause="time_limit",
                message=str(condition.get("message") or "the Job ran past its deadline"),
                time=unix_time(condition.get("lastTransitionTime")),
            )
    return None


def failure_to_annotation(failure: Failure) -> str:
    """The annotation's value: the failure's JSON, its log tail left out (it is short-lived
    context, and annotations are small)."""

    doc = failure.to_json()
    doc["log_tail"] = []
    return json.dumps(doc, sort_keys=True)


def failure_of_annotation(obj: dict[str, Any]) -> Failure | None:
    """The failure TorchX wrote on ``obj`` (:data:`ANNOTATION_FAILURE`), if any."""

    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_FAILURE)
    if not text:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    return Failure(
        role=str(doc.get("role") or ""),
        replica_id=int(doc.get("replica_id") or 0),
        cause=str(doc.get("cause") or "unknown"),
        rank=doc.get("rank") if isinstance(doc.get("rank"), int) else None,
        exit_code=doc.get("exit_code") if isinstance(doc.get("exit_code"), int) else None,
        signal=doc.get("signal") if isinstance(doc.get("signal"), str) else None,
        message=str(doc.get("message") or ""),
        traceback=doc.get("traceback") if isinstance(doc.get("traceback"), str) else None,
        time=float(doc["time"]) if isinstance(doc.get("time"), (int, float)) else None,
    )
