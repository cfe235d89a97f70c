"""Why an app failed on a real Kubernetes cluster (tools/k8s-up.sh): the root cause of each
failure the cluster produces here, and an app TorchX ends itself holds nothing after."""

from __future__ import annotations

import time
from typing import Any

import pytest
from torchx_testsupport.k8s.running import SMALL, batch, finished, sh, until

from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler, create_scheduler
from torchx.specs import AppState, Resource

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def sched(namespace: str) -> KubernetesScheduler:
    return create_scheduler("torchx")


def _failed(sched: KubernetesScheduler, namespace: str, app: Any, **cfg: Any) -> Any:
    app_id = sched.submit(app, batch(namespace, **cfg))
    status = until(sched, app_id, finished)
    assert status.state == AppState.FAILED, status.msg
    assert status.failure is not None, status
    return status.failure


def test_an_exception_is_named_with_its_message_and_log_tail(
    sched: KubernetesScheduler, namespace: str
) -> None:
    script = "echo loading; python3 -c 'raise RuntimeError(\"boom\")'"
    failure = _failed(sched, namespace, sh(script))
    assert (failure.role, failure.replica_id, failure.cause) == ("sh", 0, "exception")
    assert failure.message == "RuntimeError: boom"
    assert failure.log_tail[0] == "loading" and failure.log_tail[-1] == "RuntimeError: boom"
    assert failure.time is not None


def test_the_replica_that_failed_first_is_the_root_cause(
    sched: KubernetesScheduler, namespace: str
) -> None:
    script = 'if [ "$TORCHX_REPLICA_ID" = 1 ]; then echo broke; exit 3; fi; sleep 4; exit 1'
    failure = _failed(sched, namespace, sh(script, replicas=2))
    assert (failure.replica_id, failure.cause, failure.exit_code) == (1, "exit_code", 3)
    assert failure.log_tail == ["broke"]


def test_a_replica_killed_by_sigkill(sched: KubernetesScheduler, namespace: str) -> None:
    """The shell stays PID 1 (a signal to the container's PID 1 from inside is ignored):
    its child dies by SIGKILL, the shell exits 137."""
    kill = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    failure = _failed(sched, namespace, sh(f"echo bye; python3 -c '{kill}'; exit $?"))
    assert (failure.cause, failure.signal) == ("signal", "SIGKILL"), failure


def test_an_oom_kill_names_the_limit(sched: KubernetesScheduler, namespace: str) -> None:
    """A container limited to memMB (1088M; it requests 64M, the rest is reserved for
    system daemons) that allocates 2 GiB: the kernel kills it, the kubelet says OOMKilled."""
    grow = "x = bytearray(2048 << 20); print(len(x))"
    app = sh(f"echo start; python3 -c '{grow}'", resource=Resource(cpu=1, gpu=0, memMB=1088))
    failure = _failed(sched, namespace, app)
    assert failure.cause == "oom", failure
    assert "OOMKilled" in failure.message and "1088M" in failure.message


def test_a_job_over_its_deadline(sched: KubernetesScheduler, namespace: str) -> None:
    """The pod's activeDeadlineSeconds (a pod overlay): the kubelet stops it and says
    DeadlineExceeded."""
    from torchx.specs.overlays import set_overlay

    app = sh("echo started; sleep 300")
    set_overlay(app.roles[0], "kubernetes", "V1Pod", {"spec": {"activeDeadlineSeconds": 3}})
    failure = _failed(sched, namespace, app)
    assert failure.cause == "time_limit", failure


def test_an_unpullable_image_ends_the_app_and_frees_its_pods(
    sched: KubernetesScheduler, namespace: str, kube: Any
) -> None:
    image = "127.0.0.1:5000/torchx-test/absent:1"  # the local registry has no such image
    app_id = sched.submit(
        sh("true", image=image, replicas=2), batch(namespace, image_pull_timeout=5)
    )
    status = until(sched, app_id, finished)
    failure = status.failure
    assert status.state == AppState.FAILED and failure is not None, status.msg
    assert failure.cause == "image_pull" and image in failure.message, failure
    deadline = time.monotonic() + 60
    while pods := kube.core.list_namespaced_pod(namespace).items:
        assert time.monotonic() < deadline, [p.metadata.name for p in pods]
        time.sleep(0.5)
    again = sched.describe(app_id)  # the pods are gone: the reason stays
    assert again is not None and again.state == AppState.FAILED
    assert again.failure is not None and again.failure.cause == "image_pull"
    assert image in again.msg
    fine = sched.submit(sh("echo scheduled", resource=SMALL), batch(namespace))
    assert until(sched, fine, finished).state == AppState.SUCCEEDED


def test_a_succeeded_app_has_no_failure(sched: KubernetesScheduler, namespace: str) -> None:
    app_id = sched.submit(sh("echo fine"), batch(namespace))
    status = until(sched, app_id, finished)
    assert (status.state, status.failure) == (AppState.SUCCEEDED, None)
