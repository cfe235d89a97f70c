"""Reads app state from the objects the API server returns (plain JSON dicts).

One status check is a fixed number of API calls whatever the replica count: the Volcano
Job (or the role Jobs, for ``job_type=batch``) and one label-selected list of the app's
pods. Pods say which replicas run, where, and why a pending one is not scheduled.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from typing import Any

from torchx.schedulers._kubernetes.failure import (
    failure_of_annotation,
    job_failure,
    pod_failure,
    unix_time,
)
from torchx.schedulers._kubernetes.request import (
    ANNOTATION_ARRAY,
    ANNOTATION_IMAGE_PULL_TIMEOUT,
    ANNOTATIONS_ATTEMPT,
    COUNT_ATTEMPTS,
    IMAGE_PULL_TIMEOUT_S,
    LABEL_APP_NAME,
    LABEL_COMPLETION_INDEX,
    LABEL_INSTANCE,
    LABEL_JOBSET_RJOB,
    LABEL_KUEUE_JOB_UID,
    LABEL_KUEUE_QUEUE,
    LABEL_REPLICA_ID,
    LABEL_ROLE_INDEX,
    LABEL_ROLE_NAME,
)
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse
from torchx.specs.api import NONE, AppState, ReplicaStatus, Role, RoleStatus, is_terminal
from torchx.specs.attempts import Attempt
from torchx.specs.failure import Failure, from_log_tail, root_cause
from torchx.specs.status import ArrayStatus
from torchx.specs.timeline import Phase, Waiting, timeline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs.status import ArrayStatus

__all__ = [
    "JOB_STATE",
    "TASK_STATE",
    "app_id_of",
    "batch_app_state",
    "describe_batch",
    "describe_jobset",
    "describe_volcano",
    "first_replica_pod",
    "jobset_app_state",
    "kueue_reason",
    "labels_of",
    "list_rows",
    "list_waiting",
    "newest_pod",
    "volcano_app_state",
]

JOB_STATE: dict[str, AppState] = {
    "Pending": AppState.PENDING,
    "Aborting": AppState.RUNNING,
    "Aborted": AppState.CANCELLED,
    "Running": AppState.RUNNING,
    "Restarting": AppState.RUNNING,
    "Completing": AppState.RUNNING,
    "Completed": AppState.SUCCEEDED,
    "Terminating": AppState.RUNNING,
    "Terminated": AppState.FAILED,
    "Failed": AppState.FAILED,
}
"""Volcano Job phase -> app state."""

TASK_STATE: dict[str, AppState] = {
    "Pending": AppState.PENDING,
    "Allocated": AppState.PENDING,
    "Pipelined": AppState.PENDING,
    "Binding": AppState.PENDING,
    "Bound": AppState.PENDING,
    "Running": AppState.RUNNING,
    "Releasing": AppState.RUNNING,
    "Succeeded": AppState.SUCCEEDED,
    "Failed": AppState.FAILED,
    "Unknown": AppState.UNKNOWN,
}
"""Volcano task / pod phase -> replica state."""

_QUIET_WAITING = frozenset({"ContainerCreating", "PodInitializing"})

LogTail = Callable[[dict[str, Any]], str]
"""Reads the end of a failed pod's log (the scheduler's API call)."""

_PULL_FAILED = frozenset({"ErrImagePull", "ImagePullBackOff"})
_NEVER_PULLS = frozenset({"InvalidImageName", "ErrImageNeverPull"})  # no retry can help


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    """The object's labels (none: an empty dict)."""
    labels: dict[str, str] = (obj.get("metadata") or {}).get("labels") or {}
    return labels


