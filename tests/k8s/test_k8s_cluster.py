"""The kubernetes scheduler on a real cluster (tools/k8s-up.sh): apps whose pods really run
in containerd on a real kubelet, with their real output, the real scheduler's reasons, real
RBAC refusals, real watches and the real Job controller; each test in its own namespace."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import submitted_as_status_says
from torchx_testsupport.k8s.cluster import IMAGE, LIMITED, create_torchx_jobs, exec_in_app_pod
from torchx_testsupport.k8s.running import batch, finished, sh, until

from torchx.schedulers._kubernetes.client import KubernetesApiError
from torchx.schedulers.kubernetes_scheduler import LIST_PAGE, KubernetesScheduler, create_scheduler
from torchx.specs import AppState, BindMount, Resource
from torchx.specs.overlays import set_overlay

pytestmark = pytest.mark.timeout(300)
TORCHX = str(Path(sys.executable).parent / "torchx")


@pytest.fixture
def sched(namespace: str) -> KubernetesScheduler:
    return create_scheduler("torchx")


def test_replicas_run_find_rank0_by_name_and_log(
    sched: KubernetesScheduler, namespace: str
) -> None:
    script = (
        "echo replica $TORCHX_REPLICA_ID;"
        # the rank-0 address resolves through the cluster's DNS (a headless Service)
        " python3 -c 'import os, socket, time\n"
        'host = os.environ["TORCHX_RANK0_HOST"]\n'
        "for _ in range(100):\n"
        '    try: print("rank0 resolves:", bool(socket.gethostbyname(host))); break\n'
        "    except OSError: time.sleep(0.2)\n'"
    )
    app_id = sched.submit(sh(script, replicas=2), batch(namespace))
    status = until(sched, app_id, finished)
    assert status.state == AppState.SUCCEEDED, status.msg
    assert [r.state for r in status.roles_statuses[0].replicas] == [AppState.SUCCEEDED] * 2
    for replica in (0, 1):
        lines = [line.split(" ", 1)[1] for line in sched.log_iter(app_id, "sh", replica)]
        assert lines == [f"replica {replica}\n", "rank0 resolves: True\n"]
    assert [r.app_id for r in sched.list({"namespace": namespace})] == [app_id]


def test_a_failing_replica_fails_the_app_with_its_exit_code(
    sched: KubernetesScheduler, namespace: str
) -> None:
    app_id = sched.submit(sh("echo about to fail; exit 3"), batch(namespace))
    status = until(sched, app_id, finished)
    assert status.state == AppState.FAILED
    assert "exited with 3" in status.msg, status.msg
    assert [line.split(" ", 1)[1] for line in sched.log_iter(app_id, "sh", 0)] == [
        "about to fail\n"
    ]


def test_a_retry_replaces_the_failed_pod(
    sched: KubernetesScheduler, namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """max_retries=1: the Job controller makes a new pod after the first one fails."""
    shared = tmp_path_factory.mktemp("shared")  # a hostPath both pods see (one node)
    app = sh("if [ -e /shared/tried ]; then echo second try; else touch /shared/tried; exit 1; fi")
    app.roles[0].max_retries = 1
    app.roles[0].mounts = [BindMount(src_path=str(shared), dst_path="/shared")]
    app_id = sched.submit(app, batch(namespace))
    status = until(sched, app_id, finished)
    assert status.state == AppState.SUCCEEDED, status.msg
    assert status.num_restarts == 1
    assert [line.split(" ", 1)[1] for line in sched.log_iter(app_id, "sh", 0)] == ["second try\n"]


def test_follow_reads_the_log_while_the_pod_writes_it(
    sched: KubernetesScheduler, namespace: str
) -> None:
    script = "echo first; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo second"
    app_id = sched.submit(sh(script), batch(namespace))
    until(sched, app_id, lambda s: s.state == AppState.RUNNING)
    followed: list[str] = []

    def follow() -> None:
        followed.extend(sched.log_iter(app_id, "sh", 0, should_tail=True))

    reader = threading.Thread(target=follow)
    reader.start()
    # the pod goes on only once the follow has read its first line
    deadline = time.monotonic() + 60
    while not followed:
        assert time.monotonic() < deadline, "the followed log showed nothing"
        time.sleep(0.05)
    exec_in_app_pod(namespace, app_id, "touch /tmp/go")
    reader.join(120)
    assert not reader.is_alive(), "the follow did not end with the pod"
    assert [line.split(" ", 1)[1] for line in followed] == ["first\n", "second\n"]


def test_pending_says_why_the_real_scheduler_waits(
    sched: KubernetesScheduler, namespace: str
) -> None:
    app_id = sched.submit(
        sh("true", resource=Resource(cpu=64, gpu=0, memMB=2048)), batch(namespace)
    )
    status = until(sched, app_id, lambda s: "Insufficient cpu" in s.msg)
    assert status.state == AppState.PENDING
    assert status.msg.startswith("pending: ") and "Unschedulable" in status.msg, status.msg
    assert status.waiting is not None and status.waiting.phase == "queued"
    # list says it too, from one pod list for all of its waiting apps
    (row,) = [r for r in sched.list({"namespace": namespace}) if r.app_id == app_id]
    assert row.state == AppState.PENDING
    assert row.waiting.startswith("Unschedulable: ") and "Insufficient cpu" in row.waiting, row
    submitted_as_status_says(row, status)


def test_an_image_being_pulled_is_what_the_app_waits_for(
    sched: KubernetesScheduler, namespace: str
) -> None:
    """While kubelet pulls the app's image, ``waiting`` names the image (kubelet's events:
    the pod's status only says ContainerCreating) and the timeline has ``pulling_image``;
    once the pull is done the app runs."""
    import io
    import uuid

    from torchx_testsupport.docker import docker_with_test_image
    from torchx_testsupport.fronts import HeldConnections

    docker = docker_with_test_image("TORCHX_REQUIRE_K8S")
    # an image of its own (its own config, so its own image id), whose layers the node
    # already has: a pull of the test image's id under another name would leave kubelet
    # a record that the id came from a registry, and kubelet then verifies the preloaded
    # test image by pulling it (KubeletEnsureSecretPulledImages), which no registry has
    tag = uuid.uuid4().hex[:8]
    repo = f"127.0.0.1:5000/torchx-test/pulled-{tag}"
    dockerfile = f"FROM {IMAGE}\nLABEL torchx.test.pulled={tag}\n".encode()
    docker.images.build(fileobj=io.BytesIO(dockerfile), tag=f"{repo}:1", rm=True)
    for line in docker.images.push(repo, "1", stream=True, decode=True):
        assert "error" not in line, line
    held = HeldConnections(("127.0.0.1", 5000))  # the local registry, answering when let
    try:
        image = f"127.0.0.1:{held.port}/{repo.split('/', 1)[1]}:1"
        app_id = sched.submit(sh("echo pulled", image=image), batch(namespace))
        waiting = until(
            sched, app_id, lambda s: s.waiting is not None and "pulling" in s.waiting.reason
        )
        assert waiting.state == AppState.PENDING and waiting.waiting is not None
        assert (waiting.waiting.phase, waiting.waiting.reason) == (
            "starting",
            f"pulling image {image}",
        )
        phases = [p.phase for p in waiting.timeline]
        assert phases == ["submitted", "queued", "pulling_image"], waiting.timeline
        assert waiting.timeline[-1].detail == image and waiting.timeline[-1].end is None
        held.release.set()
        done = until(sched, app_id, finished)
        assert done.state == AppState.SUCCEEDED and done.waiting is None, done
        # and the node still has the test image under its own name
        after = until(sched, sched.submit(sh("true"), batch(namespace)), finished)
        assert after.state == AppState.SUCCEEDED, after
    finally:
        held.close()
        docker.images.remove(f"{repo}:1")


def test_an_image_that_cannot_be_pulled_fails_the_app(
    sched: KubernetesScheduler, namespace: str
) -> None:
    image = "127.0.0.1:5000/torchx-test/absent:1"  # the local registry has no such image
    app_id = sched.submit(sh("true", image=image), batch(namespace, image_pull_timeout=5))
    pending = until(sched, app_id, lambda s: "ErrImagePull" in s.msg or "BackOff" in s.msg)
    assert pending.state == AppState.PENDING  # within the grace period: still pending
    status = until(sched, app_id, finished)
    assert status.state == AppState.FAILED
    assert f"image {image} cannot be pulled for over 5 s" in status.msg, status.msg
    assert "image_pull_timeout" in status.msg


def test_a_container_restarting_in_place_says_crashloopbackoff(
    sched: KubernetesScheduler, namespace: str
) -> None:
    """restartPolicy OnFailure (a pod overlay): kubelet restarts the crashing container in
    its pod, backing off; status says so while the Job still has retries left."""
    app = sh("echo crashing; exit 1")
    app.roles[0].max_retries = 20  # the Job's backoffLimit counts these restarts
    set_overlay(app.roles[0], "kubernetes", "V1Pod", {"spec": {"restartPolicy": "OnFailure"}})
    app_id = sched.submit(app, batch(namespace))
    status = until(sched, app_id, lambda s: s.msg.startswith("restarting: "))
    assert status.state == AppState.RUNNING, status
    # kubelet reports either its back-off or, between two, the exit it restarts from
    assert "CrashLoopBackOff: back-off" in status.msg or (
        "container sh exited with 1 (Error), restarting" in status.msg
    ), status.msg
    sched.cancel(app_id)
    assert until(sched, app_id, finished).state == AppState.CANCELLED


def test_cancel_stops_the_pods_and_delete_removes_the_app(
    sched: KubernetesScheduler, namespace: str, kube: Any
) -> None:
    script = "trap 'exit 0' TERM; echo started; sleep 600 & wait"
    app_id = sched.submit(sh(script, replicas=2), batch(namespace))
    until(sched, app_id, lambda s: s.state == AppState.RUNNING)
    sched.cancel(app_id)
    status = until(sched, app_id, finished)
    assert status.state == AppState.CANCELLED
    deadline = time.monotonic() + 60
    while kube.core.list_namespaced_pod(namespace).items:
        assert time.monotonic() < deadline, "the cancelled app's pods are still there"
        time.sleep(0.2)
    assert [r.app_id for r in sched.list({"namespace": namespace})] == [app_id]  # kept
    sched.delete(app_id)
    assert sched.describe(app_id) is None
    assert kube.batch.list_namespaced_job(namespace).items == []


def test_the_api_servers_refusals(sched: KubernetesScheduler, namespace: str) -> None:
    info = sched.submit_dryrun(sh("true"), batch(namespace))
    sched.schedule(info)
    with pytest.raises(KubernetesApiError, match=r"already exists.*torchx delete") as e:
        sched.schedule(info)
    assert e.value.status == 409
    with pytest.raises(KubernetesApiError, match=r"namespace 'absent' does not exist"):
        sched.submit(sh("true"), batch("absent"))
    bad = sh("true")
    set_overlay(
        bad.roles[0], "kubernetes", "V1Pod",
        {"spec": {"containers": [{"name": "Bad_Sidecar", "image": IMAGE}]}},
    )  # fmt: skip
    with pytest.raises(KubernetesApiError, match=r"rejected by the API server.*Bad_Sidecar") as e:
        sched.submit_dryrun(bad, batch(namespace))
    assert e.value.status == 422
    assert len(sched.list({"namespace": namespace})) == 1  # the refused ones made nothing


def test_a_user_without_rights_is_refused_and_nothing_is_made(
    namespace: str, monkeypatch: pytest.MonkeyPatch, kube: Any
) -> None:
    # the limited user may read jobs and pods in `default`, and nothing more
    monkeypatch.setenv("KUBECONFIG", str(LIMITED))
    limited = create_scheduler("torchx")
    with pytest.raises(KubernetesApiError, match=r"forbidden.*RBAC permission in namespace"):
        limited.submit(sh("true"), batch("default"))
    before = {j.metadata.name for j in kube.batch.list_namespaced_job("default").items}
    assert not [n for n in before if n.startswith("app-")]
    limited.list({"namespace": "default"})  # reading is allowed: answered, no error
    with pytest.raises(KubernetesApiError, match=r"forbidden"):
        limited.list({"namespace": namespace})


def test_a_user_who_may_not_watch_still_follows_the_app(
    k8s_cluster: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limited user may get and list jobs in `default` but not watch them: the real
    API server answers the watch 403, and waiting turns into polling that sees the end."""
    monkeypatch.setenv("KUBECONFIG", str(k8s_cluster))
    admin = create_scheduler("torchx")
    app_id = admin.submit(sh("while [ ! -e /tmp/go ]; do sleep 0.1; done"), batch("default"))
    try:
        until(admin, app_id, lambda s: s.state == AppState.RUNNING)
        monkeypatch.setenv("KUBECONFIG", str(LIMITED))
        limited = create_scheduler("torchx")
        assert limited.describe(app_id) is not None
        limited.wait_for_change(app_id, 600)  # refused: returns after one poll interval
        exec_in_app_pod("default", app_id, "touch /tmp/go")
        assert until(limited, app_id, finished).state == AppState.SUCCEEDED
    finally:
        admin.delete(app_id)


