"""Fixtures for the tests that run real jobs on a real Slurm cluster.

`tools/slurm-up.sh` starts a 4-node cluster on localhost (munge, mariadb + slurmdbd,
slurmctld, one slurmd per node). Without one these tests are skipped, unless
TORCHX_REQUIRE_SLURM=1 (set by tools/test-all.sh) turns that into a failure.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=10)
        nodes = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, timeout=10
        )
        idle = [line for line in nodes.stdout.splitlines() if line.split()[-1] != "down"]
        ok = "is UP" in ping.stdout and len(idle) >= 2
        reason = ping.stdout.strip() or ping.stderr.strip()
    except (OSError, subprocess.SubprocessError) as e:
        ok, reason = False, str(e)
    if not ok:
        message = f"no Slurm cluster with 2+ nodes ({reason}); run tools/slurm-up.sh"
        if os.environ.get("TORCHX_REQUIRE_SLURM") == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The submit directory (jobs run there and write their logs there)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def runner(slurm_cluster: None, workdir: Path) -> Iterator[Any]:
    """A Runner whose jobs still queued or running when the test ends are cancelled."""
    from torchx.runner import get_runner

    with get_runner() as r:
        handles: list[str] = []
        original = r.schedule

        def schedule(dryrun_info: Any) -> str:
            handle = original(dryrun_info)
            handles.append(handle)
            return handle

        r.schedule = schedule  # type: ignore[method-assign]
        yield r
        for handle in handles:
            r.cancel(handle)
