"""Interruptions vs the replica's own failure on the real cluster: an evicted or deleted pod
is replaced as the next attempt (``$TORCHX_ATTEMPT``) without spending ``max_retries``, on
``job_type=batch`` (the Job's pod failure policy) and ``job_type=jobset`` (a JobSet restart
that does not count); the replica's own failure spends them."""

from __future__ import annotations

import time
from typing import Any

import pytest
from torchx_testsupport.k8s.running import batch, finished, sh, until

from torchx.schedulers._kubernetes.client import KubernetesApiError
from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler, create_scheduler
from torchx.specs import AppState

pytestmark = pytest.mark.timeout(300)

# attempt 0 waits to be stopped; its trap makes the stop quick (as PID 1 a shell would
# otherwise ignore kubelet's SIGTERM until the grace period ends)
RESUMABLE = (
    'echo "attempt $TORCHX_ATTEMPT"; '
    'if [ "$TORCHX_ATTEMPT" = 0 ]; then trap "exit 143" TERM; sleep 300 & wait; fi'
)


@pytest.fixture
def sched(namespace: str) -> KubernetesScheduler:
    return create_scheduler("torchx")


def _lines(sched: KubernetesScheduler, app_id: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in sched.log_iter(app_id, "sh", 0)]


def _running_pod(sched: KubernetesScheduler, kube: Any, namespace: str, app_id: str) -> str:
    """The pod of attempt 0, once its program runs (its first line is out)."""
    deadline = time.monotonic() + 120
    while True:
        try:
            if _lines(sched, app_id) == ["attempt 0\n"]:
                break
        except (ValueError, KubernetesApiError):  # no pod yet, or its container not yet
            pass
        assert time.monotonic() < deadline, "attempt 0 never started"
        time.sleep(0.3)
    (pod,) = [
        p for p in kube.core.list_namespaced_pod(namespace).items if p.status.phase == "Running"
    ]
    return str(pod.metadata.name)


def _evict(kube: Any, namespace: str, pod: str) -> None:
    body = {"metadata": {"name": pod, "namespace": namespace}}
    kube.core.create_namespaced_pod_eviction(pod, namespace, body)


@pytest.mark.parametrize("how", ["evicted", "deleted"])
def test_a_pod_stopped_by_kubernetes_is_replaced_as_the_next_attempt(
    sched: KubernetesScheduler, kube: Any, namespace: str, how: str
) -> None:
    app_id = sched.submit(sh(RESUMABLE), batch(namespace))  # max_retries 0
    pod = _running_pod(sched, kube, namespace, app_id)
    if how == "evicted":
        _evict(kube, namespace, pod)
    else:
        kube.core.delete_namespaced_pod(pod, namespace)
    status = until(sched, app_id, finished)
    assert (status.state, status.num_restarts) == (AppState.SUCCEEDED, 1), status.msg
    assert _lines(sched, app_id) == ["attempt 1\n"]


def test_a_jobset_restarts_for_an_eviction_without_spending_max_retries(
    sched: KubernetesScheduler, kube: Any, namespace: str
) -> None:
    cfg = {"queue": "-", "job_type": "jobset", "namespace": namespace}
    app_id = sched.submit(sh(RESUMABLE), cfg)  # max_retries 0: failurePolicy.maxRestarts 0
    _evict(kube, namespace, _running_pod(sched, kube, namespace, app_id))
    status = until(sched, app_id, finished)
    assert (status.state, status.num_restarts) == (AppState.SUCCEEDED, 1), status.msg
    assert _lines(sched, app_id) == ["attempt 1\n"]


@pytest.mark.parametrize("job_type", ["batch", "jobset"])
def test_own_failure_spends_max_retries(
    sched: KubernetesScheduler, namespace: str, job_type: str
) -> None:
    app = sh('echo "attempt $TORCHX_ATTEMPT"; [ "$TORCHX_ATTEMPT" -ge 1 ]')
    app.roles[0].max_retries = 1
    cfg = {"queue": "-", "job_type": job_type, "namespace": namespace}
    app_id = sched.submit(app, cfg)
    status = until(sched, app_id, finished)
    assert (status.state, status.num_restarts) == (AppState.SUCCEEDED, 1), status.msg
    assert _lines(sched, app_id) == ["attempt 1\n"]
    if job_type == "batch":  # the Job keeps the failed attempt's pod: its exit on record
        first, last = sched.describe(app_id).attempts  # type: ignore[union-attr]
        assert (first.attempt, first.state, first.cause, first.exit_code) == (
            0, AppState.FAILED, "exit_code", 1
        )  # fmt: skip
        assert first.start is not None and first.end is not None
        assert last.attempt == 1 and last.start is not None and last.start >= first.start
    # no retries left: the first own failure is final
    app_id = sched.submit(sh('echo "attempt $TORCHX_ATTEMPT"; exit 3'), cfg)
    status = until(sched, app_id, finished)
    assert (status.state, status.num_restarts) == (AppState.FAILED, 0), status.msg
    assert _lines(sched, app_id) == ["attempt 0\n"]
