"""Workspaces holding what should never be copied or packed: links out of the workspace,
devices, FIFOs, sockets, more data than the size limit, in job_dir copies (image build
contexts follow the same rules: torchx-workspace-docker's tests)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx_testsupport.workspaces import hostile_workspace, oversized_workspace

from torchx.specs import Role, Workspace
from torchx.workspace.api import WorkspaceTooLargeError
from torchx.workspace.dir_workspace import DirWorkspaceMixin, copy_workspace


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[Path]:
    with hostile_workspace(tmp_path) as ws:
        yield ws


@pytest.mark.timeout(20)
def test_job_dir_copy_keeps_links_and_skips_special_files(
    hostile: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    job_dir = tmp_path / "job"
    role = Role("r", "img", workspace=Workspace({str(hostile): ""}))
    DirScheduler().build_workspaces([role], {"job_dir": str(job_dir)})
    assert os.readlink(job_dir / "zero") == "/dev/zero"
    assert os.readlink(job_dir / "sub" / "key") == str(tmp_path / "secret.key")
    assert os.readlink(job_dir / "linked_dir") == "sub"
    assert sorted(p.name for p in job_dir.iterdir()) == ["linked_dir", "sub", "train.py", "zero"]
    assert (job_dir / "train.py").read_text() == "print('train')\n"
    warned = " ".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    for name in ("pipe", "agent.sock"):
        assert str(hostile / name) in warned
    assert "not a regular file" in warned  # the FIFO .torchxignore was not read


def test_job_dir_and_its_files_are_private(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "run.sh").write_text("echo hi\n")
    (ws / "run.sh").chmod(0o755)
    (ws / "env.txt").write_text("AWS_SECRET_ACCESS_KEY=x\n")
    (ws / "env.txt").chmod(0o644)
    job_dir = tmp_path / "missing" / "parents" / "job"  # parents are created, as upstream
    role = Role("r", "img", workspace=Workspace({str(ws): ""}))
    DirScheduler().build_workspaces([role], {"job_dir": str(job_dir)})
    assert stat.S_IMODE(job_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((job_dir / "run.sh").stat().st_mode) == 0o700
    assert stat.S_IMODE((job_dir / "env.txt").stat().st_mode) == 0o600


def test_size_limit_stops_the_copy_and_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = oversized_workspace(tmp_path)
    monkeypatch.setenv("TORCHX_WORKSPACE_MAX_MB", "1")
    job_dir = tmp_path / "job"
    role = Role("r", "img", workspace=Workspace({str(ws): ""}))
    with pytest.raises(WorkspaceTooLargeError, match=r"holds more than 1 MB") as e:
        DirScheduler().build_workspaces([role], {"job_dir": str(job_dir)})
    assert "TORCHX_WORKSPACE_MAX_MB" in str(e.value) and "\n" not in str(e.value)
    assert not job_dir.exists()
    monkeypatch.setenv("TORCHX_WORKSPACE_MAX_MB", "0")  # no limit
    copy_workspace(str(ws), str(tmp_path / "unlimited"))


def test_job_dir_inside_the_workspace_is_not_copied_into_itself(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("")
    job_dir = tmp_path / "runs" / "job1"
    role = Role("r", "img", workspace=Workspace({str(tmp_path): ""}))
    DirScheduler().build_workspaces([role], {"job_dir": str(job_dir)})
    assert sorted(p.name for p in job_dir.iterdir()) == ["runs", "train.py"]
    assert list((job_dir / "runs").iterdir()) == []


class DirScheduler(DirWorkspaceMixin):
    """The job_dir copy alone (no scheduler)."""


def test_a_long_copy_says_what_it_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A big workspace made --wait look hung: past a second, a line says what is copied
    and how much (live on a terminal, once in a log), then that it is done."""
    from torchx.workspace.api import WorkspaceProgress

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.bin").write_bytes(b"x" * (3 << 20))
    monkeypatch.setattr(WorkspaceProgress, "SHOW_AFTER_S", 0.0)
    copy_workspace(str(ws), str(tmp_path / "out"))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"torchx: copying workspace {ws}: ") and "so far" in lines[0]
    assert lines[-1] == f"torchx: copying workspace {ws}: 1 files, 3.0 MB, done"
