"""The request the kubernetes scheduler renders: upstream's golden outputs (A.2, A.6),
the options beyond upstream, the plain-Jobs shape and the name checks."""

from __future__ import annotations

import logging

import pytest
import yaml

from torchx.schedulers._kubernetes.request import COUNT_ATTEMPTS, SpecError
from torchx.schedulers.kubernetes_scheduler import (
    KubernetesJob,
    KubernetesOpts,
    Opts,
    app_to_resource,
    create_scheduler,
    role_to_pod,
)
from torchx.specs import AppDef, BindMount, DeviceMount, Resource, Role, VolumeMount, macros
from torchx.specs.named_resources_aws import aws_p4d_24xlarge
from torchx.specs.overlays import JOIN, set_overlay


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path}/absent")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


def ddp_app(replicas: str = "1:2", nproc: int = 8) -> AppDef:
    """What `dist.ddp --script train.py -j 1:2x8 -h aws_p4d.24xlarge` builds (A.6)."""
    cmd = (
        f"torchrun --rdzv_backend c10d --rdzv_endpoint $${{{macros.rank0_env}:=localhost}}:29500"
        f" --rdzv_id '{macros.app_id}' --nnodes {replicas} --nproc_per_node {nproc}"
        " --tee 3 --role '' train.py"
    )
    role = Role(
        "train",
        "ghcr.io/pytorch/torchx:0.8.0dev0",
        entrypoint="bash",
        args=["-c", cmd],
        num_replicas=2,
        min_replicas=1,
        max_retries=3,
        resource=aws_p4d_24xlarge(),
        port_map={"c10d": 29500},
        env={"TORCHX_TRACKING_EXPERIMENT_NAME": "default-experiment", "LOGLEVEL": "WARNING"},
        mounts=[
            BindMount("/data", "/data", read_only=True),
            VolumeMount("pvc1", "/pvc"),
            DeviceMount("/dev/fuse", "/dev/fuse"),
        ],
    )
    return AppDef("train", [role])


def dryrun(app: AppDef, **cfg: object) -> KubernetesJob:
    scheduler = create_scheduler("torchx")
    info = scheduler.submit_dryrun(app, {"queue": "default", **cfg})
    job: KubernetesJob = info.request
    # what `torchx run --dryrun` prints reads back as the very request
    assert yaml.safe_load(str(info)) == job.resource
    return job


