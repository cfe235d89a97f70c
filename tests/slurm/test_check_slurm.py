"""``torchx check -s slurm`` against the real Slurm cluster, up and with its controller
unreachable (a configuration naming a port nothing listens on)."""

from __future__ import annotations

import re
import socket
from pathlib import Path

from torchx_testsupport import torchx_check


def test_cluster_up(slurm_cluster: None) -> None:
    entry = torchx_check("-s", "slurm")["slurm"]
    assert entry["status"] == "ready" and entry["exit"] == 0
    checks = entry["checks"]
    assert list(checks) == ["commands", "controller", "partitions", "accounting"]
    assert "is UP" in checks["controller"][1]
    assert re.search(r"\w+\* \(up, \d+ nodes: ", checks["partitions"][1])


def test_unknown_partition(slurm_cluster: None) -> None:
    entry = torchx_check("-s", "slurm", "-cfg", "partition=nope")["slurm"]
    status, found, fix = entry["checks"]["partitions"]
    assert status == "not ready" and "partition 'nope' (run option) does not exist" in found
    assert "-cfg partition=" in fix and entry["exit"] == 1


def test_controller_down(slurm_cluster: None, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = Path("/etc/slurm/slurm.conf").read_text()
    conf = re.sub(r"(?im)^SlurmctldPort=.*$", "", conf) + f"\nSlurmctldPort={port}\n"
    (tmp_path / "slurm.conf").write_text(conf)
    entry = torchx_check("-s", "slurm", env={"SLURM_CONF": str(tmp_path / "slurm.conf")})
    status, found, fix = entry["slurm"]["checks"]["controller"]
    assert status == "not ready" and "DOWN" in found
    assert "start slurmctld" in fix
    assert entry["slurm"]["exit"] == 1


def test_no_slurm_on_this_host_is_not_configured(tmp_path: Path) -> None:
    entry = torchx_check("-s", "slurm", env={"PATH": str(tmp_path)})["slurm"]
    assert entry["status"] == "not configured"
    assert "login node" in entry["checks"]["commands"][2]
