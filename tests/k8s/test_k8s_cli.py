"""`torchx` with `-s kubernetes` against the Kubernetes API stand-in on localhost
(tools/testsupport/torchx_testsupport/k8s/): the commands a user types, each bad input
answered by one line naming the fix, with no traceback and nothing created."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx_testsupport import one_error_line
from torchx_testsupport.k8s import FakeKubernetes

TORCHX = str(Path(sys.executable).parent / "torchx")
ECHO = ["utils.echo", "--image", "busybox", "--msg", "hi"]


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeKubernetes]:
    server = FakeKubernetes().start()
    server.write_kubeconfig(str(tmp_path / "kubeconfig"))
    yield server
    server.stop()


def cli_env(tmp_path: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The test's environment (TORCHX_HOME from tests/conftest.py) with the fake's kubeconfig."""
    full_env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    full_env.update(KUBECONFIG=str(tmp_path / "kubeconfig"))
    full_env.update(env or {})
    return full_env


def cli(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TORCHX, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=cli_env(tmp_path, env), check=False,
    )  # fmt: skip


def test_run_status_log_cancel_delete(fake: FakeKubernetes, tmp_path: Path) -> None:
    run = cli(
        tmp_path, "run", "-s", "kubernetes", "-cfg", "queue=default", "--workspace", "", *ECHO
    )
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[-1]
    assert handle.startswith("kubernetes://torchx/default:echo-")
    (pod,) = fake.pod_names()
    fake.set_pod(
        "default", pod, "Pending", unschedulable="0/2 nodes are available: 2 Too many pods."
    )
    status = cli(tmp_path, "status", handle)
    assert "PENDING" in status.stdout and "0/2 nodes are available" in status.stdout

    fake.set_pod("default", pod, "Running")
    fake.log("default", pod, "hi\n")
    follow = subprocess.Popen(
        [TORCHX, "log", "--tail", f"{handle}/echo/0"], cwd=tmp_path, env=cli_env(tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # the pod ends only once its log is being followed
    assert fake.wait_for_request(lambda m, path: m == "GET" and path.endswith(f"/{pod}/log"))
    fake.set_pod("default", pod, "Succeeded")
    out, err = follow.communicate(timeout=120)
    assert follow.returncode == 0, err
    assert " hi\n" in out, out

    listed = cli(tmp_path, "list", "-s", "kubernetes")
    assert handle.rpartition("/")[2] in listed.stdout

    assert cli(tmp_path, "cancel", handle).returncode == 0
    assert cli(tmp_path, "delete", handle).returncode == 0
    assert fake.store["vcjobs"] == {}
    gone = cli(tmp_path, "status", handle)
    assert f"app '{handle}' not found" in one_error_line(gone)


def test_plain_jobs_from_the_cli(fake: FakeKubernetes, tmp_path: Path) -> None:
    run = cli(tmp_path, "run", "-s", "kubernetes", "-cfg", "queue=-,job_type=batch",
              "--workspace", "", "dist.ddp", "-j", "2x1", "--script", "train.py")  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[-1]
    assert ":batch:" in handle
    assert len(fake.pod_names()) == 2 and len(fake.store["services"]) == 1
    assert cli(tmp_path, "cancel", handle).returncode == 0
    assert "CANCELLED" in cli(tmp_path, "status", handle).stdout
    assert cli(tmp_path, "delete", handle).returncode == 0
    assert all(not objects for objects in fake.store.values())


def test_dryrun_without_a_cluster(tmp_path: Path) -> None:
    proc = cli(tmp_path, "run", "--dryrun", "-s", "kubernetes", "-cfg", "queue=default",
               "--workspace", "", *ECHO)  # fmt: skip
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
               "dist.ddp", "-j", "1x1", *extra, "--script", "train.py")  # fmt: skip
    assert expected in one_error_line(proc)


def test_api_refusals_are_one_line_and_create_nothing(fake: FakeKubernetes, tmp_path: Path) -> None:
    base = ["run", "-s", "kubernetes", "--workspace", "", *ECHO]
    line = one_error_line(
        cli(tmp_path, *base[:3], "-cfg", "queue=default,namespace=prod", *base[3:])
    )
    assert "namespace 'prod' does not exist" in line and "kubectl create namespace" in line
    line = one_error_line(cli(tmp_path, *base[:3], "-cfg", "queue=nope,validate_spec=False",
                              *base[3:]))  # fmt: skip
    assert "unable to find job queue" in line
    fake.forbid("create", "jobs.batch.volcano.sh")
    line = one_error_line(cli(tmp_path, *base[:3], "-cfg", "queue=default", *base[3:]))
    assert "forbidden" in line and "RBAC" in line
    line = one_error_line(
        cli(
            tmp_path,
            *base[:3],
            "-cfg",
            "queue=default",
            *base[3:],
            env={"TORCHX_KUBE_CONTEXT": "prod"},
        ),
        alone=False,  # after the warning that the server-side check of the spec was skipped
    )
    assert "context 'prod'" in line and "kubectl config use-context" in line
    assert all(not objects for objects in fake.store.values())
    missing = one_error_line(cli(tmp_path, "log", "kubernetes://torchx/default:gone-1/echo/0"))
    assert "gone-1" in missing


@pytest.mark.parametrize("job_type", ["volcano", "batch"])
def test_job_id_inside_the_pods_is_the_handle(
    fake: FakeKubernetes, tmp_path: Path, job_type: str
) -> None:
    """The MLflow tracker names runs by $TORCHX_JOB_ID: it must be what `status` takes."""
    run = cli(
        tmp_path, "run", "-s", "kubernetes", "-cfg", f"queue=default,job_type={job_type}",
        "--workspace", "", *ECHO,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[-1]
    (pod,) = fake.pods()
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["TORCHX_JOB_ID"] == handle
    assert cli(tmp_path, "status", env["TORCHX_JOB_ID"]).returncode == 0


def test_config_problems_are_one_line_without_noise(tmp_path: Path) -> None:
    """A malformed kubeconfig names the file; no kubeconfig, or an API server that is down,
    gives the one error line without urllib3's retry warnings or a validate_spec warning."""
    from torchx_testsupport.k8s import FakeKubernetes

    bad = tmp_path / "bad-kubeconfig"
    bad.write_text("apiVersion: v1\nclusters: [\n  - a: b\n")
    gone = FakeKubernetes().start()
    gone.write_kubeconfig(str(tmp_path / "down-kubeconfig"))
    gone.stop()  # nothing listens there any more
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


def test_list_json_streams_page_by_page(
    fake: FakeKubernetes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`torchx list --json` prints each page's apps as it arrives: the first apps are out
    while the API server still holds the second page back."""
    from torchx_testsupport.k8s import fill_torchx_jobs

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    fill_torchx_jobs(fake, 1400)  # 700 Volcano jobs: two pages
    fake.inject("slow", on=r"GET /apis/batch\.volcano\.sh/.*continue=", delay_s=10)
    proc = subprocess.Popen(
        [TORCHX, "list", "-s", "kubernetes", "--json"], cwd=tmp_path, env=cli_env(tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    opening, first_line = proc.stdout.readline(), proc.stdout.readline()
    still_listing = proc.poll() is None  # the second page is held back for 10 s
    rest = proc.stdout.read()
    proc.wait(timeout=120)
    assert still_listing, "the first app came out only after the whole listing"
    first = json.loads(first_line.rstrip(",\n"))
    assert first["state"] == "PENDING" and first["app_handle"].startswith("kubernetes://")
    apps = json.loads(opening + first_line + rest)  # one JSON document all the same
    assert len(apps) == 1400 and proc.returncode == 0