def test_golden_a6_volcano_job() -> None:
    job = dryrun(ddp_app(), service_account="sa", priority_class="high")
    res = job.resource
    name = res["metadata"]["name"]
    assert res["apiVersion"] == "batch.volcano.sh/v1alpha1" and res["kind"] == "Job"
    assert name.startswith("train-")
    spec = res["spec"]
    assert spec["schedulerName"] == "volcano" and spec["queue"] == "default"
    assert spec["maxRetry"] == 3 and spec["priorityClassName"] == "high"
    assert spec["plugins"] == {"svc": ["--publish-not-ready-addresses"], "env": []}
    t0, t1 = spec["tasks"]
    assert (t0["name"], t1["name"]) == ("train-0", "train-1")
    assert (t0["minAvailable"], t1["minAvailable"]) == (1, 0)
    assert t0["replicas"] == 1 and t0["maxRetry"] == 3
    assert {"action": "RestartJob", "event": "PodFailed"} in t0["policies"]
    pod = t0["template"]
    assert pod["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    labels = pod["metadata"]["labels"]
    assert labels["app.kubernetes.io/instance"] == name
    assert labels["app.kubernetes.io/managed-by"] == "torchx.pytorch.org"
    assert labels["torchx.pytorch.org/replica-id"] == "0"
    assert labels["torchx.pytorch.org/role-name"] == "train"
    (c,) = pod["spec"]["containers"]
    assert c["name"] == "train-0" and c["image"] == "ghcr.io/pytorch/torchx:0.8.0dev0"
    assert c["command"][:2] == ["bash", "-c"]
    assert "${TORCHX_RANK0_HOST:=localhost}:29500" in c["command"][2]
    assert f"--rdzv_id '{name}' --nnodes 1:2" in c["command"][2]
    t1_cmd = t1["template"]["spec"]["containers"][0]["command"][2]
    assert "${VC_TRAIN_0_HOSTS:=localhost}" in t1_cmd
    env0 = {e["name"]: e.get("value") for e in c["env"]}
    assert env0["TORCHX_RANK0_HOST"] == "localhost" and env0["LOGLEVEL"] == "WARNING"
    assert env0["TORCHX_IMAGE"] == c["image"]
    env1 = {e["name"] for e in t1["template"]["spec"]["containers"][0]["env"]}
    assert "TORCHX_RANK0_HOST" not in env1
    assert c["ports"] == [{"name": "c10d", "containerPort": 29500}]
    assert c["resources"] == {
        "limits": {
            "cpu": "96000m",
            "memory": "1132416M",
            "nvidia.com/gpu": "8",
            "vpc.amazonaws.com/efa": "4",
        },
        "requests": {"cpu": "95900m", "memory": "1131392M", "nvidia.com/gpu": "8"},
    }
    assert c["securityContext"] == {"privileged": True}
    assert c["volumeMounts"] == [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "mount-0", "mountPath": "/data", "readOnly": True},
        {"name": "mount-1", "mountPath": "/pvc", "readOnly": False},
        {"name": "mount-2", "mountPath": "/dev/fuse", "readOnly": False},
    ]
    s = pod["spec"]
    assert s["nodeSelector"] == {"node.kubernetes.io/instance-type": "p4d.24xlarge"}
    assert s["restartPolicy"] == "Never" and s["serviceAccountName"] == "sa"
    assert s["volumes"] == [
        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
        {"name": "mount-0", "hostPath": {"path": "/data"}},
        {"name": "mount-1", "persistentVolumeClaim": {"claimName": "pvc1"}},
        {"name": "mount-2", "hostPath": {"path": "/dev/fuse"}},
    ]


def test_golden_a2_runopts() -> None:
    text = repr(create_scheduler("torchx").run_opts())
    usage = text.splitlines()[1].strip()
    # upstream's order; queue is optional here (only job_type=volcano needs one)
    assert usage.startswith(
        "[queue=QUEUE],[namespace=NAMESPACE],[service_account=SERVICE_ACCOUNT],"
        "[priority_class=PRIORITY_CLASS],"
    )
    assert usage.index("[image_repo=IMAGE_REPO]") < usage.index("[quiet=QUIET]")
    assert (
        "    optional arguments:\n        queue=QUEUE (str, None)\n"
        "            Volcano queue to schedule job in" in text
    )
    assert (
        "        namespace=NAMESPACE (str, default)\n"
        "            Kubernetes namespace to schedule job in" in text
    )
    assert "service_account=SERVICE_ACCOUNT (str, None)" in text
    for key in (
        "validate_spec",
        "reserved_millicpu",
        "reserved_memmb",
        "efa_device_count",
        "job_type",
        "node_selector",
        "tolerations",
        "image_pull_secrets",
        "secret_mounts",
        "labels",
        "annotations",
    ):
        assert f"[{key}={key.upper()}]" in usage
    assert KubernetesOpts is Opts


def test_pod_settings_as_run_options() -> None:
    job = dryrun(
        ddp_app(),
        node_selector={"pool": "gpu"},
        tolerations=["nvidia.com/gpu:NoSchedule", "spot=true:NoExecute", "*"],
        image_pull_secrets=["regcred"],
        secret_mounts={"wandb": "/etc/wandb"},
        labels={"team": "nlp"},
        annotations={"example.com/owner": "me"},
        efa_device_count=0,
        reserved_millicpu=0,
    )
    pod = job.resource["spec"]["tasks"][1]["template"]
    spec = pod["spec"]
    assert spec["nodeSelector"] == {
        "node.kubernetes.io/instance-type": "p4d.24xlarge",
        "pool": "gpu",
    }
    assert spec["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoExecute"},
        {"operator": "Exists"},
    ]
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert {"name": "secret-0", "secret": {"secretName": "wandb"}} in spec["volumes"]
    c = spec["containers"][0]
    assert {"name": "secret-0", "mountPath": "/etc/wandb", "readOnly": True} in c["volumeMounts"]
    assert "vpc.amazonaws.com/efa" not in c["resources"]["limits"]
    assert c["resources"]["requests"]["cpu"] == "96000m"
    assert pod["metadata"]["labels"]["team"] == "nlp"
    assert job.resource["metadata"]["labels"]["team"] == "nlp"
    assert pod["metadata"]["annotations"]["example.com/owner"] == "me"