def test_wait_for_change_returns_when_the_app_changes(
    sched: KubernetesScheduler, namespace: str
) -> None:
    """A real watch from describe's resource version: the runner's wait wakes at the change."""
    app_id = sched.submit(sh("while [ ! -e /tmp/go ]; do sleep 0.1; done"), batch(namespace))
    until(sched, app_id, lambda s: s.state == AppState.RUNNING)
    returned = threading.Event()
    waiter = threading.Thread(
        target=lambda: (sched.wait_for_change(app_id, 600), returned.set()), daemon=True
    )
    waiter.start()
    exec_in_app_pod(namespace, app_id, "touch /tmp/go")
    assert returned.wait(120), "wait_for_change did not return at the change"
    assert until(sched, app_id, finished).state == AppState.SUCCEEDED


def test_list_reads_thousands_of_jobs_in_pages(sched: KubernetesScheduler, namespace: str) -> None:
    """1,201 TorchX Jobs (suspended: no pods) come back whole from the real API server."""
    create_torchx_jobs(namespace, batch=1201)
    rows = sched.list({"namespace": namespace})
    assert LIST_PAGE < 1201 and len(rows) == 1201
    assert {r.state for r in rows} == {AppState.CANCELLED}  # suspended Jobs read as cancelled


def test_volcano_jobs_are_stored_listed_and_deleted(
    sched: KubernetesScheduler, namespace: str
) -> None:
    """Volcano's CRDs without its controllers (they cannot be built here): the real API
    server keeps, lists and deletes the job; no pod runs for it."""
    app_id = sched.submit(sh("true"), {"queue": "default", "namespace": namespace})
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.SUBMITTED
    assert [r.app_id for r in sched.list({"namespace": namespace})] == [app_id]
    sched.delete(app_id)
    assert sched.describe(app_id) is None


