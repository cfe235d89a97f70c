"""Directory workspaces: copies honouring .torchxignore, job_dir handling, role updates."""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import fsspec
import pytest

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.specs import AppDef, AppDryRunInfo, CfgVal, Role, Workspace
from torchx.workspace.dir_workspace import (
    DirWorkspaceMixin,
    TmpDirWorkspaceMixin,
    copy_workspace,
)


def make_project(root: Path) -> Path:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "build").mkdir()
    (root / "train.py").write_text("print('train')\n")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / "pkg" / "model.py").write_text("M = 1\n")
    (root / "pkg" / "sub" / "keep.log").write_text("kept\n")
    (root / "pkg" / "debug.log").write_text("dropped\n")
    (root / "build" / "big.bin").write_text("x" * 100)
    (root / ".torchxignore").write_text(
        "# build outputs\nbuild\n*.log\npkg/*.log\n!pkg/sub/keep.log\n"
    )
    return root


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


class TestCopy:
    def test_ignore_rules_and_modes(self, tmp_path: Path) -> None:
        project = make_project(tmp_path / "project")
        target = tmp_path / "out"
        target.mkdir()
        copy_workspace(str(project), str(target))
        assert tree(target) == {
            ".torchxignore",
            "train.py",
            "run.sh",
            "pkg/model.py",
            "pkg/sub/keep.log",
        }
        assert (target / "pkg" / "model.py").read_text() == "M = 1\n"
        assert os.stat(target / "run.sh").st_mode & stat.S_IXUSR

    def test_from_an_fsspec_url(self, tmp_path: Path) -> None:
        root = f"/ws-{uuid.uuid4().hex}"
        fs = fsspec.filesystem("memory")
        fs.pipe(f"{root}/a.py", b"A")
        fs.pipe(f"{root}/d/b.py", b"B")
        copy_workspace(f"memory://{root}", str(tmp_path))
        assert (tmp_path / "a.py").read_text() == "A"
        assert (tmp_path / "d" / "b.py").read_text() == "B"

    def test_missing_workspace(self, tmp_path: Path) -> None:
        with pytest.raises(FileNotFoundError, match="is not a directory"):
            copy_workspace(str(tmp_path / "nope"), str(tmp_path))


