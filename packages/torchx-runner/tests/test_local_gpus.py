"""Splitting GPUs among local_cwd replicas (``auto_set_cuda_visible_devices``)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from torchx.schedulers._local.gpus import allocate_cuda_devices, cuda_device_count
from torchx.schedulers.local_scheduler import create_scheduler
from torchx.specs.api import AppDef, Resource, Role


def test_consecutive_ranges_across_roles() -> None:
    assert allocate_cuda_devices([(2, 2)], 8) == [["0,1", "2,3"]]
    assert allocate_cuda_devices([(1, 2), (3, 1)], 8) == [["0,1"], ["2", "3", "4"]]


def test_roles_without_gpus_get_nothing_and_use_no_devices() -> None:
    assert allocate_cuda_devices([(2, 0), (1, 3), (1, -1)], 3) == [[None, None], ["0,1,2"], [None]]


def test_not_enough_devices() -> None:
    assert allocate_cuda_devices([(3, 4)], 8) is None
    assert allocate_cuda_devices([(1, 1)], 0) is None


def test_exactly_enough_devices() -> None:
    assert allocate_cuda_devices([(4, 2)], 8) == [["0,1", "2,3", "4,5", "6,7"]]


def gpu_app() -> AppDef:
    return AppDef(
        "gpus",
        [
            Role(
                "a",
                "i",
                entrypoint="true",
                num_replicas=2,
                resource=Resource(cpu=1, gpu=2, memMB=1),
            ),
            Role(
                "b",
                "i",
                entrypoint="true",
                num_replicas=1,
                resource=Resource(cpu=1, gpu=0, memMB=1),
            ),
        ],
    )


@pytest.fixture
def fake_gpu_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host whose ``nvidia-smi -L`` lists 4 GPUs (this machine has none)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "nvidia-smi"
    lines = "".join(f"GPU {i}: Fake GPU (UUID: GPU-{i})\\n" for i in range(4))
    tool.write_text(f"#!/bin/sh\nprintf '{lines}'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))


@pytest.mark.usefixtures("fake_gpu_host")
def test_device_count_from_nvidia_smi() -> None:
    assert cuda_device_count() == 4


@pytest.mark.usefixtures("fake_gpu_host")
def test_dryrun_sets_cuda_visible_devices_per_replica() -> None:
    sched = create_scheduler("s")
    req = sched.submit_dryrun(gpu_app(), {"auto_set_cuda_visible_devices": True}).request
    assert [p.env.get("CUDA_VISIBLE_DEVICES") for p in req.role_params["a"]] == ["0,1", "2,3"]
    assert "CUDA_VISIBLE_DEVICES" not in req.role_params["b"][0].env
    req = sched.submit_dryrun(gpu_app(), {}).request
    assert all("CUDA_VISIBLE_DEVICES" not in p.env for p in req.role_params["a"])


def test_missing_nvidia_smi_means_no_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    with caplog.at_level(logging.WARNING):
        assert cuda_device_count() == 0
    assert "nvidia-smi" in caplog.text
    # 'true' must still be found by the dry run
    monkeypatch.setenv("PATH", f"{tmp_path / 'empty'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        req = (
            create_scheduler("s")
            .submit_dryrun(gpu_app(), {"auto_set_cuda_visible_devices": True})
            .request
        )
    assert all("CUDA_VISIBLE_DEVICES" not in p.env for p in req.role_params["a"])
    assert "Cannot auto-set" in caplog.text
