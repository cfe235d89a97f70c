"""Workspace mixin (building role workspaces) and the .torchxignore-aware walk."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import fsspec
import pytest

import torchx.workspace
from torchx.specs import AppDef, CfgVal, Role, Workspace, runopts
from torchx.workspace.api import (
    TORCHX_IGNORE,
    PkgInfo,
    WorkspaceBuilder,
    WorkspaceMixin,
    walk_workspace,
)


class RecordingBuilder(WorkspaceMixin[list[str]]):
    """Builds a workspace by listing its files; the image becomes ``built:<n>``."""

    def __init__(self) -> None:
        super().__init__()
        self.builds: list[tuple[str, list[str]]] = []

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        files = sorted(
            os.path.relpath(os.path.join(d, f), workspace)
            for d, _, fs in os.walk(workspace)
            for f in fs
        )
        self.builds.append((role.name, files))
        role.image = f"built:{len(self.builds)}"
        role.env["WORKSPACE_FILES"] = ",".join(files)


class NoBuild(WorkspaceMixin[None]):
    pass


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("a")
    (root / "main.py").write_text("m")
    return root


def test_build_single_project(project: Path) -> None:
    builder = RecordingBuilder()
    role = Role("trainer", "base", workspace=Workspace({str(project): ""}))
    other = Role("ps", "base")
    builder.build_workspaces([role, other], {})
    assert role.image == "built:1"
    assert role.env["WORKSPACE_FILES"] == "main.py,pkg/a.py"
    assert other.image == "base"
    assert builder.builds == [("trainer", ["main.py", "pkg/a.py"])]


def test_build_multi_project_merges_into_temp_dir(project: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra.txt"
    extra.write_text("x")
    builder = RecordingBuilder()
    role = Role(
        "trainer", "base", workspace=Workspace({str(project): "app", str(extra): "conf/extra.txt"})
    )
    builder.build_workspaces([role], {})
    assert builder.builds == [("trainer", ["app/main.py", "app/pkg/a.py", "conf/extra.txt"])]


def test_build_cache_shares_identical_builds(project: Path) -> None:
    builder = RecordingBuilder()
    workspace = Workspace({str(project): ""})
    roles = [
        Role("a", "base", workspace=workspace),
        Role("b", "base", workspace=Workspace({str(project): ""})),
        Role("c", "other-base", workspace=workspace),
    ]
    builder.build_workspaces(roles, {})
    assert [r.image for r in roles] == ["built:1", "built:1", "built:2"]
    assert len(builder.builds) == 2
    builder.build_workspaces([Role("d", "base", workspace=workspace)], {})
    assert len(builder.builds) == 3  # the cache lives for one call only


def test_unimplemented_build_names_the_class(project: Path) -> None:
    role = Role("r", "i", workspace=Workspace({str(project): ""}))
    with pytest.raises(NotImplementedError, match="NoBuild cannot build workspaces"):
        NoBuild().build_workspaces([role], {})
    with pytest.raises(NotImplementedError, match="NoBuild does not push images"):
        NoBuild().dryrun_push_images(AppDef("a"), {})
    with pytest.raises(NotImplementedError, match="NoBuild does not push images"):
        NoBuild().push_images(None)


def test_workspace_opts_default_empty() -> None:
    assert isinstance(NoBuild().workspace_opts(), runopts)
    assert len(NoBuild().workspace_opts()) == 0


def test_build_workspace_and_update_role2_compat(project: Path) -> None:
    builder = RecordingBuilder()
    role = Role("r", "i")
    builder.build_workspace_and_update_role2(role, str(project), {})
    assert role.image == "built:1"
    builder.build_workspace_and_update_role2(role, Workspace({str(project): "sub"}), {})
    assert builder.builds[-1] == ("r", ["sub/main.py", "sub/pkg/a.py"])


def test_deprecated_builder_types_warn() -> None:
    with pytest.warns(FutureWarning, match="PkgInfo is deprecated"):
        PkgInfo(img="i", lazy_overrides={}, metadata=None)
    with pytest.warns(FutureWarning, match="WorkspaceBuilder is deprecated"):
        builder: WorkspaceBuilder[None, dict[str, str]] = WorkspaceBuilder(cfg={})
    with pytest.raises(NotImplementedError, match="build_workspace"):
        builder.build_workspace()


def test_package_exports() -> None:
    assert torchx.workspace.WorkspaceMixin is WorkspaceMixin
    assert torchx.workspace.walk_workspace is walk_workspace
    assert torchx.workspace.Workspace is Workspace
    from torchx.workspace.api import Workspace as ApiWorkspace

    assert ApiWorkspace is Workspace
    with pytest.raises(AttributeError):
        _ = torchx.workspace.nope


def make_tree(root: Path, files: list[str]) -> None:
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)


def walked(root: Path) -> tuple[set[str], set[str]]:
    fs = fsspec.filesystem("file")
    dirs_seen: set[str] = set()
    files_seen: set[str] = set()
    for directory, _dirs, files in walk_workspace(fs, str(root)):
        rel = os.path.relpath(directory, root)
        dirs_seen.add(rel)
        files_seen.update(os.path.normpath(os.path.join(rel, f)) for f in files)
    return dirs_seen, files_seen


def test_walk_workspace_applies_torchxignore(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        [
            "main.py",
            "main.pyc",
            "keep.pyc",
            "Dockerfile.torchx",
            "data/big.bin",
            "data/sub/more.bin",
            "src/mod.py",
            "src/notes.md",
            "docs/README.md",
        ],
    )
    (tmp_path / TORCHX_IGNORE).write_text(
        "# build artifacts\n"
        "*.pyc   # trailing comment\n"
        "\n"
        ".\n"
        "data\n"
        "!keep.pyc\n"
        "src/*.md\n"
        "Dockerfile.torchx\n"
        "/docs\n"
    )
    dirs, files = walked(tmp_path)
    assert dirs == {".", "src"}
    assert files == {
        "main.py",
        "keep.pyc",
        "Dockerfile.torchx",
        "src/mod.py",
        TORCHX_IGNORE,
    }


def test_walk_workspace_without_ignore_file(tmp_path: Path) -> None:
    make_tree(tmp_path, ["a.py", "d/b.py"])
    dirs, files = walked(tmp_path)
    assert dirs == {".", "d"}
    assert files == {"a.py", "d/b.py"}


def test_walk_workspace_custom_ignore_name_and_last_match_wins(tmp_path: Path) -> None:
    make_tree(tmp_path, ["a.log", "b.log", "c.txt"])
    (tmp_path / ".dockerignore").write_text("*.log\n!*.log\nb.log\n")
    fs = fsspec.filesystem("file")
    files = {f for _, _, fs_ in walk_workspace(fs, str(tmp_path), ".dockerignore") for f in fs_}
    assert files == {"a.log", "c.txt", ".dockerignore"}
