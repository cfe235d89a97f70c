"""Upstream's ``torchx`` (PyPI's) and this project's distributions in one environment:
each overwrites the other's modules, and the one installed last owns the ``torchx``
command. ``torchx check`` says which is which; where upstream's took the command (it has
no ``check``), ``python -m torchx.util.support.provenance`` does."""

from __future__ import annotations

import subprocess
from pathlib import Path

from torchx_testsupport import build_wheels, fresh_venv

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = "torchx==0.7.0"  # the last upstream release on PyPI


def test_a_mixed_install_says_which_torchx_is_which(tmp_path: Path) -> None:
    wheels = build_wheels(ROOT, ["torchx-specs", "torchx-runner", "torchx-cli"], tmp_path / "w")
    python, install = fresh_venv(tmp_path / "venv")
    torchx = str(python.parent / "torchx")
    subprocess.run([*install, UPSTREAM], check=True, capture_output=True)
    subprocess.run([*install, *map(str, wheels)], check=True, capture_output=True)

    # ours installed last: its `torchx check` names the mix and whose the command is
    check = subprocess.run([torchx, "check"], capture_output=True, text=True, timeout=120)
    assert check.returncode == 1
    assert "a mixed install: upstream TorchX 0.7.0" in check.stdout
    assert "the `torchx` command is torchx-cli 0.8.0's (installed last)" in check.stdout

    # upstream's installed last: its command has no `check`; the module still tells
    subprocess.run(
        [*install, "--force-reinstall", "--no-deps", UPSTREAM], check=True, capture_output=True
    )
    version = subprocess.run([torchx, "--version"], capture_output=True, text=True, timeout=60)
    assert "0.7.0" in version.stdout + version.stderr
    report = subprocess.run(
        [str(python), "-m", "torchx.util.support.provenance"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert report.returncode == 0, report.stderr
    assert "the `torchx` command: upstream TorchX's" in report.stdout
    assert "a mixed install" in report.stdout
