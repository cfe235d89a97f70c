"""``MultiWorkspaceMixin``: one scheduler, several workspace builders, ``workspace_type``
picks; exercised with the directory builders this package ships (real copies)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from torchx.specs import AppDef, CfgVal, Role, Workspace, runopts
from torchx.workspace import MultiWorkspaceMixin, WorkspaceMixin
from torchx.workspace.dir_workspace import DirWorkspaceMixin, TmpDirWorkspaceMixin


class _Pushing(TmpDirWorkspaceMixin):
    """A builder with a push step (it records what it was asked to push)."""

    def __init__(self) -> None:
        super().__init__()
        self.pushed: list[Any] = []

    def workspace_opts(self) -> runopts:
        opts = runopts()
        opts.add("image_repo", type_=str, help="where to push")
        return opts

    def dryrun_push_images(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> list[str]:
        return [f"{cfg['image_repo']}/{role.name}" for role in app.roles]

    def push_images(self, images_to_push: list[str]) -> None:
        self.pushed.append(images_to_push)


class _TwoWays(MultiWorkspaceMixin):
    def __init__(self) -> None:
        super().__init__()
        self.builders: dict[str, WorkspaceMixin[Any]] = {
            "dir": DirWorkspaceMixin(),
            "tmpdir": _Pushing(),
        }

    def workspace_builders(self) -> Mapping[str, WorkspaceMixin[Any]]:
        return self.builders


def _role(tmp_path: Path) -> Role:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "train.py").write_text("print('hi')\n")
    return Role("train", "base", entrypoint="python", workspace=Workspace.from_str(str(project)))


def test_the_first_builder_is_the_default_and_the_option_picks_another() -> None:
    mixin = _TwoWays()
    assert mixin.workspace_builder({})[0] == "dir"
    assert mixin.workspace_builder({"workspace_type": "tmpdir"}) == (
        "tmpdir",
        mixin.builders["tmpdir"],
    )
    with pytest.raises(ValueError, match=r"^workspace_type='zip' is not a workspace builder"
                       r" of this scheduler; use one of dir, tmpdir$"):  # fmt: skip
        mixin.workspace_builder({"workspace_type": "zip"})


def test_the_options_are_the_selector_and_every_builders() -> None:
    opts = _TwoWays().workspace_opts()
    assert [k for k, _ in opts] == ["workspace_type", "image_repo"]
    selector = opts.get("workspace_type")
    assert selector is not None and selector.default == "dir"
    assert "dir or tmpdir" in selector.help


def test_each_builder_builds_what_it_builds(tmp_path: Path) -> None:
    mixin = _TwoWays()
    job_dir = tmp_path / "job"
    by_dir = _role(tmp_path)
    mixin.build_workspaces([by_dir], {"job_dir": str(job_dir)})
    assert by_dir.image == str(job_dir) and (job_dir / "train.py").exists()
    by_tmp = _role(tmp_path)
    mixin.build_workspaces([by_tmp], {"workspace_type": "tmpdir"})
    assert by_tmp.image != "base" and Path(by_tmp.image, "train.py").exists()
    assert not Path(by_tmp.image).is_relative_to(tmp_path)


def test_a_builder_without_a_push_step_pushes_nothing(tmp_path: Path) -> None:
    mixin = _TwoWays()
    app = AppDef("a", [_role(tmp_path)])
    assert mixin.dryrun_push_images(app, {}) == ("dir", None)
    mixin.push_images(("dir", None))  # nothing to do, no error
    plan = mixin.dryrun_push_images(app, {"workspace_type": "tmpdir", "image_repo": "reg/x"})
    assert plan == ("tmpdir", ["reg/x/train"])
    mixin.push_images(plan)
    assert mixin.builders["tmpdir"].pushed == [["reg/x/train"]]  # type: ignore[attr-defined]


def test_no_builder_at_all_is_an_error() -> None:
    class _None(MultiWorkspaceMixin):
        def workspace_builders(self) -> Mapping[str, WorkspaceMixin[Any]]:
            return {}

    with pytest.raises(ValueError, match="offers no builder"):
        _None().workspace_opts()
