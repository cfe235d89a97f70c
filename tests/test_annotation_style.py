"""One annotation style in every module of the repository: lazy annotations, and names the
type checker alone needs imported under ``if TYPE_CHECKING:`` with ``TYPE_CHECKING = False``
defined in the module (the idiom type checkers know; it spares loading :mod:`typing`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _sources() -> list[Path]:
    return sorted(
        path
        for top in ("packages/*/src", "tools/testsupport")
        for src in ROOT.glob(top)
        for path in src.rglob("*.py")
    )


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    problems = []
    guarded = False
    defined = False
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "typing"
            and "TYPE_CHECKING" in names
        ):
            problems.append(f"line {node.lineno}: TYPE_CHECKING imported from typing")
        if isinstance(node, ast.Attribute) and node.attr == "TYPE_CHECKING":
            problems.append(f"line {node.lineno}: typing.TYPE_CHECKING")
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            guarded = True
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == [
            "TYPE_CHECKING"
        ]:
            defined = isinstance(node.value, ast.Constant) and node.value.value is False
    if guarded and not defined:
        problems.append("`if TYPE_CHECKING:` without `TYPE_CHECKING = False` at module level")
    return problems


def test_every_module_writes_type_only_imports_one_way() -> None:
    found = {
        str(path.relative_to(ROOT)): problems
        for path in _sources()
        if (problems := _problems(path))
    }
    assert found == {}


def test_the_check_sees_the_other_style(tmp_path: Path) -> None:
    other = tmp_path / "other.py"
    other.write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import os\n")
    assert len(_problems(other)) == 2
