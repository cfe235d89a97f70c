"""Build a workspace once, submit it many times: ``Runner.build_workspace`` and
``torchx.workspace.pin_workspace_images`` on the real Docker daemon (``local_docker``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import terminal_status
from torchx_testsupport.docker import IMAGE

from torchx.runner import Runner
from torchx.schedulers.docker_scheduler import DockerScheduler
from torchx.specs import AppDef, AppState, Role, Workspace
from torchx.workspace import pin_workspace_images

CFG = {"quiet": True}


def _project(tmp_path: Path, note: str) -> Workspace:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "note.txt").write_text(note)
    return Workspace.from_str(str(project))


def _role(name: str, workspace: Workspace | None, image: str = IMAGE) -> Role:
    return Role(name, image, entrypoint="cat", args=["note.txt"], workspace=workspace)


def _log(runner: Any, handle: str, role: str) -> str:
    return "".join(runner.log_lines(handle, role, 0))


def test_one_build_serves_many_apps_and_is_not_redone(runner: Any, tmp_path: Path) -> None:
    workspace = _project(tmp_path, "as built\n")
    app = AppDef("built", [_role("a", workspace), _role("b", workspace)])
    images = runner.build_workspace(app, "local_docker", CFG)
    ((key, built),) = images.items()  # two roles, one (image, workspace) pair: one build
    assert key == (IMAGE, workspace) and built.startswith("sha256:")
    assert [(r.image, r.workspace) for r in app.roles] == [(IMAGE, workspace)] * 2  # unchanged

    # the workspace changes after the build: a pinned app must not see it (no rebuild)
    Path(next(iter(workspace.projects)), "note.txt").write_text("changed since\n")
    handles = []
    for name in ("first", "second"):
        other = AppDef(name, [_role("train", workspace)])
        pin_workspace_images(other, images)
        assert (other.roles[0].image, other.roles[0].workspace) == (built, None)
        handles.append(runner.run(other, "local_docker", CFG))
    for handle in handles:
        assert terminal_status(runner, handle, 60).state == AppState.SUCCEEDED
        assert _log(runner, handle, "train") == "as built\n"


def test_only_roles_of_the_pair_that_was_built_are_pinned(runner: Any, tmp_path: Path) -> None:
    workspace = _project(tmp_path, "x\n")
    images = runner.build_workspace(AppDef("b", [_role("a", workspace)]), "local_docker", CFG)
    other_base = "torchx-test/another-base:1"
    app = AppDef("mixed", [_role("same", workspace), _role("base", workspace, other_base),
                           _role("none", None, "prebuilt:1")])  # fmt: skip
    pin_workspace_images(app, images)
    assert [(r.image, r.workspace) for r in app.roles] == [
        (images[(IMAGE, workspace)], None),
        (other_base, workspace),  # the same workspace on another base is another build
        ("prebuilt:1", None),
    ]


def test_a_role_gives_its_image_and_none_without_a_workspace(runner: Any, tmp_path: Path) -> None:
    workspace = _project(tmp_path, "x\n")
    built = runner.build_workspace(_role("a", workspace), "local_docker", CFG)
    assert built is not None and built.startswith("sha256:")
    assert runner.build_workspace(_role("a", None), "local_docker", CFG) is None
    assert runner.build_workspace(AppDef("x", [_role("a", workspace)]), "local_cwd") == {}


class _SetsEnv(DockerScheduler):
    """A builder that also writes ``env``, which a pinned image cannot carry."""

    def caching_build_workspace_and_update_role(
        self, role: Role, cfg: Any, build_cache: dict[object, object]
    ) -> None:
        super().caching_build_workspace_and_update_role(role, cfg, build_cache)
        role.env["WORKSPACE_DIR"] = "/x"


def test_a_build_that_changes_more_than_the_image_is_not_pinned(
    docker_client: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workspace = _project(tmp_path, "x\n")
    factories = {"local_docker": lambda session, **_: _SetsEnv(session_name=session)}
    app = AppDef("env", [_role("a", workspace)])
    with Runner("t", scheduler_factories=factories) as runner, caplog.at_level(logging.WARNING):
        assert runner.build_workspace(app.roles[0], "local_docker", CFG) is None
    assert "role `a` is rebuilt at each submission" in caplog.text
