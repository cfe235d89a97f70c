"""`torchx` with `-s kubernetes` against the real cluster of tools/k8s-up.sh: the commands a
user types, the apps' real output, each bad input answered by one line naming the fix,
with no traceback and nothing created. Each test has a namespace of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import one_error_line
from torchx_testsupport.k8s.cluster import (
    IMAGE,
    LIMITED,
    admin_kubeconfig_copy,
    create_torchx_jobs,
    exec_in_app_pod,
    free_port,
)
from torchx_testsupport.k8s.proxy import KubernetesFaultProxy

pytestmark = pytest.mark.timeout(300)
TORCHX = str(Path(sys.executable).parent / "torchx")
ECHO = ["utils.echo", "--image", IMAGE, "--msg", "hi"]


def cli(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``torchx ARGS`` as a user runs it (KUBECONFIG: the admin's, from the namespace
    fixture, unless ``env`` says otherwise)."""
    full_env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    full_env.update(env or {})
    return subprocess.run(
        [TORCHX, *args], cwd=tmp_path, capture_output=True, text=True, timeout=180,
        env=full_env, check=False,
    )  # fmt: skip


def handle_of(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 0, run.stderr
    return run.stdout.strip().splitlines()[-1]


def status_until(tmp_path: Path, handle: str, word: str, seconds: float = 120) -> str:
    """`torchx status` until its output has ``word`` (the app moves on its own)."""
    deadline = time.monotonic() + seconds
    while True:
        out = cli(tmp_path, "status", handle).stdout
        if word in out:
            return out
        assert time.monotonic() < deadline, f"no {word!r} in: {out}"
        time.sleep(0.5)


def test_run_status_log_cancel_delete(namespace: str, tmp_path: Path, kube: Any) -> None:
    cfg = f"queue=-,job_type=batch,namespace={namespace}"
    script = "echo hi; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo bye"
    handle = handle_of(cli(tmp_path, "run", "-s", "kubernetes", "-cfg", cfg, "--workspace", "",
                           "utils.sh", "--image", IMAGE, "sh", "-c", script))  # fmt: skip
    assert handle.startswith(f"kubernetes://torchx/{namespace}:batch:sh-")
    status_until(tmp_path, handle, "RUNNING")
    follow = subprocess.Popen(
        [TORCHX, "log", "--tail", f"{handle}/sh/0"], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert follow.stdout is not None
    assert follow.stdout.readline().endswith(" hi\n")  # the pod still runs
    app_id = handle.rpartition("/")[2]
    exec_in_app_pod(namespace, app_id, "touch /tmp/go")
    out, err = follow.communicate(timeout=120)
    assert follow.returncode == 0, err
    assert out.endswith(" bye\n"), out  # followed to the end of the pod
    assert "SUCCEEDED" in status_until(tmp_path, handle, "SUCCEEDED")

    listed = cli(tmp_path, "list", "-s", "kubernetes")  # the kubeconfig's namespace: default
    assert app_id not in listed.stdout
    in_namespace = admin_kubeconfig_copy(tmp_path / "ns", namespace=namespace)
    listed = cli(tmp_path, "list", "-s", "kubernetes", "--json", env={"KUBECONFIG": in_namespace})
    assert [row["app_handle"] for row in json.loads(listed.stdout)] == [handle]

    assert cli(tmp_path, "cancel", handle).returncode == 0  # finished: nothing to stop
    assert cli(tmp_path, "delete", handle).returncode == 0
    assert kube.batch.list_namespaced_job(namespace).items == []
    assert kube.core.list_namespaced_service(namespace).items == []
    gone = cli(tmp_path, "status", handle)
    assert f"app '{handle}' not found" in one_error_line(gone)


def test_pending_and_cancel_from_the_cli(namespace: str, tmp_path: Path, kube: Any) -> None:
    """Two pods that cannot fit: `status` gives the real scheduler's reason; `cancel`
    suspends the Jobs (pods go, objects stay); `delete` removes the Services and Jobs."""
    cfg = f"queue=-,job_type=batch,namespace={namespace}"
    handle = handle_of(cli(tmp_path, "run", "-s", "kubernetes", "-cfg", cfg, "--workspace", "",
                           "utils.sh", "--image", IMAGE, "--num_replicas", "2", "--cpu", "64",
                           "true"))  # fmt: skip
    out = status_until(tmp_path, handle, "Insufficient cpu")
    assert "PENDING" in out and "Unschedulable" in out, out
    assert len(kube.core.list_namespaced_pod(namespace).items) == 2
    assert len(kube.core.list_namespaced_service(namespace).items) == 1
    assert cli(tmp_path, "cancel", handle).returncode == 0
    status_until(tmp_path, handle, "CANCELLED")
    assert cli(tmp_path, "delete", handle).returncode == 0
    assert kube.batch.list_namespaced_job(namespace).items == []
    assert kube.core.list_namespaced_service(namespace).items == []


def test_dryrun_without_a_cluster(tmp_path: Path) -> None:
    proc = cli(tmp_path, "run", "--dryrun", "-s", "kubernetes", "-cfg", "queue=default",
               "--workspace", "", *ECHO, env={"KUBECONFIG": str(tmp_path / "none")})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "kind: Job" in proc.stdout and "schedulerName: volcano" in proc.stdout
    notes = [line for line in proc.stderr.splitlines() if "validate_spec" in line]
    assert len(notes) == 1 and "no cluster configured" in notes[0]


@pytest.mark.parametrize(
    ("cfg", "extra", "expected"),
    [
        ("namespace=default", [], "queue"),
        ("queue=default,namespace=Not_Valid", [], "namespace"),
        ("queue=default", ["--name", "x" * 60], "allows 63. Shorten the app name"),
        ("queue=default,validate_spec=True", [], "KUBECONFIG"),
    ],
    ids=["no-queue", "bad-namespace", "long-name", "no-kubeconfig"],
)
def test_bad_input_without_cluster(
    tmp_path: Path, cfg: str, extra: list[str], expected: str
) -> None:
    proc = cli(tmp_path, "run", "-s", "kubernetes", "-cfg", cfg, "--workspace", "",
               "dist.ddp", "-j", "1x1", *extra, "--script", "train.py",
               env={"KUBECONFIG": str(tmp_path / "none")})  # fmt: skip
    assert expected in one_error_line(proc)


def test_api_refusals_are_one_line_and_create_nothing(
    namespace: str, tmp_path: Path, kube: Any
) -> None:
    run = ["run", "-s", "kubernetes", "-cfg"]

    def jobs_in_default() -> set[str]:  # a namespace others use too: compare before/after
        return {j.metadata.name for j in kube.batch.list_namespaced_job("default").items}

    before = jobs_in_default()
    line = one_error_line(cli(tmp_path, *run, "queue=-,job_type=batch,namespace=prod",
                              "--workspace", "", *ECHO))  # fmt: skip
    assert "namespace 'prod' does not exist" in line and "kubectl create namespace" in line
    # the limited user may only read jobs, pods and logs in `default`
    limited = {"KUBECONFIG": str(LIMITED)}
    line = one_error_line(cli(tmp_path, *run, "queue=-,job_type=batch,namespace=default",
                              "--workspace", "", *ECHO, env=limited))  # fmt: skip
    assert "forbidden" in line and "RBAC" in line
    line = one_error_line(
        cli(tmp_path, *run, f"queue=-,job_type=batch,namespace={namespace}", "--workspace", "",
            *ECHO, env={"TORCHX_KUBE_CONTEXT": "prod"}),
        alone=False,  # after the warning that the server-side check of the spec was skipped
    )  # fmt: skip
    assert "context 'prod'" in line and "kubectl config use-context" in line
    assert kube.batch.list_namespaced_job(namespace).items == []
    assert jobs_in_default() <= before, "a refused run created a job"
    missing = one_error_line(cli(tmp_path, "log", f"kubernetes://torchx/{namespace}:gone-1/echo/0"))
    assert "gone-1" in missing


@pytest.mark.parametrize("job_type", ["volcano", "batch", "jobset"])
def test_job_id_inside_the_pods_is_the_handle(
    namespace: str, tmp_path: Path, kube: Any, job_type: str
) -> None:
    """The MLflow tracker names runs by $TORCHX_JOB_ID: it must be what `status` takes
    (read back from the stored object's pod template: Volcano has no controller here)."""
    queue = "default" if job_type == "volcano" else "-"
    cfg = f"queue={queue},job_type={job_type},namespace={namespace}"
    handle = handle_of(cli(tmp_path, "run", "-s", "kubernetes", "-cfg", cfg, "--workspace", "",
                           *ECHO))  # fmt: skip
    if job_type == "batch":
        (job,) = kube.batch.list_namespaced_job(namespace).items
        container = job.spec.template.spec.containers[0]
        env = {e.name: e.value for e in container.env}
    elif job_type == "jobset":
        (jobset,) = kube.custom.list_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets"
        )["items"]
        pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    else:
        (vcjob,) = kube.custom.list_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", namespace, "jobs"
        )["items"]
        container = vcjob["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["TORCHX_JOB_ID"] == handle
    assert cli(tmp_path, "status", env["TORCHX_JOB_ID"]).returncode == 0


def test_config_problems_are_one_line_without_noise(tmp_path: Path) -> None:
    """A malformed kubeconfig names the file; no kubeconfig, or an API server that is down,
    gives the one error line without urllib3's retry warnings or a validate_spec warning."""
    bad = tmp_path / "bad-kubeconfig"
    bad.write_text("apiVersion: v1\nclusters: [\n  - a: b\n")
    # the real cluster's, at a port nobody serves
    admin_kubeconfig_copy(tmp_path / "down-kubeconfig", server=f"https://127.0.0.1:{free_port()}")
    run = ("run", "-s", "kubernetes", "-cfg", "queue=default", "--workspace", "", *ECHO)
    cases = {
        str(bad): f"cannot read the kubeconfig {bad}",
        str(tmp_path / "missing"): "no Kubernetes cluster configured",
        str(tmp_path / "down-kubeconfig"): "cannot reach the Kubernetes API server",
    }
    for kubeconfig, expected in cases.items():
        for args in (run, ("status", "kubernetes://torchx/default:echo-abc")):
            proc = cli(tmp_path, *args, env={"KUBECONFIG": kubeconfig})
            assert expected in one_error_line(proc), (args, proc.stderr)


def test_list_json_streams_page_by_page(namespace: str, tmp_path: Path) -> None:
    """`torchx list --json` prints each page's apps as it arrives: the first apps are out
    while the API server (behind the fault proxy) still holds the second page back."""
    create_torchx_jobs(namespace, volcano=700)  # two pages of Volcano jobs
    proxy = KubernetesFaultProxy().start()
    try:
        kubeconfig = proxy.write_kubeconfig(str(tmp_path / "proxy"), namespace=namespace)
        proxy.inject("slow", on=r"GET /apis/batch\.volcano\.sh/.*continue=", delay_s=10)
        proc = subprocess.Popen(
            [TORCHX, "list", "-s", "kubernetes", "--json"], cwd=tmp_path,
            env={**os.environ, "KUBECONFIG": kubeconfig},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert proc.stdout is not None
        opening, first_line = proc.stdout.readline(), proc.stdout.readline()
        still_listing = proc.poll() is None  # the second page is held back for 10 s
        rest = proc.stdout.read()
        proc.wait(timeout=120)
    finally:
        proxy.stop()
    assert still_listing, "the first app came out only after the whole listing"
    first = json.loads(first_line.rstrip(",\n"))
    assert first["state"] == "SUBMITTED" and first["app_handle"].startswith("kubernetes://")
    apps = json.loads(opening + first_line + rest)  # one JSON document all the same
    assert len(apps) == 700 and proc.returncode == 0
