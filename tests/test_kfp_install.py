"""The combination the KFP adapter's README promises: `pip install torchx-pipelines-kfp
torchx-sched-k8s torchx-cli` resolves in a fresh venv (kfp pins kubernetes<31, protobuf<7,
requests and urllib3 exactly) and the Kubernetes scheduler works there (a dry run)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from torchx_testsupport import build_wheels, fresh_venv

ROOT = Path(__file__).resolve().parent.parent
DISTS = [
    "torchx-specs",
    "torchx-runner",
    "torchx-cli",
    "torchx-workspace-docker",
    "torchx-sched-k8s",
    "torchx-pipelines-kfp",
]


@pytest.mark.slow
def test_kfp_k8s_and_cli_resolve_together(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build_wheels(ROOT, DISTS, wheels)
    python, install = fresh_venv(tmp_path / "venv")
    done = subprocess.run(
        [*install, "--find-links", str(wheels),
         "torchx-pipelines-kfp", "torchx-sched-k8s", "torchx-cli"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    versions = subprocess.run(
        [str(python), "-c",
         "import kfp, kubernetes; print(kfp.__version__, kubernetes.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert versions[0].startswith("2.") and int(versions[1].split(".")[0]) < 31
    dry = subprocess.run(
        [str(python.parent / "torchx"), "run", "-s", "kubernetes", "-cfg", "queue=default",
         "--workspace", "", "--dryrun", "utils.echo", "--msg", "hi"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "kind: Job" in dry.stdout
    adapter = subprocess.run(
        [str(python), "-c", "from torchx.pipelines.kfp.adapter import container_from_app"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert adapter.returncode == 0, adapter.stderr
