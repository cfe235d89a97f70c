"""Imports sit at the top of a module, except where start-up is measured: the CLI's hot path
(``benchmarks/bench_cli.py``), ``import torchx.specs``, a training process's
``torchx.progress``, and each SDK's one lazy seam. This keeps that true: a bounded number
of imports inside functions, none of a module the interpreter has loaded before any of
ours, and each file that defers one named in ruff's per-file list with its reason."""

from __future__ import annotations

import ast
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
MAX_DEFERRED = 350
"""Imports inside functions, all distributions together (upstream: 30; 778 before)."""
LOADED_AT_START = frozenset({"os", "sys", "time", "stat", "posixpath", "io", "abc", "codecs"})
"""Loaded by the interpreter before any of our code: deferring them saves nothing."""


def _sources() -> list[Path]:
    return sorted(ROOT.glob("packages/*/src/**/*.py"))


def _deferred(path: Path) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return list({id(n): n for n in found}.values())


def _top_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name.split(".")[0] for alias in node.names]
    return [] if node.level else [(node.module or "").split(".")[0]]


def test_imports_inside_functions_are_few() -> None:
    count = sum(len(_deferred(path)) for path in _sources())
    assert count > 0, "the sources were not found"
    assert count <= MAX_DEFERRED, (
        f"{count} imports inside functions (at most {MAX_DEFERRED}): move an import to the"
        " top unless a benchmark row measures the path it is on"
    )


def test_no_module_loaded_at_start_is_deferred() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}"
        for path in _sources()
        for node in _deferred(path)
        if set(_top_names(node)) & LOADED_AT_START
    ]
    assert found == [], "imported inside a function, yet loaded at start:\n" + "\n".join(found)


def test_the_loaded_at_start_list_is_loaded_at_start() -> None:
    shown = subprocess.run(
        [sys.executable, "-c", "import sys; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert set(LOADED_AT_START) <= set(shown)


def test_every_file_that_defers_an_import_says_why() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "PLC0415" not in config.get("ignore", []), "PLC0415 is ignored everywhere again"
    allowed = [
        pattern
        for pattern, rules in config["per-file-ignores"].items()
        if "PLC0415" in rules and "/src/" in pattern
    ]
    unlisted = [
        str(path.relative_to(ROOT))
        for path in _sources()
        if _deferred(path)
        and not any(fnmatch(str(path.relative_to(ROOT)), pattern) for pattern in allowed)
    ]
    assert unlisted == [], "defers an import but is not in pyproject's PLC0415 list:\n" + (
        "\n".join(unlisted)
    )
