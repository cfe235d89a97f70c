"""The image workspace's daemon-free parts: build context, cache key inputs, push plans.

Builds, pulls and pushes against a real Docker daemon are tested in tests/docker.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from torchx import specs
from torchx.workspace import docker_workspace as dw


class _Mixin(dw.DockerWorkspaceMixin):
    """The mixin alone (no scheduler): enough for push plans and options."""


def _members(context: tarfile.TarFile) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for info in context.getmembers():
        f = context.extractfile(info) if info.isreg() else None
        out[info.name] = f.read() if f is not None else None
    return out


def _pack(path: Path) -> tuple[dict[str, bytes | None], str, bytes]:
    fileobj, digest, dockerfile = dw.build_context(str(path))
    with fileobj, tarfile.open(fileobj=fileobj) as tar:
        return _members(tar), digest, dockerfile


def test_context_adds_default_dockerfile_and_honours_dockerignore(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print('hi')\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "big.bin").write_bytes(b"\0" * 10)
    (tmp_path / "notes.log").write_text("x")
    (tmp_path / ".dockerignore").write_text("# build junk\ndata\n*.log\n")
    members, _, dockerfile = _pack(tmp_path)
    assert set(members) == {"src", "src/main.py", ".dockerignore", "Dockerfile.torchx"}
    assert members["src/main.py"] == b"print('hi')\n"
    assert members["Dockerfile.torchx"] == dw.DEFAULT_DOCKERFILE == dockerfile
    assert b"FROM $IMAGE" in dw.DEFAULT_DOCKERFILE


def test_context_uses_the_workspace_dockerfile(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile.torchx").write_text("FROM base:1\nCOPY . /app\n")
    members, _, dockerfile = _pack(tmp_path)
    assert dockerfile == b"FROM base:1\nCOPY . /app\n"
    assert members["Dockerfile.torchx"] == dockerfile


def test_context_hash_follows_content_not_mtime(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\n")
    _, first, _ = _pack(tmp_path)
    os.utime(tmp_path / "a.py", (12345, 12345))
    _, touched, _ = _pack(tmp_path)
    assert touched == first
    (tmp_path / "a.py").write_text("two\n")
    _, changed, _ = _pack(tmp_path)
    assert changed != first
    os.chmod(tmp_path / "a.py", 0o755)
    _, chmodded, _ = _pack(tmp_path)
    assert chmodded != changed
    (tmp_path / "b.py").write_text("")
    _, added, _ = _pack(tmp_path)
    assert added != chmodded


def test_context_of_a_missing_directory_says_so(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError, match="is not a directory"):
        dw.build_context(str(tmp_path / "missing"))


def test_base_images_resolve_the_image_argument() -> None:
    bases, uses = dw._base_images(dw.DEFAULT_DOCKERFILE, "pytorch/pytorch:2")
    assert (bases, uses) == (["pytorch/pytorch:2"], True)
    own = b"ARG IMAGE\nFROM --platform=linux/amd64 ubuntu:24.04 AS build\nFROM ${IMAGE}\n"
    assert dw._base_images(own, "x:1") == (["ubuntu:24.04", "x:1"], True)
    assert dw._base_images(b"from debian:12\nRUN true\n", "x:1") == (["debian:12"], False)


def test_push_plan_renames_built_images_only() -> None:
    built = specs.Role(name="a", image="sha256:abc123", entrypoint="x")
    stock = specs.Role(name="b", image="python:3.11", entrypoint="x")
    app = specs.AppDef("p", [built, stock])
    plan = _Mixin().dryrun_push_images(app, {"image_repo": "reg.example.com/team/img"})
    assert plan == {"sha256:abc123": ("reg.example.com/team/img", "abc123")}
    assert built.image == "reg.example.com/team/img:abc123"
    assert stock.image == "python:3.11"


def test_push_plan_without_repo_names_the_option() -> None:
    app = specs.AppDef("p", [specs.Role(name="a", image="sha256:abc", entrypoint="x")])
    with pytest.raises(KeyError, match="image_repo"):
        _Mixin().dryrun_push_images(app, {})


def test_workspace_options() -> None:
    opts = _Mixin().workspace_opts()
    assert [k for k, _ in opts] == ["image_repo", "quiet", "build_args"]
    assert opts.cfg_from_str("build_args=PIP_INDEX_URL:https://x/simple") == {
        "build_args": {"PIP_INDEX_URL": "https://x/simple"}
    }


def test_push_events_render_progress_and_raise_on_error() -> None:
    out = io.StringIO()
    dw.print_push_events(
        iter(
            [
                {"status": "The push refers to repository [r/x]"},
                {"id": "l1", "status": "Preparing"},
                {"id": "l1", "status": "Pushing", "progress": "[=>   ] 1MB/5MB"},
                {"id": "l1", "status": "Pushing", "progress": "[==>  ] 2MB/5MB"},
                {"id": "l1", "status": "Pushed"},
            ]
        ),
        stream=out,
    )
    assert out.getvalue().splitlines() == [
        "The push refers to repository [r/x]",
        "l1: Preparing",
        "l1: Pushing [=>   ] 1MB/5MB",
        "l1: Pushed",
    ]
    with pytest.raises(RuntimeError, match="denied"):
        dw.print_push_events(iter([{"error": "denied: requested access"}]), stream=out)


def test_import_does_not_load_the_docker_sdk() -> None:
    code = (
        "import sys, torchx.workspace.docker_workspace\n"
        "print([m for m in sys.modules if m == 'docker' or m.startswith('docker.')])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_connect_without_the_sdk_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['docker'] = None\n"
        "from torchx.workspace.docker_workspace import connect_docker, DockerUnavailableError\n"
        "try:\n    connect_docker()\nexcept DockerUnavailableError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install docker" in out.stdout