class DirScheduler(DirWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """The smallest scheduler that builds workspaces into ``job_dir``."""

    def __init__(self) -> None:
        super().__init__("dir", "test")

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        return AppDryRunInfo(app, repr)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        return "id"

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        return None

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        return []

    def _cancel_existing(self, app_id: str) -> None:
        pass


class TmpScheduler(TmpDirWorkspaceMixin, DirScheduler):
    pass


def role_with(workspace: Workspace | None) -> Role:
    return Role(name="r", image="original", entrypoint="python", workspace=workspace)


class TestDirWorkspaceMixin:
    def test_job_dir_receives_the_workspace(self, tmp_path: Path) -> None:
        project = make_project(tmp_path / "project")
        job_dir = tmp_path / "job"
        role = role_with(Workspace({str(project): ""}))
        DirScheduler().build_workspaces([role], {"job_dir": str(job_dir)})
        assert role.image == str(job_dir)
        assert "train.py" in tree(job_dir) and "build/big.bin" not in tree(job_dir)

    def test_existing_job_dir_is_refused(self, tmp_path: Path) -> None:
        project = make_project(tmp_path / "project")
        role = role_with(Workspace({str(project): ""}))
        with pytest.raises(FileExistsError, match="already exists"):
            DirScheduler().build_workspaces([role], {"job_dir": str(project)})

    def test_without_job_dir_nothing_happens(self, tmp_path: Path) -> None:
        role = role_with(Workspace({str(tmp_path): ""}))
        DirScheduler().build_workspaces([role], {})
        assert role.image == "original"

    def test_job_dir_must_be_a_string(self, tmp_path: Path) -> None:
        role = role_with(Workspace({str(tmp_path): ""}))
        with pytest.raises(TypeError, match="job_dir"):
            DirScheduler().build_workspaces([role], {"job_dir": 3})


class TestTmpDirWorkspaceMixin:
    def test_each_role_gets_its_private_copy(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import tempfile

        # the copies are made in the temp dir: this test's own, so that none is left behind
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        project = make_project(tmp_path / "project")
        extra = tmp_path / "extra"
        extra.mkdir()
        (extra / "util.py").write_text("U = 1\n")
        plain = role_with(Workspace({str(project): ""}))
        merged = role_with(Workspace({str(project): "", str(extra): "libs"}))
        untouched = role_with(None)
        TmpScheduler().build_workspaces([plain, merged, untouched], {})
        assert untouched.image == "original"
        assert tree(Path(plain.image)) == {
            ".torchxignore",
            "train.py",
            "run.sh",
            "pkg/model.py",
            "pkg/sub/keep.log",
        }
        assert stat.S_IMODE(os.stat(plain.image).st_mode) == 0o700
        assert "libs/util.py" in tree(Path(merged.image))
        assert "train.py" in tree(Path(merged.image))


class TestSharedAndCleanup:
    def test_local_copy_needs_no_fsspec(self, tmp_path: Path) -> None:
        import subprocess
        import sys

        project = make_project(tmp_path / "project")
        code = (
            "import sys; from torchx.workspace.dir_workspace import copy_workspace;"
            f"copy_workspace({str(project)!r}, {str(tmp_path / 'out')!r});"
            "print('fsspec' in sys.modules)"
        )
        (tmp_path / "out").mkdir()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.stdout.strip() == "False", out.stderr
        assert "pkg/model.py" in tree(tmp_path / "out")

    def test_roles_with_one_workspace_share_the_job_dir(self, tmp_path: Path) -> None:
        project = make_project(tmp_path / "project")
        job_dir = tmp_path / "job"
        ws = Workspace({str(project): ""})
        a = Role(name="a", image="img-a", entrypoint="python", workspace=ws)
        b = Role(name="b", image="img-b", entrypoint="python", workspace=ws)
        sched = DirScheduler()
        sched.build_workspaces([a, b], {"job_dir": str(job_dir)})
        assert a.image == b.image == str(job_dir)
        assert list(sched.created_job_dirs()) == [str(job_dir)]

    def test_failed_copy_leaves_no_job_dir(self, tmp_path: Path) -> None:
        job_dir = tmp_path / "job"
        role = role_with(Workspace({str(tmp_path / "missing"): ""}))
        with pytest.raises(FileNotFoundError):
            DirScheduler().build_workspaces([role], {"job_dir": str(job_dir)})
        assert not job_dir.exists()


def test_url_workspace_copies_through_fsspec_with_the_given_ignore_file(tmp_path: Path) -> None:
    fs = fsspec.filesystem("memory")
    root = f"/urlws-{uuid.uuid4().hex}"
    fs.pipe(
        {
            f"{root}/train.py": b"print(1)\n",
            f"{root}/big.bin": b"x",
            f"{root}/.dockerignore": b"*.bin\n",
        }
    )
    copy_workspace(f"memory://{root}", str(tmp_path), ".dockerignore")
    assert tree(tmp_path) == {".dockerignore", "train.py"}


def test_url_workspace_with_a_missing_implementation_names_the_package(tmp_path: Path) -> None:
    from fsspec.registry import known_implementations, registry

    missing = [
        p
        for p in ("s3", "gcs", "abfs", "hf")
        if p in known_implementations and p not in registry and "err" in known_implementations[p]
    ]
    protocol = next(p for p in missing if _not_importable(known_implementations[p]["class"]))
    package = known_implementations[protocol]["class"].split(".", 1)[0]
    with pytest.raises(ValueError, match=rf"needs {package}, which is not installed") as e:
        copy_workspace(f"{protocol}://bucket/code", str(tmp_path))
    assert f"pip install {package}" in str(e.value)
    with pytest.raises(ValueError, match="fsspec knows no protocol 'nosuchproto'"):
        copy_workspace("nosuchproto://x/y", str(tmp_path))


def _not_importable(cls_path: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(cls_path.split(".", 1)[0]) is None


def test_multi_project_workspace_merges_urls_too(tmp_path: Path) -> None:
    fs = fsspec.filesystem("memory")
    root = f"/merge-{uuid.uuid4().hex}"
    fs.pipe({f"{root}/lib.py": b"X = 1\n"})
    local = tmp_path / "local"
    local.mkdir()
    (local / "main.py").write_text("")
    out = tmp_path / "out"
    Workspace({str(local): "", f"memory://{root}": "vendor"}).merge_into(out)
    assert tree(out) == {"main.py", "vendor/lib.py"}


def test_a_sparse_file_stays_sparse_in_the_copy(tmp_path: Path) -> None:
    """A preallocated file (64 MiB, data only at both ends) is copied with its holes: the
    copy reads the same and takes about as little disk as the original."""
    from torchx.workspace._files import copy_workspace

    workspace = tmp_path / "ws"
    workspace.mkdir()
    sparse = workspace / "ckpt.bin"
    with open(sparse, "wb") as f:
        f.write(b"head")
        f.seek(64 << 20)
        f.write(b"tail")
    with open(workspace / "tail-hole.bin", "wb") as f:
        f.write(b"x")
        f.truncate(8 << 20)  # a file that ends in a hole
    if os.stat(sparse).st_blocks * 512 > 1 << 20:
        pytest.skip("this file system does not keep holes")
    target = tmp_path / "job"
    target.mkdir()
    copy_workspace(str(workspace), str(target))
    for name in ("ckpt.bin", "tail-hole.bin"):
        original, copy = workspace / name, target / name
        assert copy.stat().st_size == original.stat().st_size
        assert copy.stat().st_blocks * 512 <= (1 << 20) + original.stat().st_blocks * 512
        assert copy.read_bytes() == original.read_bytes()