def test_pod_overlay_per_role() -> None:
    app = ddp_app()
    set_overlay(
        app.roles[0],
        "kubernetes",
        "V1Pod",
        {
            "spec": {
                "hostIPC": True,
                JOIN("containers", on="name"): [{"name": "train-1", "stdin": True}],
            },
        },
    )
    tasks = dryrun(app).resource["spec"]["tasks"]
    assert all(t["template"]["spec"]["hostIPC"] for t in tasks)
    assert "stdin" not in tasks[0]["template"]["spec"]["containers"][0]
    assert tasks[1]["template"]["spec"]["containers"][0]["stdin"] is True
    assert tasks[1]["template"]["metadata"]["labels"]["torchx.pytorch.org/replica-id"] == "1"


def test_field_path_env_and_replica_policy() -> None:
    role = Role(
        "w",
        "img",
        entrypoint="python",
        num_replicas=2,
        max_retries=1,
        retry_policy="REPLICA",  # type: ignore[arg-type]
        env={"POD_IP": "[FIELD_PATH]status.podIP", "ID": f"r{macros.replica_id}"},
    )
    tasks = dryrun(AppDef("app", [role])).resource["spec"]["tasks"]
    env = tasks[1]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in env
    assert {"name": "ID", "value": "r1"} in env
    assert tasks[0]["policies"][0]["action"] == "RestartTask"


