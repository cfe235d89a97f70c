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
    assert list(checks) == ["commands", "controller", "partitions", "containers", "accounting"]
    assert "is UP" in checks["controller"][1]
    assert re.search(r"\w+\* \(up, \d+ nodes: ", checks["partitions"][1])
    assert list(checks["containers"][:2]) == [
        "ready",
        "oci: srun --container, /etc/slurm/oci.conf, skopeo and umoci here;"
        " pyxis: not installed (no --container-image)",
    ]


def test_the_container_mode_asked_for_must_be_usable(slurm_cluster: None) -> None:
    entry = torchx_check("-s", "slurm", "-cfg", "container=oci")["slurm"]
    assert entry["status"] == "ready" and entry["checks"]["containers"][0] == "ready"
    entry = torchx_check("-s", "slurm", "-cfg", "container=pyxis")["slurm"]
    status, found, fix = entry["checks"]["containers"]
    assert status == "not ready" and "pyxis: not installed (no --container-image)" in found
    assert fix == "ask the cluster's admin to install pyxis and enroot, or use -cfg container=oci"
    assert entry["exit"] == 1


def test_a_host_without_oci_conf_says_the_nodes_need_one(
    slurm_cluster: None, tmp_path: Path
) -> None:
    (tmp_path / "slurm.conf").write_text(Path("/etc/slurm/slurm.conf").read_text())
    env = {"SLURM_CONF": str(tmp_path / "slurm.conf")}
    entry = torchx_check("-s", "slurm", "-cfg", "container=oci", env=env)["slurm"]
    status, found, _ = entry["checks"]["containers"]
    assert status == "ready"
    assert "no oci.conf on this host (the nodes need one)" in found
    assert found.endswith("(oci.conf: ask the admin whether the nodes have it)")


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
