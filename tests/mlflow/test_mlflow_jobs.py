"""Real jobs (`torchx run -s local_cwd`) tracked in a real MLflow server, read back with
MLflow's own client and with `torchx tracker`.

The tracker is configured the TorchX way: `[torchx:tracker]` and `[tracker:mlflow]` in the
project's .torchxconfig; each test records into its own experiment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient
from torchx_testsupport import one_error_line

BIN = Path(sys.executable).parent
TORCHX = str(BIN / "torchx")

JOB = """\
import os, sys
from torchx.tracker import app_run_from_env

run = app_run_from_env()
mode = sys.argv[1]
run.add_metadata(**{f"pid_{os.getpid()}": mode})
if mode == "train":
    run.add_metadata(lr=0.1)
    with open(f"model-{os.getpid()}.txt", "w") as f:
        f.write("weights")
    run.add_artifact("model", f.name, {"epoch": 3})
elif mode == "missing-artifact":
    run.add_artifact("model", "/no/such/model.pt")
print("job done", run.job_id())
if mode == "fail":
    sys.exit(3)
if mode == "fail-once" and os.environ["TORCHX_ATTEMPT"] == "0":
    sys.exit(3)
"""


class Project:
    """A directory with the job script and a .torchxconfig that turns the tracker on."""

    def __init__(self, root: Path, uri: str, experiment: str) -> None:
        self.root = root
        self.uri = uri
        self.experiment = experiment
        (root / "job.py").write_text(JOB)
        self.configure(f"config = {uri}")

    def configure(self, tracker_section: str) -> None:
        (self.root / ".torchxconfig").write_text(
            "[torchx:tracker]\nmlflow =\n\n"
            f"[tracker:mlflow]\n{tracker_section}\nexperiment_name = {self.experiment}\n"
        )

    def torchx(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **(env or {})}
        return subprocess.run(
            [TORCHX, *args],
            cwd=self.root,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )

    def run_job(self, *job_args: str, replicas: int = 1, run_args: tuple[str, ...] = ()) -> str:
        """Runs job.py to completion; returns its app handle (= the tracker's run id)."""
        proc = self.torchx(
            "run", "-s", "local_cwd", "--wait", "--log", *run_args,
            "utils.python", "--num_replicas", str(replicas), "--script", "job.py", "--", *job_args,
        )  # fmt: skip
        assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
        handle = next(line for line in proc.stdout.splitlines() if line.startswith("local_cwd://"))
        assert (
            proc.stderr.count("job done") == replicas or proc.stdout.count("job done") == replicas
        )
        return handle

    def runs(self) -> dict[str, object]:
        """MLflow's own view: run name -> Run, for every run of the experiment."""
        client = MlflowClient(self.uri)
        experiment = client.get_experiment_by_name(self.experiment)
        assert experiment is not None, f"experiment {self.experiment} was not created"
        runs = client.search_runs([experiment.experiment_id])
        names = [r.info.run_name for r in runs]
        assert len(names) == len(set(names)), f"duplicate runs: {names}"
        return {r.info.run_name: r for r in runs}


@pytest.fixture
def project(tmp_path: Path, mlflow_uri: str, request: pytest.FixtureRequest) -> Project:
    root = tmp_path / "project"
    root.mkdir()
    return Project(root, mlflow_uri, f"{request.node.name}-{os.getpid()}-{tmp_path.name}")


def _table(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines()[2:]]


def test_job_records_metadata_and_artifact(project: Project, tmp_path: Path) -> None:
    handle = project.run_job("train")
    runs = project.runs()
    assert list(runs) == [handle]
    run = runs[handle]
    assert run.data.tags["lr"] == "0.1"  # type: ignore[attr-defined]
    client = MlflowClient(project.uri)
    local = client.download_artifacts(run.info.run_id, "model", str(tmp_path / "dl"))  # type: ignore[attr-defined]
    (model,) = Path(local).iterdir()
    assert model.read_text() == "weights"
    assert run.data.tags["torchx.artifact.metadata.model.epoch"] == "3"  # type: ignore[attr-defined]

    jobs = project.torchx("tracker", "list", "jobs")
    assert jobs.returncode == 0, jobs.stderr
    assert _table(jobs.stdout) == [[handle]]
    metadata = project.torchx("tracker", "list", "metadata", handle)
    assert metadata.stdout.split()[:2] == ["KEY", "VALUE"]
    assert ["lr", "0.1"] in _table(metadata.stdout)
    artifacts = project.torchx("tracker", "list", "artifacts", handle)
    ((name, path, meta),) = [line.split(maxsplit=2) for line in artifacts.stdout.splitlines()[2:]]
    assert (name, meta) == ("model", "{'epoch': '3'}")
    assert path.endswith(f"/model/{model.name}")


def test_two_replicas_share_one_run(project: Project) -> None:
    handle = project.run_job("replica", replicas=2)
    runs = project.runs()
    assert list(runs) == [handle]
    pids = [k for k, v in runs[handle].data.tags.items() if k.startswith("pid_")]  # type: ignore[attr-defined]
    assert len(pids) == 2


def test_child_job_links_to_parent(project: Project) -> None:
    parent = project.run_job("train")
    child = project.run_job("eval", run_args=("--parent_run_id", parent))
    runs = project.runs()
    assert set(runs) == {parent, child}
    # MLflow nests the child under the parent run
    parent_id = runs[parent].info.run_id  # type: ignore[attr-defined]
    assert runs[child].data.tags["mlflow.parentRunId"] == parent_id  # type: ignore[attr-defined]

    children = project.torchx("tracker", "list", "jobs", "--parent-run-id", parent)
    assert children.returncode == 0, children.stderr
    assert _table(children.stdout) == [[child]]

    from torchx.tracker.mlflow import MLflowTracker

    tracker = MLflowTracker(project.experiment, project.uri)
    assert [(s.source_run_id, s.artifact_name) for s in tracker.sources(child)] == [(parent, None)]
    assert tracker.lineage(parent).descendants == [child]


def test_bad_input_is_one_line_and_loses_no_run(project: Project) -> None:
    recorded = project.run_job("train")

    unknown = project.torchx("tracker", "list", "jobs", env={"TORCHX_TRACKERS": "mlfow"})
    assert "tracker `mlfow` is neither a `torchx.tracker` entry point" in one_error_line(unknown)

    project.configure("config = /no/such/dir")
    malformed = project.torchx("tracker", "list", "jobs")
    assert "MLflow tracker config '/no/such/dir' is neither" in one_error_line(malformed)

    project.configure("config = http://127.0.0.1:9")
    down = project.torchx("tracker", "list", "jobs")
    assert "cannot reach the MLflow tracking server at http://127.0.0.1:9" in one_error_line(down)
    # a job whose tracker server is down does not fail: its writes are kept (issue 24),
    # and it says so in one warning per write, naming the server
    proc = project.torchx(
        "run", "-s", "local_cwd", "--wait", "--log",
        "utils.python", "--script", "job.py", "--", "train",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "cannot reach the MLflow tracking server at http://127.0.0.1:9" in proc.stderr
    assert "kept `add_metadata` of run" in proc.stderr and "Traceback" not in proc.stderr

    project.configure(f"config = {project.uri}")
    proc = project.torchx(
        "run", "-s", "local_cwd", "--wait", "--log",
        "utils.python", "--script", "job.py", "--", "missing-artifact",
    )  # fmt: skip
    assert proc.returncode != 0
    assert "artifact 'model': /no/such/model.pt does not exist" in proc.stdout + proc.stderr

    runs = project.runs()
    assert recorded in runs and runs[recorded].data.tags["lr"] == "0.1"  # type: ignore[attr-defined]
    failed = next(name for name in runs if name != recorded)
    assert "torchx.artifact_path.model" not in runs[failed].data.tags  # type: ignore[attr-defined]
    assert [t for t in runs[failed].data.tags if t.startswith("pid_")]  # type: ignore[attr-defined]


def test_unknown_tracker_name_does_not_stop_the_job(project: Project) -> None:
    proc = project.torchx(
        "run", "-s", "local_cwd", "--wait", "--log",
        "utils.python", "--script", "job.py", "--", "plain",
        env={"TORCHX_TRACKERS": "mlfow"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    output = proc.stdout + proc.stderr
    warnings = [line for line in output.splitlines() if "`mlfow`" in line]
    assert len(warnings) == 2, output
    assert "not installed" in warnings[0] and "did you mean `mlflow`?" in warnings[0]  # launcher
    assert "it is skipped" in warnings[1]  # and the job itself
    assert "job done" in output


def test_runs_end_with_the_apps_final_state(project: Project) -> None:
    """The run gets an end time and the app's final state once the launcher sees it."""
    ok = project.run_job("train")
    proc = project.torchx(
        "run", "-s", "local_cwd", "--wait", "utils.python", "--script", "job.py", "--", "fail",
    )  # fmt: skip
    assert proc.returncode != 0
    failed = next(line for line in proc.stdout.splitlines() if line.startswith("local_cwd://"))
    # a detached helper ends the runs (the CLI neither waits for MLflow nor imports it)
    deadline = time.monotonic() + 60
    while True:
        runs = project.runs()
        ended = [runs[h].info.end_time for h in (ok, failed)]  # type: ignore[attr-defined]
        if all(ended) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert runs[ok].info.status == "FINISHED" and runs[ok].info.end_time  # type: ignore[attr-defined]
    assert runs[failed].info.status == "FAILED" and runs[failed].info.end_time  # type: ignore[attr-defined]
    assert runs[failed].data.tags["torchx.app_state"] == "FAILED"  # type: ignore[attr-defined]
    metadata = project.torchx("tracker", "list", "metadata", failed)
    assert ["torchx.app_state", "FAILED"] in _table(metadata.stdout)


def test_a_retried_job_continues_the_run_named_by_its_key(project: Project) -> None:
    """Both attempts write to one run, named by the idempotency key ($TORCHX_RUN_ID); the
    run ends with the app, found through the job's handle it records."""
    proc = project.torchx(
        "run", "-s", "local_cwd", "--wait", "--idempotency-key", "exp-7/trial-3",
        "utils.sh", "--max_retries", "1", "python", "job.py", "fail-once",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    handle = next(line for line in proc.stdout.splitlines() if line.startswith("local_cwd://"))
    deadline = time.monotonic() + 60
    while True:
        runs = project.runs()
        if runs.get("exp-7/trial-3") and runs["exp-7/trial-3"].info.end_time:  # type: ignore[attr-defined]
            break
        assert time.monotonic() < deadline, runs
        time.sleep(0.2)
    assert list(runs) == ["exp-7/trial-3"]  # one run for both attempts
    run = runs["exp-7/trial-3"]
    tags = run.data.tags  # type: ignore[attr-defined]
    assert len([k for k in tags if k.startswith("pid_")]) == 2  # each attempt wrote to it
    assert tags["torchx.job_id"] == handle
    assert (run.info.status, tags["torchx.app_state"]) == ("FINISHED", "SUCCEEDED")  # type: ignore[attr-defined]
