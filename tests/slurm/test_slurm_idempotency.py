"""Exactly-once submission on the real Slurm cluster: ``--idempotency-key`` finds the job
by the key's mark in its comment (``squeue``; ``sacct`` once it left the queue)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from torchx_testsupport import terminal_status
from torchx_testsupport.processes import concurrent_handles

from torchx.specs import AppState

TORCHX = str(Path(sys.executable).parent / "torchx")


# the backend outlives the test: a key of this run only
KEY_SLURM_K1 = f"slurm-k1-{uuid.uuid4().hex[:8]}"
KEY_SLURM_CUT = f"slurm-cut-{uuid.uuid4().hex[:8]}"
KEY_SLURM_TOGETHER = f"slurm-together-{uuid.uuid4().hex[:8]}"


def _run(key: str, *component: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [TORCHX, "run", "--idempotency-key", key, "-s", "slurm", *component],
        env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def _jobs_with_key(key: str) -> list[str]:
    from torchx.schedulers.ids import key_id

    out = subprocess.run(
        ["squeue", "-h", "--me", "-t", "all", "-o", "%i|%k"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [line.split("|")[0] for line in out.splitlines() if f"torchx-key:{key_id(key)}" in line]


def test_a_second_run_with_the_key_returns_the_first_handle(runner: Any, workdir: Path) -> None:
    first = _run(KEY_SLURM_K1, "utils.sh", "sh", "-c", "echo run=$TORCHX_RUN_ID")
    assert first.returncode == 0, first.stderr
    handle = first.stdout.splitlines()[-1]
    assert terminal_status(runner, handle, 60).state == AppState.SUCCEEDED
    assert "".join(runner.log_lines(handle, "sh", 0)) == f"run={KEY_SLURM_K1}\n"
    again = _run(KEY_SLURM_K1, "utils.sh", "sh", "-c", "echo run=$TORCHX_RUN_ID")
    assert (again.returncode, again.stdout) == (0, f"{handle}\n"), again
    assert again.stderr.strip().endswith(
        f"exists already on slurm: {handle} (SUCCEEDED); nothing was submitted"
    ), again.stderr
    assert _jobs_with_key(KEY_SLURM_K1) == [handle.rsplit("/", 1)[1]]


def test_a_submission_cut_after_sbatch_answered_is_found(
    runner: Any, workdir: Path, tmp_path: Path
) -> None:
    """sbatch takes the job, then the answer is lost (the link drops: exit 255 after the
    id was printed). The run finds the job by its key instead of failing, and so does
    the retry; one job exists."""
    shim = tmp_path / "shim"
    shim.mkdir()
    real = subprocess.run(["sh", "-c", "command -v sbatch"], capture_output=True, text=True)
    (shim / "sbatch").write_text(
        f'#!/bin/sh\n"{real.stdout.strip()}" "$@" || exit $?\necho "Connection closed" >&2\n'
        "exit 255\n"
    )
    (shim / "sbatch").chmod(0o755)
    cut = {"PATH": f"{shim}:{os.environ['PATH']}"}
    first = _run(KEY_SLURM_CUT, "utils.sh", "sleep", "30", env=cut)
    assert first.returncode == 0, first.stderr
    handle = first.stdout.splitlines()[-1]
    assert "ended in an error" in first.stderr and f"but the app exists on slurm: {handle}" in (
        first.stderr
    ), first.stderr
    retried = _run(KEY_SLURM_CUT, "utils.sh", "sleep", "30")
    assert (retried.returncode, retried.stdout) == (0, f"{handle}\n"), retried
    assert _jobs_with_key(KEY_SLURM_CUT) == [handle.rsplit("/", 1)[1]]
    runner.cancel(handle)


def test_concurrent_runs_with_one_key_submit_once(runner: Any, workdir: Path) -> None:
    handles = concurrent_handles(
        [
            TORCHX,
            "run",
            "--idempotency-key",
            KEY_SLURM_TOGETHER,
            "-s",
            "slurm",
            "utils.sh",
            "sleep",
            "30",
        ],
        3,
    )
    [handle] = handles
    assert _jobs_with_key(KEY_SLURM_TOGETHER) == [handle.rsplit("/", 1)[1]]
    runner.cancel(handle)
