"""docs/design.md and the distributions' pyproject files name the same dependencies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _documented(dist: str) -> set[str]:
    table = (ROOT / "docs" / "design.md").read_text()
    row = re.search(rf"^\| `{re.escape(dist)}` \(\+ ([^)]*)\) \|", table, re.MULTILINE)
    assert row, f"no `{dist}` (+ deps) row in docs/design.md"
    return {d.strip() for d in row.group(1).split(",")}


def _declared(dist: str) -> set[str]:
    pyproject = (ROOT / "packages" / dist / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)^\]", pyproject, re.MULTILINE | re.DOTALL)
    assert block, f"no dependencies in packages/{dist}/pyproject.toml"
    deps = re.findall(r'"([^"]+)"', block.group(1))
    names = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0] for d in deps}
    return {n for n in names if not n.startswith("torchx")}


@pytest.mark.parametrize("dist", ["torchx-runner", "torchx-tracker-mlflow"])
def test_design_lists_the_declared_dependencies(dist: str) -> None:
    assert _documented(dist) == _declared(dist)
