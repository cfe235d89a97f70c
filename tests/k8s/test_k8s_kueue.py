"""Kueue and JobSet on the real cluster (tools/k8s-up.sh runs Kueue v0.17 and JobSet v0.11
built from their Go modules): quota order, a queued app cancelled, preemption by a higher
workload priority, two-role JobSet apps with or without Kueue, and the bad inputs (no such
LocalQueue, a cluster without Kueue or JobSet: a second API server of a bare cluster)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from torchx_testsupport.k8s.cluster import IMAGE, admin_kubeconfig_copy, second_api_server
from torchx_testsupport.k8s.running import finished, sh, until

from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler, create_scheduler
from torchx.specs import AppDef, AppState, Resource, Role

pytestmark = pytest.mark.timeout(300)
TORCHX = str(Path(sys.executable).parent / "torchx")
KUEUE = ("kueue.x-k8s.io", "v1beta2")
TINY = Resource(cpu=0.25, gpu=0, memMB=1152)  # requests 150m CPU: three pods fit the node


def _delete(call: Any, *args: Any) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        call(*args)
    except ApiException as e:
        if e.status != 404:
            raise


@pytest.fixture
def queue(kube: Any, namespace: str) -> Iterator[SimpleNamespace]:
    """A ClusterQueue with 1 CPU of quota (one SMALL app at a time, preempting lower
    workload priorities), its ResourceFlavor, a LocalQueue in the test namespace and two
    WorkloadPriorityClasses (low 10, high 1000); all removed at the end."""
    tag = uuid.uuid4().hex[:8]
    names = SimpleNamespace(
        flavor=f"f-{tag}", cluster=f"cq-{tag}", local="lq", low=f"low-{tag}", high=f"high-{tag}"
    )
    custom = kube.custom
    custom.create_cluster_custom_object(*KUEUE, "resourceflavors", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": names.flavor},
    })  # fmt: skip
    quota = [{"name": "cpu", "nominalQuota": "1"}, {"name": "memory", "nominalQuota": "8Gi"}]
    custom.create_cluster_custom_object(*KUEUE, "clusterqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": names.cluster},
        "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "resourceGroups": [{"coveredResources": ["cpu", "memory"],
                                "flavors": [{"name": names.flavor, "resources": quota}]}],
            "preemption": {"withinClusterQueue": "LowerPriority"},
        },
    })  # fmt: skip
    custom.create_namespaced_custom_object(*KUEUE, namespace, "localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": names.local}, "spec": {"clusterQueue": names.cluster},
    })  # fmt: skip
    for name, value in ((names.low, 10), (names.high, 1000)):
        custom.create_cluster_custom_object(*KUEUE, "workloadpriorityclasses", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
            "metadata": {"name": name}, "value": value,
        })  # fmt: skip
    yield names
    for plural, name in (
        ("workloadpriorityclasses", names.low),
        ("workloadpriorityclasses", names.high),
        ("clusterqueues", names.cluster),  # finalized once its workloads are gone
        ("resourceflavors", names.flavor),
    ):
        _delete(custom.delete_cluster_custom_object, *KUEUE, plural, name)


@pytest.fixture
def sched(namespace: str) -> KubernetesScheduler:
    return create_scheduler("torchx")


def queued(namespace: str, job_type: str = "batch", **extra: object) -> dict[str, object]:
    return {"queue": "lq", "job_type": job_type, "namespace": namespace, **extra}


def workloads(kube: Any, namespace: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = kube.custom.list_namespaced_custom_object(
        *KUEUE, namespace, "workloads"
    )["items"]
    return found


def _stamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_quota_runs_two_apps_one_after_the_other(
    sched: KubernetesScheduler, namespace: str, queue: SimpleNamespace, kube: Any
) -> None:
    """Two 900m apps on a 1-CPU ClusterQueue: the second waits, saying why in Kueue's words,
    and starts only once the first has finished."""
    first = sched.submit(sh("sleep 3; echo first"), queued(namespace))
    until(sched, first, lambda s: s.state == AppState.RUNNING)
    second = sched.submit(sh("echo second"), queued(namespace))
    waiting = until(sched, second, lambda s: "insufficient unused quota" in s.msg, 60)
    assert waiting.state == AppState.PENDING
    assert f"queued in LocalQueue 'lq' (ClusterQueue {queue.cluster})" in waiting.msg
    assert "for cpu" in waiting.msg, waiting.msg
    assert until(sched, first, finished).state == AppState.SUCCEEDED
    assert until(sched, second, finished).state == AppState.SUCCEEDED
    (done,) = kube.batch.list_namespaced_job(
        namespace, label_selector=f"app.kubernetes.io/instance={first.rpartition(':')[2]}"
    ).items
    (pod,) = kube.core.list_namespaced_pod(
        namespace, label_selector=f"app.kubernetes.io/instance={second.rpartition(':')[2]}"
    ).items
    assert pod.metadata.creation_timestamp >= done.status.completion_time
    rows = {r.app_id: r.state for r in sched.list({"namespace": namespace})}
    assert rows == {first: AppState.SUCCEEDED, second: AppState.SUCCEEDED}


def test_a_queued_app_is_cancelled_with_its_workload(
    sched: KubernetesScheduler, namespace: str, queue: SimpleNamespace, kube: Any
) -> None:
    running = sched.submit(sh("sleep 120"), queued(namespace))
    until(sched, running, lambda s: s.state == AppState.RUNNING)
    waiting = sched.submit(sh("echo never"), queued(namespace))
    until(sched, waiting, lambda s: "insufficient unused quota" in s.msg, 60)
    # list reads the Jobs' status (describe reads the pods), which the Job controller
    # updates up to a second after the pod runs (its batch period): wait for that
    deadline = time.monotonic() + 30
    while True:
        listed = {r.app_id: r for r in sched.list({"namespace": namespace})}
        rows = {app_id: r.state for app_id, r in listed.items()}
        if rows.get(running) != AppState.PENDING or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert rows == {running: AppState.RUNNING, waiting: AppState.PENDING}, "list shows queued"
    # and why it waits, in Kueue's words, as status says it
    assert listed[running].waiting == ""
    assert listed[waiting].waiting.startswith("queued in LocalQueue 'lq'"), listed[waiting]
    assert "insufficient unused quota" in listed[waiting].waiting, listed[waiting]
    assert len(workloads(kube, namespace)) == 2

    sched.cancel(waiting)
    assert sched.describe(waiting) is None, "the queued app is gone"
    deadline = dt.datetime.now() + dt.timedelta(seconds=60)
    while len(workloads(kube, namespace)) != 1:  # the garbage collector takes its workload
        assert dt.datetime.now() < deadline, workloads(kube, namespace)
        sched.wait_for_change(running, 0.5)
    status = sched.describe(running)
    assert status is not None and status.state == AppState.RUNNING
    sched.delete(running)


def test_a_higher_priority_app_preempts_a_lower_one(
    sched: KubernetesScheduler, namespace: str, queue: SimpleNamespace
) -> None:
    low = sched.submit(sh("sleep 300"), queued(namespace, priority_class=queue.low))
    until(sched, low, lambda s: s.state == AppState.RUNNING)
    # the urgent app keeps the quota until the test removes it: the preempted app waits
    # as long as it holds it (a quick one let Kueue admit the low app again between two
    # looks, and the test missed the preemption)
    high = sched.submit(
        sh("echo urgent; exec sleep 300"), queued(namespace, priority_class=queue.high)
    )
    evicted = until(sched, low, lambda s: "Preempted" in s.msg, 120)
    assert evicted.state == AppState.PENDING, evicted
    assert "evicted (Preempted)" in evicted.msg, evicted.msg
    assert until(sched, high, lambda s: s.state == AppState.RUNNING).state == AppState.RUNNING

    deadline = time.monotonic() + 60
    while True:  # its container writes the line a moment after the pod reads Running
        lines = [line.split(" ", 1)[1] for line in sched.log_iter(high, "sh", 0)]
        if lines or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert lines == ["urgent\n"]
    # once the quota is free again, the preempted app is admitted and runs again
    sched.delete(high)
    until(sched, low, lambda s: s.state == AppState.RUNNING, 120)
    sched.delete(low)


def two_roles(script: str) -> AppDef:
    trainer = Role("trainer", IMAGE, entrypoint="sh", args=["-c", script], num_replicas=2)
    ps = Role("ps", IMAGE, entrypoint="sh", args=["-c", script], num_replicas=1)
    trainer.resource = ps.resource = TINY
    return AppDef("two", [trainer, ps])


# Each replica resolves rank 0's host name; the others then connect to it, and rank 0
# stays until both have (a rank 0 that exited first would leave the Service's DNS record
# before a replica that started later looked it up).
ROLE_SCRIPT = (
    "echo $TORCHX_ROLE replica $TORCHX_REPLICA_ID;"
    " python3 -c 'import os, socket, time\n"
    'host = os.environ["TORCHX_RANK0_HOST"]\n'
    'rank0 = (os.environ["TORCHX_ROLE"], os.environ["TORCHX_REPLICA_ID"]) == ("trainer", "0")\n'
    'server = socket.create_server(("", 29400)) if rank0 else None\n'
    "def reach():\n"
    "    socket.gethostbyname(host)\n"
    "    if not rank0: socket.create_connection((host, 29400), timeout=5).close()\n"
    "for _ in range(600):\n"
    "    try: reach(); break\n"
    "    except OSError: time.sleep(0.2)\n"
    "else: raise SystemExit(1)\n"
    'print("rank0 resolves: True", flush=True)\n'
    "if server is not None:\n"
    "    server.settimeout(150)\n"
    "    for _ in range(2): server.accept()[0].close()\n'"
)


def test_a_two_role_jobset_app_logs_each_role(sched: KubernetesScheduler, namespace: str) -> None:
    app = two_roles(ROLE_SCRIPT)
    for role in app.roles:
        role.env["TORCHX_ROLE"] = role.name
    app_id = sched.submit(app, {"queue": "-", "job_type": "jobset", "namespace": namespace})
    assert app_id == f"{namespace}:jobset:{app_id.rpartition(':')[2]}"
    status = until(sched, app_id, finished)
    assert status.state == AppState.SUCCEEDED, status.msg
    assert [(r.role, [x.state for x in r.replicas]) for r in status.roles_statuses] == [
        ("trainer", [AppState.SUCCEEDED] * 2),
        ("ps", [AppState.SUCCEEDED]),
    ]
    for role, replica in (("trainer", 0), ("trainer", 1), ("ps", 0)):
        lines = [line.split(" ", 1)[1] for line in sched.log_iter(app_id, role, replica)]
        assert lines == [f"{role} replica {replica}\n", "rank0 resolves: True\n"]
    assert [r.app_id for r in sched.list({"namespace": namespace})] == [app_id]
    sched.delete(app_id)
    assert sched.describe(app_id) is None


def test_a_jobset_app_waits_in_kueue_behind_a_batch_app(
    sched: KubernetesScheduler, namespace: str, queue: SimpleNamespace, kube: Any
) -> None:
    first = sched.submit(sh("sleep 3"), queued(namespace))
    until(sched, first, lambda s: s.state == AppState.RUNNING)
    jobset = sched.submit(two_roles("echo ok"), queued(namespace, "jobset"))
    waiting = until(sched, jobset, lambda s: "insufficient unused quota" in s.msg, 60)
    assert waiting.state == AppState.PENDING
    status = until(sched, jobset, finished)
    assert status.state == AppState.SUCCEEDED, status.msg
    owners = [w["metadata"]["ownerReferences"][0]["kind"] for w in workloads(kube, namespace)]
    assert sorted(owners) == ["Job", "JobSet"]
    assert all(
        any(c["type"] == "Admitted" for c in w["status"]["conditions"])
        for w in workloads(kube, namespace)
    )


def cli(tmp_path: Path, *args: str, kubeconfig: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    if kubeconfig:
        env["KUBECONFIG"] = kubeconfig
    return subprocess.run(
        [TORCHX, *args], cwd=tmp_path, capture_output=True, text=True, timeout=180, env=env,
        check=False,
    )  # fmt: skip


def one_error_line(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode != 0, run.stdout
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    return lines[0]


ECHO = ["--workspace", "", "utils.echo", "--image", IMAGE, "--msg", "hi"]


def test_an_unknown_local_queue_is_one_line_and_creates_nothing(
    namespace: str, queue: SimpleNamespace, tmp_path: Path, kube: Any
) -> None:
    for job_type in ("batch", "jobset"):
        cfg = f"queue=nope,job_type={job_type},namespace={namespace}"
        line = one_error_line(cli(tmp_path, "run", "-s", "kubernetes", "-cfg", cfg, *ECHO))
        assert f"LocalQueue 'nope' does not exist in namespace '{namespace}'" in line
        assert "LocalQueues there: lq" in line and "-cfg queue=-" in line
    assert kube.batch.list_namespaced_job(namespace).items == []
    assert (
        kube.custom.list_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets"
        )["items"]
        == []
    )
    check = cli(tmp_path, "check", "-s", "kubernetes", "-cfg",
                f"queue=lq,job_type=jobset,namespace={namespace}")  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"LocalQueues in {namespace} to submit to: lq (ClusterQueue {queue.cluster})" in (
        check.stdout
    )
    assert "jobset.x-k8s.io" in check.stdout


def test_a_cluster_without_kueue_or_jobset_is_one_line_each(tmp_path: Path) -> None:
    """A bare cluster (its own API server and etcd prefix): no Kueue, no JobSet."""
    with second_api_server(bare=True) as url:
        config = admin_kubeconfig_copy(tmp_path / "bare.kubeconfig", server=url)
        run = ("run", "-s", "kubernetes", "-cfg")
        no_kueue = one_error_line(
            cli(tmp_path, *run, "queue=lq,job_type=batch", *ECHO, kubeconfig=config)
        )
        assert no_kueue.startswith("torchx: error: Kueue is not installed"), no_kueue
        assert "-cfg queue=-" in no_kueue
        no_jobset = one_error_line(
            cli(tmp_path, *run, "queue=-,job_type=jobset", *ECHO, kubeconfig=config)
        )
        assert no_jobset.startswith("torchx: error: JobSet is not installed"), no_jobset
        assert "-cfg job_type=batch" in no_jobset
        # a just-started API server's first discovery takes seconds on a loaded machine (a
        # CI run beside stress-ng took more than check's default 4 s): this test reads what
        # check says of the cluster, not how fast the cold server answers
        check = cli(tmp_path, "check", "--timeout", "60", "-s", "kubernetes", "-cfg",
                    "queue=lq,job_type=jobset", kubeconfig=config)  # fmt: skip
        assert check.returncode != 0
        assert "not installed (no jobset.x-k8s.io API), and job_type=jobset" in check.stdout
        assert "not installed (no kueue.x-k8s.io API), and queue=lq asks for it" in check.stdout


ABSENT = "127.0.0.1:5000/torchx-test/absent:1"  # the local registry has no such image


def _no_pods_left(kube: Any, namespace: str) -> None:
    deadline = time.monotonic() + 60
    while pods := kube.core.list_namespaced_pod(namespace).items:
        assert time.monotonic() < deadline, [p.metadata.name for p in pods]
        time.sleep(0.5)


def test_an_unpullable_image_queued_in_kueue_ends_with_its_workload_deactivated(
    sched: KubernetesScheduler, namespace: str, queue: SimpleNamespace, kube: Any
) -> None:
    """TorchX fails the app after image_pull_timeout and deactivates its workload: Kueue
    stops the Job (its pods go, the quota is free) and never requeues it."""
    app_id = sched.submit(sh("true", image=ABSENT), queued(namespace, image_pull_timeout=5))
    status = until(sched, app_id, finished)
    assert status.state == AppState.FAILED and status.failure is not None, status.msg
    assert status.failure.cause == "image_pull"
    _no_pods_left(kube, namespace)
    assert [w["spec"].get("active") for w in workloads(kube, namespace)] == [False]
    again = sched.describe(app_id)
    assert again is not None and again.state == AppState.FAILED and ABSENT in again.msg
    fine = sched.submit(sh("echo scheduled"), queued(namespace))
    assert until(sched, fine, finished).state == AppState.SUCCEEDED  # the quota is free


def test_an_unpullable_image_in_a_jobset_ends_with_the_jobset_suspended(
    sched: KubernetesScheduler, namespace: str, kube: Any
) -> None:
    cfg = {"queue": "-", "job_type": "jobset", "namespace": namespace, "image_pull_timeout": 5}
    app_id = sched.submit(sh("true", image=ABSENT, replicas=2), cfg)
    status = until(sched, app_id, finished)
    assert status.state == AppState.FAILED and status.failure is not None, status.msg
    assert status.failure.cause == "image_pull"
    _no_pods_left(kube, namespace)
    (jobset,) = kube.custom.list_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets"
    )["items"]
    assert jobset["spec"]["suspend"] is True
    assert sched.describe(app_id).state == AppState.FAILED


def test_a_workload_kueue_deactivates_fails_the_app_as_rejected(
    sched: KubernetesScheduler, namespace: str, queue: SimpleNamespace, kube: Any
) -> None:
    """Kueue deactivates a workload an admission check rejected, or one evicted more often
    than waitForPodsReady allows; it then stays suspended for ever. Deactivated here as
    Kueue does (spec.active: false) while it waits for quota."""
    running = sched.submit(sh("sleep 120"), queued(namespace))
    until(sched, running, lambda s: s.state == AppState.RUNNING)
    waiting = sched.submit(sh("echo never"), queued(namespace))
    until(sched, waiting, lambda s: "insufficient unused quota" in s.msg, 60)
    name = waiting.rpartition(":")[2]
    uids = {
        j.metadata.uid
        for j in kube.batch.list_namespaced_job(
            namespace, label_selector=f"app.kubernetes.io/instance={name}"
        ).items
    }
    (workload,) = [
        w for w in workloads(kube, namespace)
        if w["metadata"]["labels"].get("kueue.x-k8s.io/job-uid") in uids
    ]  # fmt: skip
    kube.custom.patch_namespaced_custom_object(
        *KUEUE, namespace, "workloads", workload["metadata"]["name"], {"spec": {"active": False}}
    )
    status = until(sched, waiting, finished, 60)
    assert status.state == AppState.FAILED and status.failure is not None, status.msg
    assert status.failure.cause == "rejected"
    assert workload["metadata"]["name"] in status.failure.message
    sched.cancel(running)


def test_a_queued_app_says_why_it_waits_and_where_its_time_went(
    sched: KubernetesScheduler, namespace: str, queue: SimpleNamespace
) -> None:
    """Behind a running app on a 1-CPU ClusterQueue: waiting says Kueue's reason; once run,
    the timeline has queued until Kueue admitted it, then its pod starting and running."""
    first = sched.submit(sh("sleep 4"), queued(namespace))
    until(sched, first, lambda s: s.state == AppState.RUNNING)
    second = sched.submit(sh("echo second"), queued(namespace))
    waiting = until(
        sched,
        second,
        lambda s: s.waiting is not None and "insufficient unused quota" in s.waiting.reason,
        60,
    )
    assert waiting.waiting is not None and waiting.waiting.phase == "queued"
    done = until(sched, second, finished)
    assert done.state == AppState.SUCCEEDED and done.waiting is None
    phases = [p.phase for p in done.timeline]
    assert phases == ["submitted", "queued", "admitted", "starting", "running", "finished"]
    queued_for = done.timeline[1].end - done.timeline[1].start
    assert queued_for >= 1, done.timeline  # it waited for the first app's quota
