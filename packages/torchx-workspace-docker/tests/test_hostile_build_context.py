"""Build contexts of workspaces holding what should never be packed: links out of the
workspace, devices, FIFOs, sockets, more data than the size limit (the job_dir copy's rules,
tested in torchx-specs)."""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx_testsupport.workspaces import hostile_workspace, oversized_workspace

from torchx.workspace import docker_workspace as dw
from torchx.workspace.api import WorkspaceTooLargeError


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[Path]:
    with hostile_workspace(tmp_path) as ws:
        yield ws


def test_size_limit_refuses_the_build_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = oversized_workspace(tmp_path)
    monkeypatch.setenv("TORCHX_WORKSPACE_MAX_MB", "1")
    with pytest.raises(WorkspaceTooLargeError, match=r"holds more than 1 MB"):
        dw.build_context(str(ws))
    monkeypatch.setenv("TORCHX_WORKSPACE_MAX_MB", "0")  # no limit
    fileobj, _, _ = dw.build_context(str(ws))
    with fileobj, tarfile.open(fileobj=fileobj) as tar:
        assert {"a.bin", "b.bin"} <= set(tar.getnames())


@pytest.mark.timeout(20)
def test_build_context_keeps_links_and_skips_special_files(
    hostile: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A socket made image builds fail with AttributeError ('NoneType' ... 'mtime')."""
    fileobj, _, _ = dw.build_context(str(hostile))
    with fileobj, tarfile.open(fileobj=fileobj) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert set(members) == {
        "Dockerfile.torchx", "linked_dir", "sub", "sub/key", "train.py", "zero",
    }  # fmt: skip
    assert members["zero"].issym() and members["zero"].linkname == "/dev/zero"
    assert members["sub/key"].issym()
    assert "agent.sock" in caplog.text and "pipe" in caplog.text
