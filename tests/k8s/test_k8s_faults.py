"""The kubernetes scheduler under faults, on the real cluster (tools/k8s-up.sh): a small proxy
in front of the real API server (torchx_testsupport.k8s.proxy) throttles, fails, resets,
slows, drops or expires the requests a test names, and passes the rest on. Real pods make
the state changes and write the logs; the scheduler must ride the faults out with the right
state and no log line lost or repeated, and must not retry what is permanent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from torchx_testsupport.faults import count_lines, record_fault
from torchx_testsupport.k8s.cluster import (
    IMAGE,
    compact_etcd,
    exec_in_app_pod,
    second_api_server,
)
from torchx_testsupport.k8s.proxy import KubernetesFaultProxy

from torchx.schedulers._kubernetes.client import KubernetesApiError
from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler, create_scheduler
from torchx.specs import AppDef, AppState, Resource, Role, is_terminal

pytestmark = [pytest.mark.faults, pytest.mark.timeout(300)]


@pytest.fixture
def proxy(
    namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[KubernetesFaultProxy]:
    monkeypatch.setenv("TORCHX_RETRY_S", "20")  # the tests' default turns retries off
    server = KubernetesFaultProxy().start()
    monkeypatch.setenv("KUBECONFIG", server.write_kubeconfig(str(tmp_path / "via-proxy")))
    yield server
    server.stop()


@pytest.fixture
def sched(proxy: KubernetesFaultProxy) -> KubernetesScheduler:
    return create_scheduler("torchx")


def sh(script: str) -> AppDef:
    role = Role("sh", IMAGE, entrypoint="sh", args=["-c", script])
    role.resource = Resource(cpu=1, gpu=0, memMB=1152)
    return AppDef("app", [role])


def batch(namespace: str) -> dict[str, object]:
    return {"queue": "-", "job_type": "batch", "namespace": namespace}


def wait(sched: KubernetesScheduler, app_id: str, until: Any = is_terminal) -> Any:
    """What ``Runner.wait`` does with a scheduler: describe, then wait for a change."""
    while True:
        status = sched.describe(app_id)
        if status is None or until(status.state):
            return status
        sched.wait_for_change(app_id, 60)


@pytest.mark.parametrize("fault", ["429", "500", "503", "reset", "slow"])
def test_status_rides_through(
    proxy: KubernetesFaultProxy, sched: KubernetesScheduler, namespace: str, fault: str
) -> None:
    app_id = sched.submit(sh("trap 'exit 0' TERM; sleep 600 & wait"), batch(namespace))
    wait(sched, app_id, lambda s: s == AppState.RUNNING)
    proxy.inject(fault, on=f"GET /apis/batch/v1/namespaces/{namespace}/jobs", times=2, delay_s=1)
    proxy.inject(fault, on=f"GET /api/v1/namespaces/{namespace}/pods", times=1, delay_s=1)
    status = sched.describe(app_id)
    met = [kind for kind, _, _ in proxy.faults_met]
    expected = 2 if fault == "slow" else 3  # a slow answer is an answer: not asked again
    survived = status is not None and status.state == AppState.RUNNING and met == [fault] * expected
    record_fault(
        "kubernetes", f"{fault} on the reads of `status` (real API server)", survived=survived,
        outcome=f"{status.state.name if status else None} after {len(met)} faults",
    )  # fmt: skip
    assert survived, (status, met)
    sched.cancel(app_id)


def test_wait_rides_through_dropped_watches_410_and_503(
    proxy: KubernetesFaultProxy, sched: KubernetesScheduler, namespace: str
) -> None:
    app_id = sched.submit(sh("while [ ! -e /tmp/go ]; do sleep 0.1; done"), batch(namespace))
    wait(sched, app_id, lambda s: s == AppState.RUNNING)
    proxy.inject("drop", on="WATCH", times=2)
    proxy.inject("gone", on="WATCH", times=1)
    proxy.inject("503", on="GET /apis/batch", times=1)
    final: list[Any] = []
    waiter = threading.Thread(target=lambda: final.append(wait(sched, app_id)))
    waiter.start()
    # the fourth watch is the first one let through: the pod ends under it
    assert proxy.wait_for_watch(3, timeout=60), proxy.faults_met
    exec_in_app_pod(namespace, app_id, "touch /tmp/go")
    waiter.join(timeout=120)
    met = sorted(kind for kind, _, _ in proxy.faults_met)
    state = final[0].state if final and final[0] else None
    survived = state == AppState.SUCCEEDED and met == ["503", "drop", "drop", "gone"]
    record_fault(
        "kubernetes", "watch dropped twice, 410 Gone, 503 during a wait (real API server)",
        survived=survived, outcome=str(state.name if state else final),
    )  # fmt: skip
    assert survived, (final, met)


def test_wait_meets_a_real_410_from_another_api_server_and_recovers(
    proxy: KubernetesFaultProxy, sched: KubernetesScheduler, namespace: str, kube: Any
) -> None:
    """After describe read a resource version, the app's Job changes (an annotation), etcd
    is compacted and the proxy switches to a second API server of the cluster (as a load
    balancer fails over, or the one server restarts). That server's watch cache starts after
    the change and etcd no longer has the version, so the watch gets a real 410 Expired: the
    wait gives the version up at once, describe reads a fresh one, and the next wait sees
    the app finish. (Compaction alone gives no 410 on 1.36: the first server's watch cache
    still serves the compacted versions; tried.)"""
    app_id = sched.submit(sh("while [ ! -e /tmp/go ]; do sleep 0.1; done"), batch(namespace))
    wait(sched, app_id, lambda s: s == AppState.RUNNING)
    (job,) = kube.batch.list_namespaced_job(namespace).items
    kube.batch.patch_namespaced_job(
        job.metadata.name, namespace, {"metadata": {"annotations": {"touched": "yes"}}}
    )
    with second_api_server() as url:
        compact_etcd()
        proxy.upstream = urlsplit(url)
        sched.wait_for_change(app_id, 120)  # would sit out the 120 s without the 410
        expired = proxy.count_requests(lambda method, _: method == "EXPIRED")
        status = sched.describe(app_id)
        assert status is not None and status.state == AppState.RUNNING  # the pod still waits
        exec_in_app_pod(namespace, app_id, "touch /tmp/go")
        final = wait(sched, app_id)
    survived = expired == 1 and final is not None and final.state == AppState.SUCCEEDED
    record_fault(
        "kubernetes", "a real 410 Expired on a wait, from a second API server (real)",
        survived=survived, outcome=str(final.state.name if final else final),
    )  # fmt: skip
    assert survived, (expired, final)


@pytest.mark.parametrize("faults", [["drop", "drop", "drop", "503"], ["split", "end", "split"]])
def test_log_follow_rides_through_cut_streams(
    proxy: KubernetesFaultProxy, sched: KubernetesScheduler, namespace: str, faults: list[str]
) -> None:
    """A real container writes 300 lines over a few seconds while its followed log is cut."""
    lines = 300
    script = f"i=1; while [ $i -le {lines} ]; do echo line-$i; i=$((i+1)); sleep 0.01; done"
    app_id = sched.submit(sh(script), batch(namespace))
    wait(sched, app_id, lambda s: s != AppState.PENDING)
    for kind in faults:
        proxy.inject(kind, on="LOG /api/v1/namespaces/.*/log", times=1)
    out = list(sched.log_iter(app_id, "sh", 0, should_tail=True))
    lost, repeated = count_lines("".join(out), lines)
    met = sorted(kind for kind, _, _ in proxy.faults_met)
    survived = not lost and not repeated and met == sorted(faults)
    record_fault(
        "kubernetes", f"followed log of a real pod: {', '.join(faults)}", survived=survived,
        lost=lost, repeated=repeated, outcome=f"{len(out)} lines",
    )  # fmt: skip
    assert survived, (lost, repeated, met)


def test_permanent_errors_are_answered_at_once(
    proxy: KubernetesFaultProxy, sched: KubernetesScheduler, namespace: str, kube: Any
) -> None:
    """Retries never turn a permanent answer into a wait: one request, then the error; a
    create that may have arrived is not sent again, a throttled one is."""
    before = proxy.calls()
    assert sched.describe(f"{namespace}:batch:nope-123") is None
    assert proxy.calls() - before == 1  # unknown app: one request
    proxy.inject("503", on=f"POST /apis/batch/v1/namespaces/{namespace}/jobs$")  # not a dry run
    with pytest.raises(KubernetesApiError, match="503"):
        sched.submit(sh("true"), batch(namespace))
    assert kube.batch.list_namespaced_job(namespace).items == []  # not sent again
    proxy.inject("429", on=f"POST /apis/batch/v1/namespaces/{namespace}/jobs$", times=2)
    app_id = sched.submit(sh("true"), batch(namespace))
    assert len(kube.batch.list_namespaced_job(namespace).items) == 1
    assert sched.describe(app_id) is not None
