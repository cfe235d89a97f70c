"""The shared ``torchx`` namespace works for wheel installs and editable installs alike.

``torchx.schedulers`` is a package of ``torchx-specs`` while
``torchx.schedulers.local_scheduler`` ships in ``torchx-runner``; the same split holds for
``torchx.tracker`` and ``torchx.workspace``. Wheels merge into one site-packages directory,
editable installs keep one ``src`` tree per distribution on ``sys.path``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from torchx_testsupport import build_wheels, fresh_venv

ROOT = Path(__file__).resolve().parent.parent
SPLIT_MODULES = [
    "torchx.schedulers.local_scheduler",  # runner module inside a specs package
    "torchx.tracker.backend.fsspec",
    "torchx.workspace.dir_workspace",
    "torchx.workspace.docker_workspace",  # its own distribution inside a specs package
    "torchx.runner",
    "torchx.cli.main",
]

PROBE = """
import importlib, sys
import torchx.specs, torchx.schedulers
for name in sys.argv[1:]:
    importlib.import_module(name)
from torchx.schedulers import get_scheduler_factories
print(sorted(get_scheduler_factories()))
print(torchx.__version__)
"""

DISTS = [p.name for p in sorted((ROOT / "packages").iterdir()) if (p / "pyproject.toml").exists()]


def test_editable_install_spans_src_trees() -> None:
    import torchx.schedulers

    # In the dev env each distribution is an editable install of its own src tree.
    owners = {Path(p).parts[-4] for p in torchx.schedulers.__path__}
    assert {"torchx-specs", "torchx-runner"} <= owners
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *SPLIT_MODULES], capture_output=True, text=True, check=True
    )
    assert "local_cwd" in out.stdout


@pytest.mark.slow
def test_wheel_install_merges_into_one_namespace(tmp_path: Path) -> None:
    wheels = build_wheels(ROOT, DISTS, tmp_path / "wheels")
    assert {w.name.split("-")[0] for w in wheels} == {d.replace("-", "_") for d in DISTS}
    venv = tmp_path / "venv"
    python, install = fresh_venv(venv)
    # The meta-package alone, with our wheels as the only source of torchx-*: it must pull
    # in every distribution; the SDKs come from the package index.
    meta = next(w for w in wheels if w.name.startswith("torchx-"))
    done = subprocess.run(
        [*install, "--find-links", str(meta.parent), str(meta)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    out = subprocess.run(
        [str(python), "-c", PROBE, *SPLIT_MODULES],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    for scheduler in ("local_cwd", "local_docker", "slurm", "kubernetes", "aws_batch", "ray"):
        assert f"'{scheduler}'" in out.stdout
    # Every module came from the one merged site-packages directory.
    where = subprocess.run(
        [str(python), "-c", "import torchx.schedulers as s; print(s.__path__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert where.stdout.count("site-packages") == 1
    version = subprocess.run(
        [str(venv / "bin" / "torchx"), "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout.strip().startswith("torchx-")
