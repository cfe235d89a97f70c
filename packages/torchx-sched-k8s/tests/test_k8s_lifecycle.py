"""The kubernetes scheduler against a Kubernetes API stand-in on localhost, through the
real ``kubernetes`` client (see tools/testsupport/torchx_testsupport/k8s/): both job
types from submission to deletion, logs, listing, and the API's refusals."""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

import pytest
from torchx_testsupport.k8s import NS, FakeKubernetes, app, cfg, replica_pod

from torchx.schedulers._kubernetes.client import KubernetesApiError, KubernetesConfigError
from torchx.schedulers._kubernetes.status import newest_pod
from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler, create_scheduler
from torchx.specs import AppState
from torchx.specs.overlays import set_overlay

JOB_TYPES = pytest.mark.parametrize("job_type", ["volcano", "batch"])
# Batch Jobs run for real in tests/k8s/test_k8s_cluster.py (a real API server, scheduler,
# Job controller and kubelet); Volcano's controllers cannot be built there, so its side of
# these stays against the stand-in's Volcano.
VOLCANO = pytest.mark.parametrize("job_type", ["volcano"])


@VOLCANO
def test_lifecycle_success(fake: FakeKubernetes, sched: KubernetesScheduler, job_type: str) -> None:
    app_id = sched.submit(app(), cfg(job_type))
    assert app_id.startswith(f"{NS}:batch:trainer-" if job_type == "batch" else f"{NS}:trainer-")
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.PENDING
    assert [r.num_replicas for r in status.roles] == [2] and status.roles[0].image == "img:1"

    pod0 = replica_pod(fake, app_id, 0)
    fake.set_pod(NS, pod0, "Pending", unschedulable="0/3 nodes are available: 3 Insufficient cpu.")
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.PENDING
    assert "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu." in status.msg
    assert pod0 in status.msg

    fake.set_pod(
        NS, replica_pod(fake, app_id, 1), "Pending", waiting=("ImagePullBackOff", "no img:1")
    )
    status = sched.describe(app_id)
    assert status is not None
    assert "ImagePullBackOff: no img:1" in status.msg

    fake.set_all(NS, "torchx.pytorch.org/role-name=train", "Running")
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.RUNNING
    replicas = status.roles_statuses[0].replicas
    assert [r.id for r in replicas] == [0, 1]
    assert all(r.state == AppState.RUNNING for r in replicas)
    assert replicas[0].hostname.endswith(f".{NS}.pod.cluster.local")

    fake.set_all(NS, "torchx.pytorch.org/role-name=train", "Succeeded")
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.SUCCEEDED
    assert [r.state for r in status.roles_statuses[0].replicas] == [AppState.SUCCEEDED] * 2


@VOLCANO
def test_failure_says_how_the_pod_ended(
    fake: FakeKubernetes, sched: KubernetesScheduler, job_type: str
) -> None:
    app_id = sched.submit(app(), cfg(job_type))
    fake.set_pod(NS, replica_pod(fake, app_id, 1), "Failed", exit_code=137, reason="OOMKilled")
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.FAILED
    assert "exited with 137 (OOMKilled)" in status.msg
    failed = status.roles_statuses[0].replicas[1]
    assert failed.state == AppState.FAILED and "OOMKilled" in failed.structured_error_msg


@JOB_TYPES
def test_status_costs_two_calls_whatever_the_size(
    fake: FakeKubernetes, sched: KubernetesScheduler, job_type: str
) -> None:
    costs = []
    for n in (1, 40):
        app_id = sched.submit(app(n), cfg(job_type))
        before = fake.calls()
        status = sched.describe(app_id)
        costs.append(fake.calls() - before)
        assert status is not None and len(status.roles_statuses[0].replicas) == n
    assert costs == [2, 2]


@VOLCANO
def test_cancel_keeps_the_job_delete_removes_it(
    fake: FakeKubernetes, sched: KubernetesScheduler, job_type: str
) -> None:
    app_id = sched.submit(app(), cfg(job_type))
    fake.set_all(NS, "torchx.pytorch.org/role-name=train", "Running")
    sched.cancel(app_id)
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.CANCELLED
    assert fake.pod_names(NS) == []  # the pods were stopped...
    kind = "jobs" if job_type == "batch" else "vcjobs"
    assert len(fake.store[kind]) == 1  # ...the job is kept for inspection
    assert [r.app_id for r in sched.list({"namespace": NS})] == [app_id]

    sched.delete(app_id)
    assert sched.describe(app_id) is None
    assert fake.store[kind] == {} and fake.store["services"] == {} and fake.store["pods"] == {}
    sched.delete(app_id)  # deleting what is gone is fine
    sched.cancel(app_id)


