"""The component linter (``torchx.specs.file_linter``) on real source files."""

from __future__ import annotations

import argparse
import ast
import textwrap
from pathlib import Path

import pytest

from torchx.specs.file_linter import (
    ArgTypeValidator,
    ComponentFunctionValidator,
    LinterMessage,
    ReturnTypeValidator,
    TorchXArgumentHelpFormatter,
    get_fn_docstring,
    validate,
)

HEADER = """
from typing import Annotated, Dict, List, Optional, Tuple
import torchx.specs as specs
from torchx.specs import AppDef
"""


def _lint(tmp_path: Path, body: str, fn: str = "comp") -> list[LinterMessage]:
    path = tmp_path / "component.py"
    path.write_text(textwrap.dedent(HEADER) + textwrap.dedent(body))
    return validate(str(path), fn)


@pytest.mark.parametrize(
    "signature",
    [
        "def comp(a: int, b: str, c: float, d: bool) -> AppDef: ...",
        "def comp(a: Optional[int] = None, b: int | None = None) -> AppDef: ...",
        "def comp(c: None | str = None) -> AppDef: ...",
        "def comp(a: Dict[str, int], b: dict[str, str] | None = None) -> AppDef: ...",
        "def comp(a: List[str], b: Optional[list[int]] = None) -> AppDef: ...",
        "def comp(a: Tuple[int, str], b: tuple[int, ...], c: tuple[int]) -> AppDef: ...",
        "def comp(*args: str, name: str, n: int = 1) -> specs.AppDef: ...",
        'def comp(config_name: Annotated[str, "-cn"] = "x") -> AppDef: ...',
        'def comp(a: Annotated[Optional[List[str]], "-a"] = None) -> "AppDef": ...',
        'def comp(a: "int", b: "Optional[str]" = None) -> "specs.AppDef": ...',
    ],
)
def test_valid_components(tmp_path: Path, signature: str) -> None:
    assert _lint(tmp_path, signature) == []


@pytest.mark.parametrize(
    ("signature", "reason"),
    [
        ("def comp(a) -> AppDef: ...", "Missing type annotation for argument 'a'"),
        ("def comp(*args) -> AppDef: ...", "Missing type annotation for argument 'args'"),
        ("def comp(*, k) -> AppDef: ...", "Missing type annotation for argument 'k'"),
        ("def comp(a: Dict[str, List[str]]) -> AppDef: ...", "Non-primitive value type"),
        ("def comp(a: Dict[List[str], str]) -> AppDef: ...", "Non-primitive key type"),
        ("def comp(a: dict[str]) -> AppDef: ...", "must have exactly a key and a value"),
        ("def comp(a: List[Dict[str, str]]) -> AppDef: ...", "Non-primitive element type"),
        ("def comp(a: tuple[List[int]]) -> AppDef: ...", "Non-primitive element type"),
        ("def comp(a: Set[str]) -> AppDef: ...", "Unsupported container type 'Set'"),
        ("def comp(a: 1 + 2) -> AppDef: ...", "Unsupported argument type"),
    ],
)
def test_invalid_argument_types(tmp_path: Path, signature: str, reason: str) -> None:
    (message,) = _lint(tmp_path, signature)
    assert reason in message.description
    assert "in function 'comp'" in message.description
    assert message.name == "TorchxFunctionValidator"
    assert message.severity == "error"
    assert message.line == 5


@pytest.mark.parametrize(
    ("returns", "expected"),
    [
        ("", "missing return annotation"),
        (" -> int", "has incorrect return annotation"),
        (" -> Optional[AppDef]", "missing return annotation or has unknown annotations"),
    ],
)
def test_return_type(tmp_path: Path, returns: str, expected: str) -> None:
    (message,) = _lint(tmp_path, f"def comp(a: int){returns}: ...")
    assert expected in message.description
    assert "AppDef" in message.description


def test_syntax_error_is_reported_as_a_message(tmp_path: Path) -> None:
    (message,) = _lint(tmp_path, "def comp(a: int -> AppDef: ...")
    assert message.name == "TorchXValidator"
    assert message.line == 5


def test_missing_function(tmp_path: Path) -> None:
    (message,) = _lint(tmp_path, "def other(a: int) -> AppDef: ...", fn="comp")
    assert message.description == "Function comp not found"


def test_custom_validators_replace_the_defaults(tmp_path: Path) -> None:
    class NoVarArgs(ComponentFunctionValidator):
        def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
            if app_specs_func_def.args.vararg:
                return [self._gen_linter_message("no *args please", app_specs_func_def.lineno)]
            return []

    path = tmp_path / "c.py"
    path.write_text("def comp(*args):\n    pass\n")
    (message,) = validate(str(path), "comp", validators=[NoVarArgs()])
    assert message.description == "no *args please"
    assert validate(str(path), "comp", validators=[]) == []
    assert len(validate(str(path), "comp", validators=[ArgTypeValidator()])) == 1
    assert len(validate(str(path), "comp", validators=[ReturnTypeValidator("AppDef")])) == 1


def test_get_fn_docstring() -> None:
    def documented(name: str, count: int = 1, other: str = "") -> None:
        """Launches things.

        Longer explanation
        over two lines.

        Args:
            name: the name
            count: how many
        """
        del name, count, other

    description, params = get_fn_docstring(documented)
    assert description == "Launches things.\nLonger explanation\nover two lines."
    assert params == {"name": "the name", "count": "how many", "other": " "}


def test_get_fn_docstring_without_docstring() -> None:
    def bare(x: int) -> None:
        del x

    description, params = get_fn_docstring(bare)
    assert description.startswith("bare TIP: improve this help string by adding a docstring")
    assert params == {"x": " "}


def test_help_formatter_appends_required_and_default() -> None:
    parser = argparse.ArgumentParser(
        prog="p", formatter_class=TorchXArgumentHelpFormatter, add_help=False
    )
    parser.add_argument("--help", action="help", default=argparse.SUPPRESS, help="show help")
    parser.add_argument("--name", type=str, required=True, help="the name")
    parser.add_argument("--count", type=int, default=3, help="how many")
    text = parser.format_help()
    assert "the name (required)" in text
    assert "how many (default: 3)" in text
    assert "--count int" in text
    assert "show help\n" in text