def test_the_node_reports_the_real_kubelet(kube: Any) -> None:
    (node,) = kube.core.list_node().items
    assert node.status.node_info.kubelet_version.startswith("v1.36.")
    assert node.status.node_info.container_runtime_version.startswith("containerd://2.")


TRAIN = """\
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
total = torch.tensor([float(dist.get_rank())])
dist.all_reduce(total)
rank, size, node = dist.get_rank(), dist.get_world_size(), os.uname().nodename
print(f"rank {rank} of {size} on {node}: sum {total.item()}")
dist.destroy_process_group()
"""


def test_ddp_2x2_from_a_pushed_workspace(namespace: str, tmp_path: Path) -> None:
    """`torchx run -s kubernetes dist.ddp -j 2x2`: the workspace is built into an image on
    top of the test image, pushed to the local registry and pulled by the node; two pods of
    two processes rendezvous on the first pod's fully qualified name (pods reach each other
    through the bridge's FORWARD rules that the CNI firewall plugin adds). The test image
    has no torch: the environment running this test (it has) is mounted read-only at the
    same path, as a shared filesystem would be."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(TRAIN)
    torch_env, python_home = sys.prefix, os.path.realpath(sys.base_prefix)
    mounts = (
        f"type=bind,src={torch_env},dst={torch_env},readonly,"
        f"type=bind,src={python_home},dst={python_home},readonly"
    )
    cfg = f"queue=-,job_type=batch,namespace={namespace},image_repo=127.0.0.1:5000/torchx-k8s"
    run = subprocess.run(
        [TORCHX, "run", "-s", "kubernetes", "-cfg", cfg, "--wait", "--log",
         "dist.ddp", "-j", "2x2", "--image", IMAGE, "--script", "train.py",
         "--cpu", "1", "--memMB", "4096", "--env", f"PATH={torch_env}/bin:/usr/bin:/bin",
         "--mounts", mounts],
        cwd=work, capture_output=True, text=True, timeout=280, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout + run.stderr  # `run --log` writes the logs to stderr, as upstream
    ranks = sorted(line.split("rank ", 1)[1] for line in out.splitlines() if " of 4 on " in line)
    assert [r.split(" ", 1)[0] for r in ranks] == ["0", "1", "2", "3"], out[-3000:]
    assert all(r.endswith("sum 6.0") for r in ranks), ranks
    # ranks 0 and 1 ran on the first pod: the one that hosts the rendezvous under its name
    assert [r[0] for r in ranks if "-train-0: " in r] == ["0", "1"], ranks
    assert "finished SUCCEEDED" in out


def test_describe_native_reads_the_apps_objects_back(namespace: str) -> None:
    """``Runner.describe_native`` (upstream's #1407): what the cluster holds, in the dry
    run's request type, for a Volcano job and for a batch app's Services and Jobs."""
    from torchx.runner import get_runner
    from torchx.schedulers.kubernetes_scheduler import KubernetesJob

    with get_runner() as runner:
        for cfg, kinds in (
            ({"queue": "default", "namespace": namespace}, None),
            (batch(namespace), ["Service", "Job"]),
        ):
            planned = runner.dryrun(sh("true"), "kubernetes", cfg).request
            handle = runner.run(sh("true"), "kubernetes", cfg)
            info = runner.describe_native(handle)
            assert info is not None and isinstance(info.request, KubernetesJob)
            live = info.request.resource
            assert info.request.images_to_push == {} and info.request.namespace == namespace
            if kinds is None:  # the Volcano job itself, with what the server added
                assert live["kind"] == planned.resource["kind"] == "Job"
                assert live["apiVersion"] == "batch.volcano.sh/v1alpha1"
                assert live["metadata"]["uid"] and live["spec"]["tasks"][0]["replicas"] == 1
            else:
                assert live["kind"] == "List"
                assert [o["kind"] for o in live["items"]] == kinds
                wanted = [o["metadata"]["name"] for o in planned.resource["items"]]
                assert len({o["metadata"]["name"] for o in live["items"]}) == len(set(wanted))
            assert "kind:" in str(info.request)  # YAML that kubectl apply -f takes
            runner.delete(handle)
            assert runner.describe_native(handle) is None