def test_list_shows_both_kinds_with_states(
    fake: FakeKubernetes, sched: KubernetesScheduler
) -> None:
    volcano = sched.submit(app(), cfg("volcano"))
    batch = sched.submit(app(), cfg("batch"))
    fake.set_all(NS, f"app.kubernetes.io/instance={batch.rpartition(':')[2]}", "Succeeded")
    rows = {r.app_id: r.state for r in sched.list({"namespace": NS})}
    assert rows == {volcano: AppState.PENDING, batch: AppState.SUCCEEDED}
    assert sched.list({"namespace": "team"}) == []


def test_list_uses_the_context_namespace(
    fake: FakeKubernetes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", fake.write_kubeconfig(str(tmp_path / "c2"), namespace="team"))
    sched = create_scheduler("torchx")
    app_id = sched.submit(app(), cfg("volcano", namespace="team"))
    assert app_id.startswith("team:")
    assert [r.app_id for r in sched.list()] == [app_id]


@VOLCANO
def test_logs_follow_keeps_line_breaks(
    fake: FakeKubernetes, sched: KubernetesScheduler, job_type: str
) -> None:
    app_id = sched.submit(app(), cfg(job_type))
    pod = replica_pod(fake, app_id, 1)
    fake.set_pod(NS, pod, "Running")
    fake.log(NS, pod, "epoch 1\n")
    fake.log(NS, pod, "loss=0.")

    followed: list[bool] = []

    def finish() -> None:
        # the rest is written once the log is being followed
        followed.append(
            fake.wait_for_request(lambda m, path: m == "GET" and path.endswith(f"/{pod}/log"))
        )
        fake.log(NS, pod, "5\ndone\n")
        fake.set_pod(NS, pod, "Succeeded")

    writer = threading.Thread(target=finish)
    writer.start()
    lines = list(sched.log_iter(app_id, "train", 1, should_tail=True))
    writer.join()
    assert followed == [True]
    assert [line.split(" ", 1)[1] for line in lines] == ["epoch 1\n", "loss=0.5\n", "done\n"]
    assert all(line[:4].isdigit() and line.split(" ", 1)[0].endswith("Z") for line in lines)
    assert list(sched.log_iter(app_id, "train", 1, regex="loss")) == [lines[1]]


def test_logs_every_container_since_and_until(
    fake: FakeKubernetes, sched: KubernetesScheduler
) -> None:
    a = app(1)
    set_overlay(
        a.roles[0],
        "kubernetes",
        "V1Pod",
        {"spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}},
    )
    app_id = sched.submit(a, cfg("volcano"))
    pod = replica_pod(fake, app_id, 0)
    now = time.time()
    fake.log(NS, pod, "old\n", at=now - 3600)
    fake.log(NS, pod, "new\n", at=now - 5)
    fake.log(NS, pod, "side\n", container="sidecar", at=now - 5)
    fake.log(NS, pod, "future\n", at=now + 3600)
    fake.end_log(NS, pod)
    fake.set_pod(NS, pod, "Succeeded")  # the log ends because its containers did
    since = dt.datetime.now() - dt.timedelta(minutes=1)
    until = dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=1)
    lines = list(sched.log_iter(app_id, "train", 0, since=since, until=until))
    assert [line.removeprefix("[sidecar] ").split(" ", 1)[1] for line in lines] == [
        "new\n",
        "side\n",
    ]
    assert lines[1].startswith("[sidecar] ")
    followed = list(sched.log_iter(app_id, "train", 0, should_tail=True))
    assert len(followed) == 4 and any(line.startswith("[sidecar] ") for line in followed)
    with pytest.raises(ValueError, match=r"streams=combined"):
        sched.log_iter(app_id, "train", 0, streams="stderr")  # type: ignore[arg-type]


@JOB_TYPES
def test_missing_app(fake: FakeKubernetes, sched: KubernetesScheduler, job_type: str) -> None:
    app_id = f"{NS}:batch:nope-123" if job_type == "batch" else f"{NS}:nope-123"
    assert sched.describe(app_id) is None
    assert not sched.exists(app_id)
    with pytest.raises(ValueError, match=r"no pod for replica 0 of role 'train'"):
        list(sched.log_iter(app_id, "train", 0))
    with pytest.raises(ValueError, match=r"invalid kubernetes app id"):
        sched.describe("no-namespace")


@VOLCANO
def test_conflict_409(fake: FakeKubernetes, sched: KubernetesScheduler, job_type: str) -> None:
    info = sched.submit_dryrun(app(), cfg(job_type))
    sched.schedule(info)
    created = {k: dict(v) for k, v in fake.store.items()}
    with pytest.raises(KubernetesApiError, match=r"already exists.*torchx delete") as e:
        sched.schedule(info)
    assert e.value.status == 409
    assert {k: dict(v) for k, v in fake.store.items()} == created  # nothing added or lost


@VOLCANO
def test_forbidden_403_creates_nothing(
    fake: FakeKubernetes, sched: KubernetesScheduler, job_type: str
) -> None:
    # batch: the Service is allowed, the Job is not: the Service is removed again
    fake.forbid("create", "jobs.batch" if job_type == "batch" else "jobs.batch.volcano.sh")
    with pytest.raises(
        KubernetesApiError, match=r"forbidden.*RBAC permission in namespace 'default'"
    ):
        sched.submit(app(), cfg(job_type))
    assert all(not objects for objects in fake.store.values())


@VOLCANO
def test_invalid_spec_rejected_by_dry_run(
    fake: FakeKubernetes, sched: KubernetesScheduler, job_type: str
) -> None:
    a = app()
    set_overlay(
        a.roles[0],
        "kubernetes",
        "V1Pod",
        {"spec": {"containers": [{"name": "Bad_Sidecar", "image": "busybox"}]}},
    )
    with pytest.raises(
        KubernetesApiError, match=r"invalid job spec, rejected by the API server.*Bad_Sidecar"
    ) as e:
        sched.submit_dryrun(a, cfg(job_type))
    assert e.value.status == 422
    unknown = app()
    set_overlay(unknown.roles[0], "kubernetes", "V1Pod", {"spec": {"nodeSelectr": {"a": "b"}}})
    # Volcano's task templates reach the server as plain dicts; kubernetes >= 37 checks a
    # V1Job body against its own model first and refuses the unknown field before sending
    by = "the API server" if job_type == "volcano" else "(the API server|the kubernetes client)"
    with pytest.raises(
        KubernetesApiError, match=rf"invalid job spec, rejected by {by}.*nodeSelectr"
    ):
        sched.submit(unknown, cfg(job_type))
    assert all(not objects for objects in fake.store.values())


def test_volcano_rejects_unknown_queue_and_missing_volcano(
    fake: FakeKubernetes, sched: KubernetesScheduler
) -> None:
    with pytest.raises(KubernetesApiError, match=r"unable to find job queue: gpu"):
        sched.submit(app(), cfg("volcano", queue="gpu"))
    fake.volcano = False
    with pytest.raises(KubernetesApiError) as e:  # the server answers "404 page not found"
        sched.submit(app(), cfg("volcano"))
    assert str(e.value).startswith("Volcano is not installed on this cluster (no batch.volcano")
    assert "-cfg job_type=batch" in str(e.value) and "page not found" not in str(e.value)
    assert sched.submit(app(), cfg("batch"))  # plain Jobs still work there
    (listed,) = sched.list({"namespace": NS})
    assert listed.name == app().name  # APP NAME is filled in


def test_describe_gives_back_the_roles_command_and_env(
    fake: FakeKubernetes, sched: KubernetesScheduler
) -> None:
    for job_type in ("volcano", "batch"):
        app_id = sched.submit(app(), cfg(job_type))
        described = sched.describe(app_id)
        assert described is not None
        (role,) = described.roles
        original = app().roles[0]
        assert (role.entrypoint, role.args) == (original.entrypoint, original.args), job_type
        assert role.env["TORCHX_RANK0_HOST"], job_type


def test_volcano_retries_restart_the_job(fake: FakeKubernetes, sched: KubernetesScheduler) -> None:
    a = app()
    a.roles[0].max_retries = 1
    app_id = sched.submit(a, cfg("volcano"))
    fake.set_pod(NS, replica_pod(fake, app_id, 0), "Failed", exit_code=1)
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.RUNNING and status.num_restarts == 1
    fake.set_pod(NS, replica_pod(fake, app_id, 0), "Failed", exit_code=1)
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.FAILED


def test_batch_retries_replace_the_pod(fake: FakeKubernetes, sched: KubernetesScheduler) -> None:
    a = app()
    a.roles[0].max_retries = 1
    app_id = sched.submit(a, cfg("batch"))
    first = replica_pod(fake, app_id, 0)
    fake.set_pod(NS, first, "Failed", exit_code=1)
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.PENDING and status.num_restarts == 1
    assert status.roles_statuses[0].replicas[0].state == AppState.PENDING  # the new pod


def test_newest_pod_breaks_a_tie_for_the_replacement() -> None:
    """creationTimestamp has whole seconds: a failed pod and its replacement can tie."""

    def pod(name: str, phase: str, at: str = "2025-01-01T00:00:00Z") -> dict[str, object]:
        return {"metadata": {"name": name, "creationTimestamp": at}, "status": {"phase": phase}}

    failed = pod("job-0-zzzzz", "Failed")
    for phase in ("Pending", "Running", "Succeeded", "Failed"):
        replacement = pod("job-0-aaaaa", phase)
        expected = failed if phase == "Failed" else replacement  # two failed: by name
        assert newest_pod([failed, replacement]) is expected
        assert newest_pod([replacement, failed]) is expected
    older = pod("job-0-bbbbb", "Running", at="2024-12-31T23:59:59Z")
    assert newest_pod([older, failed]) is failed  # the time comes first


def test_credentials_and_contexts(
    fake: FakeKubernetes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")  # no token mounted: kubeconfig
    assert create_scheduler("torchx").list({"namespace": NS}) == []
    with pytest.raises(KubernetesConfigError, match=r"context 'prod'.*contexts are: fake"):
        create_scheduler("torchx", kube_context="prod").list({"namespace": NS})
    monkeypatch.setenv("KUBECONFIG", fake.write_kubeconfig(str(tmp_path / "bad"), token="wrong"))
    with pytest.raises(KubernetesApiError, match=r"rejected the credentials"):
        create_scheduler("torchx").list({"namespace": NS})
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    with pytest.raises(KubernetesConfigError, match=r"no Kubernetes cluster configured"):
        create_scheduler("torchx").describe(f"{NS}:x")


def test_unreachable_server_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeKubernetes().start()
    monkeypatch.setenv("KUBECONFIG", server.write_kubeconfig(str(tmp_path / "config")))
    server.stop()
    sched = create_scheduler("torchx")
    with pytest.raises(KubernetesApiError, match=r"cannot reach the Kubernetes API server"):
        sched.describe(f"{NS}:x")
    # a --dryrun with an unreachable cluster still renders, with a note
    assert sched.submit_dryrun(app(), cfg("volcano")).request.resource["kind"] == "Job"


def _wait_in_thread(sched: KubernetesScheduler, app_id: str, timeout: float) -> threading.Event:
    returned = threading.Event()

    def wait() -> None:
        sched.wait_for_change(app_id, timeout)
        returned.set()

    threading.Thread(target=wait, daemon=True).start()
    return returned


@VOLCANO
def test_wait_for_change_returns_at_the_change(
    fake: FakeKubernetes, sched: KubernetesScheduler, job_type: str
) -> None:
    """A watch of the job(s), not a sleep: the runner's wait ends when the app does."""
    app_id = sched.submit(app(replicas=1), cfg(job_type))
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.PENDING
    watches = fake.watches()
    returned = _wait_in_thread(sched, app_id, 600)
    assert fake.wait_for_watch(watches)  # the pod moves only once the watch is open
    fake.set_pod(NS, replica_pod(fake, app_id, 0), "Running")
    assert returned.wait(60), "wait_for_change slept instead of returning at the change"
    # woken by the change, not by a listing of the job(s) as they were (ADDED)
    assert fake.delivered and all(t == "MODIFIED" for t, _ in fake.delivered), fake.delivered
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.RUNNING


@JOB_TYPES
def test_a_change_before_the_wait_is_not_missed(
    fake: FakeKubernetes, sched: KubernetesScheduler, job_type: str
) -> None:
    """The watch starts after what describe read: a change in between wakes it at once."""
    app_id = sched.submit(app(replicas=1), cfg(job_type))
    sched.describe(app_id)
    fake.set_pod(NS, replica_pod(fake, app_id, 0), "Succeeded")
    assert _wait_in_thread(sched, app_id, 600).wait(60)
    # the watch started at describe's version: it saw the change, not a fresh listing
    assert fake.delivered and all(t == "MODIFIED" for t, _ in fake.delivered), fake.delivered
    status = sched.describe(app_id)
    assert status is not None and status.state == AppState.SUCCEEDED


def test_changes_of_other_apps_do_not_wake_the_wait(
    fake: FakeKubernetes, sched: KubernetesScheduler
) -> None:
    mine = sched.submit(app(replicas=1, name="mine"), cfg("batch"))
    other = sched.submit(app(replicas=1, name="other"), cfg("batch"))
    sched.describe(mine)
    fake.set_pod(NS, replica_pod(fake, other, 0), "Running")
    sched.wait_for_change(mine, 1)  # nothing of mine changed: the watch runs out
    assert fake.watches() == 1
    assert fake.delivered == []


def test_without_watch_permission_the_wait_polls(
    fake: FakeKubernetes, sched: KubernetesScheduler
) -> None:
    fake.forbid("watch", "jobs.batch")
    app_id = sched.submit(app(replicas=1), cfg("batch"))
    sched.describe(app_id)
    sched.wait_for_change(app_id, 0.2)  # a refused watch is no error: it sleeps instead
    sched.wait_for_change(app_id, 0.2)  # and is not asked for again
    assert fake.watches() == 1
