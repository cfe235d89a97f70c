"""The compatibility policy as declared: every distribution requires the release series
of the others (a range, never an exact pin), and bump_version keeps it so."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _bump_module() -> object:
    spec = importlib.util.spec_from_file_location(
        "bump_version", ROOT / "tools" / "bump_version.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bump_version"] = module
    spec.loader.exec_module(module)
    return module


def _torchx_requirements(pyproject: Path) -> list[str]:
    return re.findall(
        r'"(torchx(?:-[a-z0-9-]+)?(?:\[[^\]]*\])?[<>=!~][^"]*)"', pyproject.read_text()
    )


@pytest.mark.parametrize("package", sorted(p.name for p in (ROOT / "packages").iterdir()))
def test_distributions_require_a_release_series(package: str) -> None:
    pyproject = ROOT / "packages" / package / "pyproject.toml"
    requirements = _torchx_requirements(pyproject)
    if package != "torchx-specs":
        assert any(r.startswith("torchx-specs") for r in requirements), requirements
    for requirement in requirements:
        assert "==" not in requirement, f"{package}: exact pin {requirement}"
        assert requirement.endswith(">=0.8.0,<0.9"), f"{package}: {requirement}"


def test_bump_version_moves_versions_and_ranges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for pyproject in (ROOT / "packages").glob("*/pyproject.toml"):
        target = tmp_path / "packages" / pyproject.parent.name / "pyproject.toml"
        target.parent.mkdir(parents=True)
        shutil.copy(pyproject, target)
    version = tmp_path / "packages" / "torchx-specs" / "src" / "torchx" / "_version.py"
    version.parent.mkdir(parents=True)
    shutil.copy(ROOT / "packages" / "torchx-specs" / "src" / "torchx" / "_version.py", version)
    bump = _bump_module()
    monkeypatch.setattr(bump, "ROOT", tmp_path)
    monkeypatch.setattr(bump, "VERSION_FILE", version)
    bump.bump("0.9.0")  # type: ignore[attr-defined]
    assert '__version__ = "0.9.0"' in version.read_text()
    k8s = tmp_path / "packages" / "torchx-sched-k8s" / "pyproject.toml"
    assert 'version = "0.9.0"' in k8s.read_text()
    assert _torchx_requirements(k8s) == [
        "torchx-specs>=0.9.0,<0.10",
        "torchx-workspace-docker>=0.9.0,<0.10",
    ]
    meta = _torchx_requirements(tmp_path / "packages" / "torchx" / "pyproject.toml")
    assert "torchx-sched-k8s[workspace]>=0.9.0,<0.10" in meta
    bump.bump("0.9.1")  # type: ignore[attr-defined]  # a patch release keeps the series
    assert _torchx_requirements(k8s) == [
        "torchx-specs>=0.9.0,<0.10",
        "torchx-workspace-docker>=0.9.0,<0.10",
    ]
