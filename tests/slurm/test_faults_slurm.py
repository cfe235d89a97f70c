"""Slurm under faults: slurmctld restarts while `torchx run --wait` waits on a job and while
`torchx log -f` follows one. The job keeps running on its slurmd (the controller saves its
state), and torchx must reach the job's real end with no log line lost or repeated."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from torchx_testsupport.faults import (
    TORCHX,
    follow_through_restart,
    numbered_script,
    record_fault,
    restart_in_background,
)

pytestmark = pytest.mark.faults

LINES, DELAY_S = 80, 0.5  # 40 s of output: the outage (about 20 s) falls inside it


def _job(workdir: Path, script: str) -> list[str]:
    """``utils.sh`` running ``script`` (written to a file: the component quotes each arg)."""
    path = workdir / "job.sh"
    path.write_text(script + "\n")
    return ["utils.sh", "--memMB", "256", "bash", str(path)]


def _submit(workdir: Path, script: str) -> str:
    proc = subprocess.run(
        [TORCHX, "run", "-s", "slurm", *_job(workdir, script)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def _wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"the job never started ({path} missing)"
        time.sleep(0.2)


def test_run_wait_rides_through_a_slurmctld_restart(slurm_cluster: None, workdir: Path) -> None:
    started = workdir / "started"
    script = f"touch {started}; {numbered_script(LINES, DELAY_S)}; exit 3"
    waiter = subprocess.Popen(
        [TORCHX, "run", "-s", "slurm", "--wait", *_job(workdir, script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _wait_for(started)
    restarting = restart_in_background("slurmctld", down_s=15)
    out, err = waiter.communicate(timeout=180)
    restarting.join()
    assert not restarting.errors, restarting.errors  # type: ignore[attr-defined]
    # the job's own end (exit 3: FAILED), not an error of the outage
    survived = waiter.returncode != 0 and "finished FAILED" in err and "Traceback" not in err
    record_fault(
        "slurm", "slurmctld restart during `run --wait`", survived=survived,
        outcome="FAILED (the job's exit 3)" if survived else err.strip()[-200:],
    )  # fmt: skip
    assert survived, (out, err)


def test_log_follow_rides_through_a_slurmctld_restart(slurm_cluster: None, workdir: Path) -> None:
    started = workdir / "started"
    handle = _submit(workdir, f"touch {started}; {numbered_script(LINES, DELAY_S)}")
    _wait_for(started)
    # some lines come before the controller goes away; it stays away longer than Slurm's
    # own clients wait for it (about 9 s)
    followed = follow_through_restart(f"{handle}/sh/0", "slurmctld", LINES, down_s=15)
    followed.record("slurm", "slurmctld restart during `log --tail`")
    assert followed.survived, followed.why()
