"""The MLflow tracker under faults: the tracking server restarts while a tracked job runs
and writes. The job must not fail; what it wrote while the server was away is kept and
written once the server is back (by the launcher's detached finisher, which waits for the
server), together with the run's final status."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mlflow import MlflowClient
from torchx_testsupport.faults import record_fault, restart_in_background

pytestmark = pytest.mark.faults

BIN = Path(sys.executable).parent
JOB = """\
import os, time
from torchx.tracker import app_run_from_env

run = app_run_from_env()
run.add_metadata(phase="before")
open("written-before", "w").close()
while not os.path.exists("go"):
    time.sleep(0.1)
run.add_metadata(during="server away")
print("job done")
"""


def _answers(uri: str) -> bool:
    parts = urlsplit(uri)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=1):
            return True
    except OSError:
        return False


def _until(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_tracked_job_rides_through_an_mlflow_restart(mlflow_uri: str, tmp_path: Path) -> None:
    experiment = f"faults-{os.getpid()}-{tmp_path.name}"
    (tmp_path / "job.py").write_text(JOB)
    (tmp_path / ".torchxconfig").write_text(
        "[torchx:tracker]\nmlflow =\n\n"
        f"[tracker:mlflow]\nconfig = {mlflow_uri}\nexperiment_name = {experiment}\n"
    )
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "TORCHX_RETRY_S": "1",  # the job keeps its write at once rather than waiting
    }
    launcher = subprocess.Popen(
        [str(BIN / "torchx"), "run", "-s", "local_cwd", "--wait", "--log", "utils.python",
         "--script", "job.py"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _until((tmp_path / "written-before").exists, 60, "the job never wrote its first tag")
        restarting = restart_in_background("mlflow", down_s=8)
        _until(lambda: not _answers(mlflow_uri), 30, "the MLflow server did not stop")
    finally:
        (tmp_path / "go").touch()  # the job writes (while the server is away), then ends
    out, err = launcher.communicate(timeout=120)
    restarting.join()
    assert launcher.returncode == 0, (out, err)  # the job did not fail
    assert "kept `add_metadata`" in err, err
    handle = next(line for line in out.splitlines() if line.startswith("local_cwd://"))

    client = MlflowClient(mlflow_uri)

    def recorded() -> bool:
        found = client.get_experiment_by_name(experiment)
        runs = client.search_runs([found.experiment_id]) if found else []
        return bool(runs) and runs[0].info.status == "FINISHED"

    _until(recorded, 120, "the run's end was never recorded")
    (run,) = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    tags = run.data.tags
    kept = [key for key in ("phase", "during") if key in tags]
    survived = run.info.run_name == handle and kept == ["phase", "during"]
    record_fault(
        "mlflow tracker", "MLflow server restart while a tracked job writes",
        survived=survived, lost=2 - len(kept), repeated=0,
        outcome="job SUCCEEDED; kept write replayed; run FINISHED" if survived else str(tags),
    )  # fmt: skip
    assert survived, (run.info.run_name, handle, tags)
    assert tags["during"] == "server away" and tags["torchx.app_state"] == "SUCCEEDED"
