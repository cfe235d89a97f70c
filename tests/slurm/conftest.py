"""Fixtures for the tests that run real jobs on a real Slurm cluster.

`tools/slurm-up.sh` starts a 4-node cluster on localhost (munge, mariadb + slurmdbd,
slurmctld, one slurmd per node). Without one these tests are skipped, unless
TORCHX_REQUIRE_SLURM=1 (set by tools/test-all.sh) turns that into a failure.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import backend_missing, runner_that_cleans_up


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
        backend_missing(
            "TORCHX_REQUIRE_SLURM",
            f"no Slurm cluster with 2+ nodes ({reason}); run tools/slurm-up.sh",
        )


@pytest.fixture(scope="session")
def client(slurm_cluster: None) -> None:
    """The laptop (tools/sshd-up.sh's unprivileged account) with this checkout installed,
    made once per session: it submits through the login node over ssh."""
    from torchx_testsupport import laptop

    missing = laptop.problem()
    if missing:
        backend_missing("TORCHX_REQUIRE_SSH", missing)
    laptop.make_venv(Path(__file__).resolve().parents[2])


@pytest.fixture
def runner(slurm_cluster: None, workdir: Path) -> Iterator[Any]:
    """A Runner whose jobs still queued or running when the test ends are cancelled."""
    with runner_that_cleans_up(lambda r, handle: r.cancel(handle)) as r:
        yield r