def newest_pod(pods: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The most recently created of ``pods`` (a Job's replacement pod after a retry).

    ``creationTimestamp`` has whole seconds, so a failed pod and its replacement can tie:
    then the one that has not failed wins (a failed pod is never the newest of its index),
    then the name, so that the choice does not hang on the order of the list.
    """

    def key(pod: dict[str, Any]) -> tuple[str, bool, str]:
        meta = pod.get("metadata") or {}
        failed = (pod.get("status") or {}).get("phase") == "Failed"
        return str(meta.get("creationTimestamp") or ""), not failed, str(meta.get("name") or "")

    return max(pods, key=key)


def pod_attempts(replicas: list[list[dict[str, Any]]]) -> list[Attempt] | None:
    """The app's attempts from the pods of the replica that ran most often (a Job keeps
    the pods of a replica's failed attempts; a JobSet restart deletes them, and then only
    their count is known): each older pod ended in a failure, the newest is current."""
    pods = max(replicas, key=len, default=[])
    if len(pods) < 2:
        return None
    newest = newest_pod(pods)
    older = sorted(
        (p for p in pods if p is not newest),
        key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or ""),
    )
    attempts = []
    for number, pod in enumerate([*older, newest]):
        status = pod.get("status") or {}
        attempt = Attempt(number, start=unix_time(status.get("startTime")))
        if pod is not newest:
            failure = pod_failure("", 0, pod)
            attempt.state = AppState.FAILED
            attempt.cause, attempt.exit_code = failure.cause, failure.exit_code
            attempt.end = failure.time or _finished(pod)
        attempts.append(attempt)
    return attempts


def _finished(pod: dict[str, Any]) -> float | None:
    """When the pod's last container ended, if one did."""
    ends = [
        unix_time(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        for c in (pod.get("status") or {}).get("containerStatuses") or ()
    ]
    return max((e for e in ends if e is not None), default=None)


def first_replica_pod(pods: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The pod of the first role's replica 0 (its newest, after a retry), or None."""
    mine = [
        p
        for p in pods
        if labels_of(p).get(LABEL_ROLE_INDEX) == "0"
        and (labels_of(p).get(LABEL_REPLICA_ID) or _completion_index(p)) == "0"
    ]
    return newest_pod(mine) if mine else None


def pending_reason(pod: dict[str, Any]) -> str:
    """Why a pending pod does not run yet (the scheduler's or kubelet's words), or ``""``."""
    status = pod.get("status") or {}
    for condition in status.get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            reason = condition.get("reason") or "Unschedulable"
            return f"{reason}: {condition.get('message') or 'not scheduled yet'}"
    return _waiting_reason(pod)


def _waiting_reason(pod: dict[str, Any]) -> str:
    """Why a container of the pod waits (``CrashLoopBackOff: ...``), or ``""``."""
    status = pod.get("status") or {}
    for container in status.get("containerStatuses") or ():
        waiting = (container.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason")
        if reason and reason not in _QUIET_WAITING:
            message = waiting.get("message")
            return f"{reason}: {message}" if message else str(reason)
    return ""


def restart_reason(pod: dict[str, Any]) -> str:
    """Why a running pod's container is down and being restarted in place
    (``restartPolicy: OnFailure``), or ``""``: kubelet's back-off when it reports one, else
    the exit the container is restarted from (kubelet shows that between back-offs)."""
    if waiting := _waiting_reason(pod):
        return waiting
    for container in (pod.get("status") or {}).get("containerStatuses") or ():
        if container.get("restartCount") and (exited := _failed_exit(container)):
            return f"{exited}, restarting"
    return ""


def _failed_exit(container: dict[str, Any]) -> str:
    """``container NAME exited with CODE (REASON)`` for a container that ended with a
    non-zero code, else ``""``."""
    done = (container.get("state") or {}).get("terminated") or {}
    code = done.get("exitCode")
    if not done or code in (0, None):
        return ""
    return f"container {container.get('name')} exited with {code} ({done.get('reason') or 'Error'})"


def _seconds_since(stamp: str) -> float:
    then = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return (dt.datetime.now(dt.timezone.utc) - then).total_seconds()


def image_pull_failure(pod: dict[str, Any]) -> str:
    """Why the app must fail because a pod cannot pull its image, or ``""``: the pull has
    failed for longer than the pod's ``image-pull-timeout`` annotation (timed from when the
    pod was scheduled), or the image name can never be pulled."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    try:
        timeout = int(annotations.get(ANNOTATION_IMAGE_PULL_TIMEOUT, IMAGE_PULL_TIMEOUT_S))
    except ValueError:
        timeout = IMAGE_PULL_TIMEOUT_S
    status = pod.get("status") or {}
    for container in status.get("containerStatuses") or ():
        waiting = (container.get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason") or "")
        if reason not in _PULL_FAILED and reason not in _NEVER_PULLS:
            continue
        if reason in _PULL_FAILED:
            if timeout == 0:
                continue
            scheduled = next(
                (
                    c.get("lastTransitionTime")
                    for c in status.get("conditions") or ()
                    if c.get("type") == "PodScheduled" and c.get("status") == "True"
                ),
                None,
            )
            since = scheduled or (pod.get("metadata") or {}).get("creationTimestamp")
            if not since or _seconds_since(str(since)) < timeout:
                continue
        image = container.get("image") or "?"
        detail = f": {waiting['message']}" if waiting.get("message") else ""
        after = f" for over {timeout} s (run option image_pull_timeout)" if timeout else ""
        return f"image {image} cannot be pulled{after}: {reason}{detail}"
    return ""


def failure_reason(pod: dict[str, Any]) -> str:
    """How a failed pod ended (exit code and reason of its failed containers)."""
    status = pod.get("status") or {}
    found = []
    for container in status.get("containerStatuses") or ():
        if exited := _failed_exit(container):
            done = (container.get("state") or {}).get("terminated") or {}
            detail = f": {done['message'].strip()}" if done.get("message") else ""
            found.append(f"{exited}{detail}")
    if found:
        return "; ".join(found)
    reason = status.get("reason")
    return f"{reason}: {status.get('message') or ''}".rstrip(": ") if reason else ""


def _hostname(pod: dict[str, Any] | None, namespace: str) -> str:
    ip = ((pod or {}).get("status") or {}).get("podIP")
    return f"{ip.replace('.', '-').replace(':', '-')}.{namespace}.pod.cluster.local" if ip else ""


def _summarize(problems: list[tuple[str, str]]) -> str:
    """``pod: reason`` lines folded: one entry per distinct reason, with a pod count."""
    by_reason: dict[str, list[str]] = {}
    for pod, reason in problems:
        by_reason.setdefault(reason, []).append(pod)
    parts = []
    for reason, pods in by_reason.items():
        who = pods[0] if len(pods) == 1 else f"{pods[0]} and {len(pods) - 1} more pods"
        parts.append(f"{who}: {reason}")
    return "; ".join(parts)


class _Replicas:
    """Collects replica statuses and the messages explaining pending/failed pods."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.pending: list[tuple[str, str]] = []
        self.failed: list[tuple[str, str]] = []
        self.any_running = False
        self.image_failed = False  # a pod cannot pull its image: the app fails
        self.restarting: list[tuple[str, str]] = []
        self.failures: list[Failure] = []
        self.pods: dict[tuple[str, int], dict[str, Any]] = {}  # of each failure
        self.scheduled: list[float] = []  # when each pod was bound to a node
        self.started: list[float] = []  # when each pod's first container started
        self.finished: list[float] = []  # when each pod's last container ended
        self.pulling: list[str] = []  # images pods wait for

    def status(
        self, role: str, rid: int, pod: dict[str, Any] | None, default: AppState
    ) -> ReplicaStatus:
        error = NONE
        if pod is None:
            state = default
        else:
            phase = str((pod.get("status") or {}).get("phase") or "Pending")
            state = TASK_STATE.get(phase, AppState.UNKNOWN)
            name = str((pod.get("metadata") or {}).get("name"))
            self._times(pod)
            if state == AppState.PENDING and (pull := image_pull_failure(pod)):
                state, error = AppState.FAILED, pull
                self.failed.append((name, pull))
                self.image_failed = True
                self._failed(
                    Failure(role=role, replica_id=rid, cause="image_pull", message=pull), pod
                )
            elif state == AppState.PENDING:
                reason = pending_reason(pod)
                if reason:
                    self.pending.append((name, reason))
            elif state == AppState.FAILED:
                reason = failure_reason(pod)
                if reason:
                    error = reason
                    self.failed.append((name, reason))
                self._failed(pod_failure(role, rid, pod), pod)
            elif state == AppState.RUNNING and (restarting := restart_reason(pod)):
                # a container restarted in place (CrashLoopBackOff) in a running pod
                self.any_running = True
                self.restarting.append((name, restarting))
            elif state in (AppState.RUNNING, AppState.SUCCEEDED):
                # a finished pod of a Job not yet marked Complete: the app ran, it is not
                # waiting to start (a real Job controller marks the Job a moment later)
                self.any_running = True
        return ReplicaStatus(
            id=rid,
            state=state,
            role=role,
            hostname=_hostname(pod, self.namespace),
            structured_error_msg=error,
        )

    def _times(self, pod: dict[str, Any]) -> None:
        status = pod.get("status") or {}
        for condition in status.get("conditions") or ():
            bound = condition.get("type") == "PodScheduled" and condition.get("status") == "True"
            when = unix_time(condition.get("lastTransitionTime")) if bound else None
            if when is not None:
                self.scheduled.append(when)
        starts, ends = [], []
        for container in status.get("containerStatuses") or ():
            state = container.get("state") or {}
            for key in ("running", "terminated"):
                if (when := unix_time((state.get(key) or {}).get("startedAt"))) is not None:
                    starts.append(when)
            if (when := unix_time((state.get("terminated") or {}).get("finishedAt"))) is not None:
                ends.append(when)
            waiting = str((state.get("waiting") or {}).get("reason") or "")
            if waiting in _PULL_FAILED:
                self.pulling.append(f"{container.get('image')} ({waiting})")
        if starts:
            self.started.append(min(starts))
        if ends and len(ends) == len(status.get("containerStatuses") or ()):
            self.finished.append(max(ends))

    def timing(
        self, state: AppState, objects: list[dict[str, Any]], message: str
    ) -> tuple[list[Phase], Waiting | None]:
        """The app's phases from its objects' creation, Kueue's admission (the Jobs'
        ``startTime``, set when Kueue lets them go), its pods' scheduling and containers'
        start and end; and why it waits, while it does (``message``: Kueue's or the
        scheduler's words, as ``describe`` says them)."""

        submitted = created_at(objects)
        queued_in_kueue = any(labels_of(o).get(LABEL_KUEUE_QUEUE) for o in objects)
        admitted = None
        if queued_in_kueue:
            starts = [
                t for o in objects if (t := unix_time((o.get("status") or {}).get("startTime")))
            ]
            admitted = min(starts) if starts else None
        scheduled = min(self.scheduled) if self.scheduled else None
        started = min(self.started) if self.started else None
        ended = max(self.finished) if self.finished and is_terminal(state) else None
        marks: list[tuple[str, float | None, str | None]] = [
            ("submitted", submitted, None),
            ("queued", submitted, None),
            ("admitted", admitted, None),
            (
                "pulling_image" if self.pulling else "starting",
                scheduled,
                ", ".join(self.pulling) or None,
            ),
            ("running", started, None),
            ("finished", ended, None),
        ]
        phases = timeline(marks, ended=ended)
        waiting = None
        if not is_terminal(state) and started is None:
            reason = "" if message == NONE else message
            if scheduled is None:
                waiting = Waiting(phase="queued", reason=reason, since=submitted)
            else:
                waiting = Waiting(phase="starting", reason=reason, since=scheduled)
        return phases, waiting

    def _failed(self, failure: Failure, pod: dict[str, Any]) -> None:
        self.failures.append(failure)
        self.pods[(failure.role, failure.replica_id)] = pod

    def root_cause(
        self, roles: list[str], extra: Iterable[Failure | None] = (), tail: LogTail | None = None
    ) -> Failure | None:
        """The first observed failure (``extra``: the Jobs' own, used when no pod failed),
        with the log tail of its pod when ``tail`` reads it."""
        root = root_cause(self.failures, roles) or root_cause(
            [f for f in extra if f is not None], roles
        )
        pod = self.pods.get((root.role, root.replica_id)) if root is not None else None
        if root is not None and pod is not None and tail is not None and root.cause != "image_pull":
            from_log_tail(root, tail(pod))  # Kubernetes' own word (an OOM kill) stays
        return root

    def message(self, state: AppState) -> str:
        if state == AppState.FAILED and self.failed:
            return _summarize(self.failed)
        if is_terminal(state):
            return NONE
        parts = []
        if self.pending:
            parts.append("pending: " + _summarize(self.pending))
        if self.restarting:
            parts.append("restarting: " + _summarize(self.restarting))
        return "; ".join(parts) or NONE


def volcano_app_state(job: dict[str, Any]) -> AppState:
    phase = ((job.get("status") or {}).get("state") or {}).get("phase")
    if not phase:
        return AppState.SUBMITTED
    return JOB_STATE.get(str(phase), AppState.UNKNOWN)


def app_id_of(namespace: str, job_type: str, name: str) -> str:
    """The app id of a job: ``NAMESPACE:NAME`` (Volcano), else ``NAMESPACE:JOB_TYPE:NAME``
    (``batch``, ``jobset``)."""
    return f"{namespace}:{name}" if job_type == "volcano" else f"{namespace}:{job_type}:{name}"


def _fill_role(role: Role, containers: list[dict[str, Any]] | None) -> None:
    """Image, entrypoint, args and env of ``role`` from its (first replica's) container."""
    container = containers[0] if containers else {}
    role.image = str(container.get("image", ""))
    command = [str(word) for word in container.get("command") or ()]
    command += [str(word) for word in container.get("args") or ()]
    if command[: len(COUNT_ATTEMPTS)] == COUNT_ATTEMPTS:
        command = command[len(COUNT_ATTEMPTS) :]  # TorchX's own prefix, not the role's
    if command:
        role.entrypoint, role.args = command[0], command[1:]
    role.env = {
        str(e["name"]): str(e["value"])
        for e in container.get("env") or ()
        if isinstance(e, dict) and "name" in e and "value" in e
    }


def describe_volcano(
    app_id: str,
    namespace: str,
    job: dict[str, Any],
    pods: list[dict[str, Any]],
    tail: LogTail | None = None,
) -> DescribeAppResponse:
    """The app's state from its Volcano Job and its pods (``tail`` reads the end of the
    root cause's log)."""
    state = volcano_app_state(job)
    by_replica: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for item in pods:
        labels = labels_of(item)
        key = (labels.get(LABEL_ROLE_INDEX, ""), labels.get(LABEL_REPLICA_ID, ""))
        by_replica.setdefault(key, []).append(item)
    default = state if is_terminal(state) else AppState.PENDING
    collect = _Replicas(namespace)
    roles: dict[str, tuple[Role, list[ReplicaStatus]]] = {}
    for task in (job.get("spec") or {}).get("tasks") or ():
        labels = labels_of(task.get("template") or {})
        role_name = labels.get(LABEL_ROLE_NAME) or str(task.get("name", "")).rpartition("-")[0]
        rid = labels.get(LABEL_REPLICA_ID) or str(task.get("name", "")).rpartition("-")[2]
        found = by_replica.get((labels.get(LABEL_ROLE_INDEX, ""), rid))
        pod: dict[str, Any] | None = newest_pod(found) if found else None
        if role_name not in roles:
            roles[role_name] = (Role(name=role_name, image="", num_replicas=0), [])
        role, statuses = roles[role_name]
        role.num_replicas += 1
        if role.num_replicas == 1:
            _fill_role(role, ((task.get("template") or {}).get("spec") or {}).get("containers"))
        statuses.append(collect.status(role_name, int(rid) if rid.isdigit() else 0, pod, default))
    if collect.image_failed and not is_terminal(state):
        state = AppState.FAILED
    restarts = int((job.get("status") or {}).get("retryCount") or 0)
    response = DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=restarts,
        msg=collect.message(state),
        roles_statuses=[RoleStatus(name, statuses) for name, (_, statuses) in roles.items()],
        roles=[role for role, _ in roles.values()],
    )
    return _with_failure(response, [job], collect, list(roles), tail=tail)


def _condition(job: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


def _job_state(job: dict[str, Any]) -> AppState:
    # FailureTarget and SuccessCriteriaMet (Kubernetes 1.31+) come first, while the Job's
    # last pods terminate; Failed and Complete follow once they are gone
    if _condition(job, "Failed") is not None or _condition(job, "FailureTarget") is not None:
        return AppState.FAILED
    if _condition(job, "Complete") is not None or _condition(job, "SuccessCriteriaMet") is not None:
        return AppState.SUCCEEDED
    if (job.get("spec") or {}).get("suspend"):
        # Kueue keeps a queued Job suspended until it admits it (and again after an eviction)
        return AppState.PENDING if labels_of(job).get(LABEL_KUEUE_QUEUE) else AppState.CANCELLED
    return AppState.PENDING


def batch_app_state(jobs: list[dict[str, Any]], any_running: bool | None = None) -> AppState:
    """The app state of a ``job_type=batch`` app from its role Jobs."""
    states = [_job_state(j) for j in jobs]
    if AppState.FAILED in states:
        return AppState.FAILED
    if all(s == AppState.SUCCEEDED for s in states):
        return AppState.SUCCEEDED
    if AppState.CANCELLED in states:
        return AppState.CANCELLED
    if any_running is None:  # no pods at hand (list): ready pods, else active ones
        any_running = any(
            int((j.get("status") or {}).get("ready", (j.get("status") or {}).get("active")) or 0)
            > 0
            for j in jobs
        )
    return AppState.RUNNING if any_running else AppState.PENDING


def _completion_index(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    return str(labels.get(LABEL_COMPLETION_INDEX) or annotations.get(LABEL_COMPLETION_INDEX) or "")


def describe_batch(
    app_id: str,
    namespace: str,
    jobs: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    kueue: str = "",
    *,
    tail: LogTail | None = None,
) -> DescribeAppResponse:
    """The app's state from its role Jobs (``job_type=batch``) and their pods; ``kueue``
    says why Kueue holds it (:func:`kueue_reason`), shown while it is pending; ``tail``
    reads the end of the root cause's log."""
    jobs = sorted(jobs, key=lambda j: int(labels_of(j).get(LABEL_ROLE_INDEX, "0") or 0))
    by_replica: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for pod in pods:
        labels = labels_of(pod)
        job_name = labels.get("job-name") or labels.get("batch.kubernetes.io/job-name")
        by_replica.setdefault((str(job_name), _completion_index(pod)), []).append(pod)
    collect = _Replicas(namespace)
    roles: list[Role] = []
    roles_statuses: list[RoleStatus] = []
    failures: list[tuple[str, str]] = []
    restarts = 0  # each replica's pods before its newest (failed, and disrupted ones)
    for job in jobs:
        meta = job.get("metadata") or {}
        name = str(meta.get("name"))
        role_name = labels_of(job).get(LABEL_ROLE_NAME, name)
        spec = job.get("spec") or {}
        count = int(spec.get("completions") or spec.get("parallelism") or 1)
        job_state = _job_state(job)
        default = job_state if is_terminal(job_state) else AppState.PENDING
        statuses = []
        for index in range(count):
            found = by_replica.get((name, str(index)))
            replica_pod: dict[str, Any] | None = newest_pod(found) if found else None
            statuses.append(collect.status(role_name, index, replica_pod, default))
            if replica_pod is not None:
                annotations = (replica_pod.get("metadata") or {}).get("annotations") or {}
                restarts += sum(int(annotations.get(key) or 0) for key in ANNOTATIONS_ATTEMPT)
        failed = _condition(job, "Failed") or _condition(job, "FailureTarget")
        if failed is not None:
            failures.append((name, f"{failed.get('reason')}: {failed.get('message') or ''}"))
        role = Role(name=role_name, image="", num_replicas=count)
        _fill_role(role, ((spec.get("template") or {}).get("spec") or {}).get("containers"))
        roles.append(role)
        roles_statuses.append(RoleStatus(role_name, statuses))
    state = batch_app_state(jobs, collect.any_running)
    if collect.image_failed and not is_terminal(state):
        state = AppState.FAILED
    message = collect.message(state)
    if state == AppState.FAILED and failures:
        job_msg = _summarize(failures)
        message = job_msg if message == NONE else f"{message}; {job_msg}"
    elif state == AppState.CANCELLED:
        message = "cancelled: the Jobs are suspended (resume with kubectl patch ... suspend=false)"
    elif state == AppState.PENDING and kueue:
        message = kueue if message == NONE else f"{kueue}; {message}"
    response = DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=restarts,
        msg=message,
        roles_statuses=roles_statuses,
        roles=roles,
        attempts=pod_attempts(list(by_replica.values())),
    )
    names = [role.name for role in roles]
    extra = [job_failure(labels_of(j).get(LABEL_ROLE_NAME, ""), j) for j in jobs]
    return _with_failure(response, jobs, collect, names, extra=extra, tail=tail)


def sweep_status(jobs: list[dict[str, Any]], response: DescribeAppResponse) -> ArrayStatus | None:
    """A sweep's elements (its Job's completion indices) with the values its annotation
    keeps; None for any other app."""
    raw = next(
        (
            ((j.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_ARRAY)
            for j in jobs
            if ANNOTATION_ARRAY in (((j.get("metadata") or {}).get("annotations")) or {})
        ),
        None,
    )
    if raw is None or not response.roles_statuses:
        return None

    record = json.loads(raw)
    replicas = sorted(response.roles_statuses[0].replicas, key=lambda r: r.id)
    return ArrayStatus.of(
        [r.state for r in replicas],
        indices=record.get("indices"),
        values=record.get("values"),
        size=record.get("size"),
    )


def jobset_app_state(jobset: dict[str, Any], any_running: bool | None = None) -> AppState:
    """The app state of a ``job_type=jobset`` app from its JobSet's conditions."""
    if _condition(jobset, "Failed") is not None:
        return AppState.FAILED
    if _condition(jobset, "Completed") is not None:
        return AppState.SUCCEEDED
    if _condition(jobset, "Suspended") is not None or (jobset.get("spec") or {}).get("suspend"):
        # Kueue keeps a queued JobSet suspended until it admits it
        return AppState.PENDING if labels_of(jobset).get(LABEL_KUEUE_QUEUE) else AppState.CANCELLED
    if any_running is None:  # no pods at hand (list): its Jobs' ready or active pods
        any_running = any(
            int(r.get("ready") or r.get("active") or 0) > 0
            for r in (jobset.get("status") or {}).get("replicatedJobsStatus") or ()
        )
    return AppState.RUNNING if any_running else AppState.PENDING


def describe_jobset(
    app_id: str,
    namespace: str,
    jobset: dict[str, Any],
    pods: list[dict[str, Any]],
    kueue: str = "",
    *,
    tail: LogTail | None = None,
) -> DescribeAppResponse:
    """The app's state from its JobSet (``job_type=jobset``) and its pods: a role per
    replicated Job, replica ``k`` the pod of completion index ``k`` (``tail`` reads the
    end of the root cause's log)."""
    by_replica: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for pod in pods:
        key = (labels_of(pod).get(LABEL_JOBSET_RJOB, ""), _completion_index(pod))
        by_replica.setdefault(key, []).append(pod)
    state = jobset_app_state(jobset, any_running=False)
    default = state if is_terminal(state) else AppState.PENDING
    collect = _Replicas(namespace)
    roles: list[Role] = []
    roles_statuses: list[RoleStatus] = []
    for replicated in (jobset.get("spec") or {}).get("replicatedJobs") or ():
        rjob = str(replicated.get("name"))
        job_spec = (replicated.get("template") or {}).get("spec") or {}
        pod_template = job_spec.get("template") or {}
        role_name = labels_of(pod_template).get(LABEL_ROLE_NAME, rjob)
        count = int(job_spec.get("completions") or job_spec.get("parallelism") or 1)
        statuses = []
        for index in range(count):
            found = by_replica.get((rjob, str(index)))
            replica_pod: dict[str, Any] | None = newest_pod(found) if found else None
            statuses.append(collect.status(role_name, index, replica_pod, default))
        role = Role(name=role_name, image="", num_replicas=count)
        _fill_role(role, (pod_template.get("spec") or {}).get("containers"))
        roles.append(role)
        roles_statuses.append(RoleStatus(role_name, statuses))
    if state == AppState.PENDING and collect.any_running:
        state = AppState.RUNNING
    if collect.image_failed and not is_terminal(state):
        state = AppState.FAILED
    message = collect.message(state)
    failed = _condition(jobset, "Failed")
    if state == AppState.FAILED and failed is not None:
        why = f"{failed.get('reason')}: {failed.get('message') or ''}"
        message = why if message == NONE else f"{message}; {why}"
    elif state == AppState.CANCELLED:
        message = "cancelled: the JobSet is suspended (resume with kubectl patch ... suspend=false)"
    elif state == AppState.PENDING and kueue:
        message = kueue if message == NONE else f"{kueue}; {message}"
    response = DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=int((jobset.get("status") or {}).get("restarts") or 0),
        msg=message,
        roles_statuses=roles_statuses,
        roles=roles,
        attempts=pod_attempts(list(by_replica.values())),
    )
    return _with_failure(response, [jobset], collect, [r.name for r in roles], tail=tail)


def _with_failure(
    response: DescribeAppResponse,
    objects: list[dict[str, Any]],
    collect: _Replicas,
    roles: list[str],
    *,
    extra: Iterable[Failure | None] = (),
    tail: LogTail | None,
) -> DescribeAppResponse:
    """``response`` with its root cause: the failure TorchX wrote on the app's objects when
    it ended the app itself (then the app is FAILED, whatever its pods say), else the
    first failure observed among its pods and Jobs."""
    response.timeline, response.waiting = collect.timing(response.state, objects, response.msg)
    written = next((f for o in objects if (f := failure_of_annotation(o)) is not None), None)
    if written is not None:
        response.state = AppState.FAILED
        response.msg = f"{written.role}[{written.replica_id}]: {written.message}"
        response.failure = written
        for role in response.roles_statuses:
            for replica in role.replicas:
                if (role.role, replica.id) == (written.role, written.replica_id):
                    replica.state = AppState.FAILED
                elif not is_terminal(replica.state):
                    replica.state = AppState.CANCELLED  # stopped with the app
        return response
    if response.state == AppState.FAILED:
        response.failure = collect.root_cause(roles, extra, tail)
    return response


def kueue_rejection(workloads: list[dict[str, Any]], role: str) -> Failure | None:
    """Kueue's refusal of the app, as its failure (cause ``rejected``), or None: a workload
    Kueue deactivated (``spec.active: false``: an admission check rejected it, or it was
    evicted more often than ``waitForPodsReady`` allows) stays queued and suspended for
    ever unless someone reactivates it."""
    for workload in workloads:
        if (workload.get("spec") or {}).get("active", True) is not False:
            continue
        evicted = _condition(workload, "Evicted") or {}
        why = str(evicted.get("message") or "its workload was deactivated")
        reason = str(evicted.get("reason") or "Deactivated")
        name = (workload.get("metadata") or {}).get("name")
        return Failure(
            role=role,
            replica_id=0,
            cause="rejected",
            message=f"rejected by Kueue ({reason}): {why} (workload {name})",
        )
    return None


def kueue_reason(workloads: list[dict[str, Any]], queue: str, cluster_queue: str | None) -> str:
    """Why Kueue holds the app, in its own words, or ``""`` once every workload is admitted:
    ``queued in LocalQueue q (ClusterQueue cq): <why no quota>``, after an eviction or a
    preemption preceded by ``evicted (Preempted): <why>;``."""
    if not workloads:
        return f"queued in LocalQueue {queue!r}: Kueue has not made its workload yet"
    where = f"LocalQueue {queue!r}" + (f" (ClusterQueue {cluster_queue})" if cluster_queue else "")
    reasons = []
    for workload in workloads:
        if _condition(workload, "Admitted") is not None and _condition(workload, "Evicted") is None:
            continue
        evicted = _condition(workload, "Evicted")
        waiting = next(
            (
                c
                for c in (workload.get("status") or {}).get("conditions") or ()
                if c.get("type") == "QuotaReserved" and c.get("status") == "False"
            ),
            None,
        )
        parts = []
        if evicted is not None:
            parts.append(f"evicted ({evicted.get('reason')}): {evicted.get('message') or ''}")
        if waiting is not None and waiting.get("message"):
            parts.append(f"queued in {where}: {waiting['message']}")
        elif evicted is None:
            parts.append(f"queued in {where}")
        reasons.append("; ".join(parts))
    return "; ".join(dict.fromkeys(r for r in reasons if r))


def created_at(objects: list[dict[str, Any]]) -> float | None:
    """When the first of an app's objects was created (unix seconds), None if unknown."""
    stamps = (unix_time((o.get("metadata") or {}).get("creationTimestamp")) for o in objects)
    return min((t for t in stamps if t), default=None)


def list_rows(
    namespace: str,
    volcano_jobs: list[dict[str, Any]],
    batch_jobs: list[dict[str, Any]],
    jobsets: Iterable[dict[str, Any]] = (),
) -> list[tuple[ListAppResponse, list[dict[str, Any]]]]:
    """One row per app, with the objects it was read from: Volcano jobs as ``ns:name``,
    batch apps as ``ns:batch:name``, JobSets as ``ns:jobset:name``."""

    rows = [
        (
            ListAppResponse(
                app_id=app_id_of(namespace, "volcano", str((j.get("metadata") or {}).get("name"))),
                state=volcano_app_state(j),
                name=labels_of(j).get(LABEL_APP_NAME, ""),
                submitted=created_at([j]),
            ),
            [j],
        )
        for j in volcano_jobs
    ]
    apps: dict[str, list[dict[str, Any]]] = {}
    for job in batch_jobs:
        apps.setdefault(labels_of(job).get(LABEL_INSTANCE, ""), []).append(job)
    rows += [
        (
            ListAppResponse(
                app_id=app_id_of(namespace, "batch", app),
                state=batch_app_state(jobs),
                name=labels_of(jobs[0]).get(LABEL_APP_NAME, ""),
                submitted=created_at(jobs),
            ),
            jobs,
        )
        for app, jobs in apps.items()
        if app
    ]
    rows += [
        (
            ListAppResponse(
                app_id=app_id_of(namespace, "jobset", str((j.get("metadata") or {}).get("name"))),
                state=jobset_app_state(j),
                name=labels_of(j).get(LABEL_APP_NAME, ""),
                submitted=created_at([j]),
            ),
            [j],
        )
        for j in jobsets
    ]
    return rows


def list_waiting(
    objects: list[dict[str, Any]],
    workloads: list[dict[str, Any]] | None,
    pods: list[dict[str, Any]] | None,
) -> str:
    """Why a pending app of a listing waits: Kueue's words while Kueue holds it
    (``workloads``: the namespace's, read once for the whole listing; None when they could
    not be read), else its first pod's that says why (the scheduler's or kubelet's), else
    that no pod of it is there yet or that its containers are being made (``""`` when the
    pods could not be read: None)."""
    queue = next((q for o in objects if (q := labels_of(o).get(LABEL_KUEUE_QUEUE))), "")
    uids = {str((o.get("metadata") or {}).get("uid")) for o in objects}
    if queue and workloads is None:
        return f"queued in LocalQueue {queue!r}"
    if queue and workloads is not None:
        mine = [w for w in workloads if labels_of(w).get(LABEL_KUEUE_JOB_UID) in uids]
        if held := kueue_reason(mine, queue, None):
            return held
    if pods is None:
        return ""
    instance = labels_of(objects[0]).get(LABEL_INSTANCE) if objects else None
    mine = [p for p in pods if labels_of(p).get(LABEL_INSTANCE) == instance]
    for pod in mine:
        if (pod.get("status") or {}).get("phase") == "Pending" and (why := pending_reason(pod)):
            return why
    if not mine:
        return "queued: no pod of it yet"
    return "starting: its containers are being made"