def test_batch_jobs_shape() -> None:
    role = Role(
        "trainer",
        "img",
        entrypoint="python",
        args=["-m", "train", "--rank", macros.replica_id, "--master", f"$${macros.rank0_env}"],
        num_replicas=3,
        max_retries=2,
        resource=Resource(cpu=2, gpu=1, memMB=4096),
    )
    ps = Role("ps", "img", entrypoint="python", num_replicas=1)
    res = dryrun(AppDef("big", [role, ps]), job_type="batch", queue="-").resource
    assert res["kind"] == "List"
    kinds = [(o["kind"], o["metadata"]["name"]) for o in res["items"]]
    job0 = kinds[0][1]
    assert kinds[0][0] == "Service" and kinds[1] == ("Job", job0)
    assert job0.endswith("-trainer")
    svc, job = res["items"][0], res["items"][1]
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"]
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 3
    # each replica retries its own pod twice; the Job fails with the first that runs out;
    # a pod Kubernetes evicted or preempted is replaced without spending a retry
    assert (spec["backoffLimitPerIndex"], spec["maxFailedIndexes"]) == (2, 0)
    assert "backoffLimit" not in spec
    assert spec["podFailurePolicy"] == {
        "rules": [
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
            # a deleted pod's replica, stopped by kubelet's SIGTERM
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [143]}},
        ]
    }
    pod = spec["template"]
    assert pod["spec"]["subdomain"] == job0
    assert "kueue.x-k8s.io/queue-name" not in pod["metadata"]["labels"]
    c = pod["spec"]["containers"][0]
    assert c["command"] == [
        *COUNT_ATTEMPTS,  # $TORCHX_ATTEMPT: the failed and the disrupted pods before this one
        "python",
        "-m",
        "train",
        "--rank",
        "$(TORCHX_REPLICA_ID)",
        "--master",
        "$TORCHX_RANK0_HOST",
    ]
    env = {e["name"]: e for e in c["env"]}
    # the FQDN kubelet writes in the rank-0 pod's /etc/hosts, in the pod's own namespace
    assert env["TORCHX_RANK0_HOST"]["value"] == (
        f"{job0}-0.{job0}.$(TORCHX_POD_NAMESPACE).svc.cluster.local"
    )
    names = [e["name"] for e in c["env"]]
    assert names.index("TORCHX_POD_NAMESPACE") < names.index("TORCHX_RANK0_HOST")
    assert env["TORCHX_POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.namespace"
    )
    assert "job-completion-index" in env["TORCHX_REPLICA_ID"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert svc["spec"]["selector"]["torchx.pytorch.org/role-index"] == "0"
    assert (
        res["items"][3]["spec"]["template"]["metadata"]["labels"]["torchx.pytorch.org/role-index"]
        == "1"
    )


def test_render_does_not_import_the_client() -> None:
    import subprocess
    import sys

    code = (
        "import sys, logging; logging.disable(logging.WARNING)\n"
        "from torchx.schedulers.kubernetes_scheduler import create_scheduler\n"
        "from torchx.specs import AppDef, Role\n"
        "s = create_scheduler('t'); s.run_opts()\n"
        "info = s.submit_dryrun(AppDef('a', [Role('r', 'i', entrypoint='e', num_replicas=3)]),"
        " {'queue': 'q'}); str(info)\n"
        "sdks = ('kubernetes', 'docker', 'yaml')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in sdks))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_dryrun_without_cluster_notes_skipped_validation(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        dryrun(ddp_app())
    assert "no cluster configured" in caplog.text and "validate_spec=True" in caplog.text


def test_validate_spec_true_needs_a_cluster() -> None:
    from torchx.schedulers._kubernetes.client import KubernetesConfigError

    with pytest.raises(
        KubernetesConfigError, match=r"no Kubernetes cluster configured.*KUBECONFIG"
    ):
        dryrun(ddp_app(), validate_spec=True)


@pytest.mark.parametrize(
    ("cfg", "app", "match"),
    [
        ({"namespace": "Bad_NS"}, None, "invalid namespace"),
        ({"job_type": "slurm"}, None, "unknown job_type"),
        ({"tolerations": ["a:Sometimes"]}, None, "invalid toleration"),
        ({"labels": {"team": "a b"}}, None, "invalid value 'a b' of label"),
        ({"secret_mounts": {"s": "rel/path"}}, None, "must be absolute"),
        ({}, AppDef("x" * 50, [Role("trainer", "i", entrypoint="e")]), "63"),
        ({"job_type": "batch"}, AppDef("x" * 50, [Role("trainer", "i", entrypoint="e")]), "63"),
    ],
)
def test_bad_input_is_one_clear_error(
    cfg: dict[str, object], app: AppDef | None, match: str
) -> None:
    with pytest.raises(SpecError, match=match):
        dryrun(app or ddp_app(), **cfg)


def test_role_retry_policy_of_several_roles_is_rejected() -> None:
    roles = [Role(n, "i", entrypoint="e", max_retries=1, retry_policy="ROLE") for n in "ab"]  # type: ignore[arg-type]
    with pytest.raises(SpecError, match=r"REPLICA or APPLICATION"):
        dryrun(AppDef("app", roles))


def test_public_helpers() -> None:
    app = ddp_app()
    resource = app_to_resource(app, "q", "sa", "high")
    assert resource["spec"]["queue"] == "q" and len(resource["spec"]["tasks"]) == 2
    pod = role_to_pod("train-0", app.roles[0], service_account="sa")
    assert type(pod).__name__ == "V1Pod"
    assert pod.spec.containers[0].name == "train-0"
    assert pod.spec.service_account_name == "sa"


def test_prefix_container_name_marks_only_extra_containers() -> None:
    from torchx.schedulers.kubernetes_scheduler import prefix_container_name

    assert prefix_container_name("trainer-0", "trainer", 0) == ""
    prefixed = prefix_container_name("sidecar", "trainer", 0)
    assert "sidecar" in prefixed and prefixed.endswith(" ")


def test_jobset_shape_retries_and_rank0() -> None:
    """job_type=jobset: a replicated Job per role; REPLICA retries per pod, the other
    policies as JobSet restarts (the largest max_retries); rank 0 by its FQDN."""
    from torchx.specs import RetryPolicy

    trainer = Role("trainer", "img", entrypoint="python", num_replicas=2, max_retries=3)
    ps = Role("ps", "img", entrypoint="python", num_replicas=1, max_retries=1,
              retry_policy=RetryPolicy.REPLICA)  # fmt: skip
    res = dryrun(AppDef("two", [trainer, ps]), job_type="jobset", queue="-").resource
    name = res["metadata"]["name"]
    assert res["kind"] == "JobSet" and res["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert (
        "suspend" not in res["spec"]
        and "kueue.x-k8s.io/queue-name" not in res["metadata"]["labels"]
    )
    # the JobSet restarts for the roles' own failures 3 times; for a pod Kubernetes
    # disrupted (its Job failed by the pod failure policy) without counting
    assert res["spec"]["failurePolicy"] == {
        "maxRestarts": 3,
        "rules": [
            {
                "name": "interrupted",
                "action": "RestartJobSetAndIgnoreMaxRestarts",
                "onJobFailureReasons": ["PodFailurePolicy"],
            }
        ],
    }
    rjobs = res["spec"]["replicatedJobs"]
    assert [(r["name"], r["replicas"]) for r in rjobs] == [("trainer", 1), ("ps", 1)]
    trainer_job, ps_job = (r["template"]["spec"] for r in rjobs)
    assert (trainer_job["completions"], trainer_job["backoffLimit"]) == (2, 0)
    rule = trainer_job["podFailurePolicy"]["rules"][0]
    assert (rule["action"], rule["onPodConditions"][0]["type"]) == ("FailJob", "DisruptionTarget")
    assert ps_job["backoffLimitPerIndex"] == 1 and "backoffLimit" not in ps_job
    assert ps_job["podFailurePolicy"]["rules"][0]["action"] == "Ignore"  # replaced in place
    env = {
        e["name"]: e.get("value") for e in trainer_job["template"]["spec"]["containers"][0]["env"]
    }
    assert env["TORCHX_RANK0_HOST"] == (
        f"{name}-trainer-0-0.{name}.$(TORCHX_POD_NAMESPACE).svc.cluster.local"
    )


def test_a_kueue_queue_suspends_and_names_the_workload_priority() -> None:
    app = AppDef("q", [Role("r", "img", entrypoint="python")])
    for job_type in ("batch", "jobset"):
        res = dryrun(app, job_type=job_type, queue="team", priority_class="high").resource
        objects = res["items"] if job_type == "batch" else [res]
        job = objects[-1]
        assert job["spec"]["suspend"] is True, "created the way Kueue admits it"
        labels = job["metadata"]["labels"]
        assert labels["kueue.x-k8s.io/queue-name"] == "team"
        assert labels["kueue.x-k8s.io/priority-class"] == "high"
        pod = (
            job["spec"]["template"]
            if job_type == "batch"
            else (job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"])
        )
        assert "priorityClassName" not in pod["spec"], "Kueue's priority, not the pods'"
    plain = dryrun(app, job_type="batch", queue="-", priority_class="high").resource
    assert plain["items"][-1]["spec"]["template"]["spec"]["priorityClassName"] == "high"


def test_a_queue_is_needed_only_by_volcano() -> None:
    """Without Volcano a new user ran into `Required run option: queue` and had to know
    to pass `queue=-`: batch and jobset need none (`-` still means none)."""
    from torchx.schedulers.kubernetes_scheduler import create_scheduler as make
    from torchx.specs import AppDef, Role

    app = AppDef("a", [Role("r", image="img", entrypoint="true")])
    scheduler = make("torchx")
    for job_type in ("batch", "jobset"):
        for cfg in ({"job_type": job_type}, {"job_type": job_type, "queue": "-"}):
            assert scheduler.submit_dryrun(app, cfg).request is not None
    with pytest.raises(ValueError, match="needs a Volcano queue: -cfg queue=NAME"):
        scheduler.submit_dryrun(app, {})
