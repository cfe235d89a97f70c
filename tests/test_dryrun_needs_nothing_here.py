"""A dry run shows the plan for wherever the job will run: nothing on this host is needed
(no torchrun, no cluster program on PATH, no Docker daemon) and nothing is written there.

Each command is one a public project documents; each runs the real ``torchx`` CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TORCHX = [sys.executable, "-m", "torchx.cli.main"]
# as if torchx were installed outside a venv, whose bin (with torchrun) jobs would inherit
TORCHX_OUTSIDE_VENV = [
    sys.executable,
    "-c",
    "import sys; sys.base_prefix = sys.prefix; from torchx.cli.main import main; main()",
]
CLOSED_DOCKER = "tcp://127.0.0.1:9"  # the discard port: nothing answers there


def _torchx(
    *args: str, cwd: Path, path: str | None = None, command: list[str] = TORCHX
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHX_", "DOCKER_"))}
    env["TORCHX_HOME"] = str(cwd / "home")
    env["DOCKER_HOST"] = CLOSED_DOCKER
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if " WARNING " in line]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("print('training')\n")
    return tmp_path


def test_ddp_dry_run_without_torchrun(project: Path) -> None:
    """`torchx run --dryrun -s local_cwd dist.ddp -j 2x4 --script train.py` on a host
    without torch: the plan, one warning; the real run is still refused before launch."""
    bare_path = "/usr/bin:/bin"  # no torchrun (the venv's bin is not on it either)
    args = ("-s", "local_cwd", "dist.ddp", "-j", "2x4", "--script", "train.py")
    dry = _torchx(
        "run", "--dryrun", *args, cwd=project, path=bare_path, command=TORCHX_OUTSIDE_VENV
    )
    assert dry.returncode == 0, dry.stderr
    assert "=== SCHEDULER REQUEST ===" in dry.stdout
    assert len(_warnings(dry.stderr)) == 1
    assert _warnings(dry.stderr)[0].endswith("(a real run would be refused)")
    real = _torchx("run", *args, cwd=project, path=bare_path, command=TORCHX_OUTSIDE_VENV)
    assert real.returncode != 0
    assert "torchrun not found" in real.stderr and "Traceback" not in real.stderr


def test_slurm_dry_run_of_a_program_only_the_nodes_have(project: Path) -> None:
    dry = _torchx(
        "run", "--dryrun", "-s", "slurm", "utils.binary", "--entrypoint", "some_tool",
        cwd=project,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "some_tool" in dry.stdout
    (warning,) = _warnings(dry.stderr)
    assert "'some_tool' of role 'binary' is not on this host's PATH" in warning


def test_slurm_dry_run_with_job_dir_writes_nothing(project: Path) -> None:
    job_dir = project / "runs" / "job1"
    dry = _torchx(
        "run", "--dryrun", "-s", "slurm", "-cfg", f"job_dir={job_dir}",
        "utils.sh", "python3", "train.py", cwd=project,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert str(job_dir) in dry.stdout  # the plan runs the job from there
    assert not (project / "runs").exists()  # ... which only a real run creates


@pytest.mark.parametrize(
    ("scheduler", "cfg"),
    [
        ("kubernetes", "queue=default,image_repo=registry.example/team/trainer"),
        ("aws_batch", "queue=q1,image_repo=registry.example/team/trainer"),
        ("local_docker", ""),
    ],
)
def test_workspace_dry_run_needs_no_docker_daemon(project: Path, scheduler: str, cfg: str) -> None:
    """The default workspace (this directory) is shown as what would be built, not built."""
    args = ["run", "--dryrun", "-s", scheduler]
    if cfg:
        args += ["-cfg", cfg]
    dry = _torchx(*args, "dist.ddp", "-j", "1x1", "--script", "train.py", cwd=project)
    assert dry.returncode == 0, dry.stderr
    assert f"workspace {project} built onto ghcr.io/pytorch/torchx" in dry.stdout
    assert "Docker daemon" not in dry.stderr
    if cfg:  # the pushed name is planned too, so a missing image_repo is still caught
        assert "registry.example/team/trainer:<workspace" in dry.stdout
