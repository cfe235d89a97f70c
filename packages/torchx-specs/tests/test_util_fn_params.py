"""torchx.util.startup.fn_params: the parameters inspect.signature reports, without inspect."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from torchx.util.startup import fn_params


def plain(a: int, b: str = "x", *rest: str, c: bool, d: float = 1.0, **extra: int) -> None:
    pass


def positional_only(a, /, b, c=3):  # type: ignore[no-untyped-def]
    pass


def var_only(*args: str) -> None:
    pass


def no_params() -> None:
    pass


def _decorated(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


class WithMethod:
    def method(self, a: int, *, b: int = 2) -> None:
        pass


_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: fn_params.POSITIONAL,
    inspect.Parameter.POSITIONAL_OR_KEYWORD: fn_params.POSITIONAL,
    inspect.Parameter.VAR_POSITIONAL: fn_params.VAR_POSITIONAL,
    inspect.Parameter.KEYWORD_ONLY: fn_params.KEYWORD_ONLY,
    inspect.Parameter.VAR_KEYWORD: fn_params.VAR_KEYWORD,
}


def _expected(fn: Callable[..., Any]) -> list[tuple[str, str, Any, Any]]:
    empty = inspect.Parameter.empty
    return [
        (
            p.name,
            _KINDS[p.kind],
            fn_params.EMPTY if p.default is empty else p.default,
            fn_params.EMPTY if p.annotation is empty else p.annotation,
        )
        for p in inspect.signature(fn).parameters.values()
    ]


@pytest.mark.parametrize(
    "fn",
    [
        plain,
        positional_only,
        var_only,
        no_params,
        _decorated(plain),
        functools.partial(plain, 1),
        WithMethod().method,
        lambda x, y=2: None,
    ],
    ids=["plain", "posonly", "varargs", "none", "wrapped", "partial", "method", "lambda"],
)
def test_parameters_match_inspect_signature(fn: Callable[..., Any]) -> None:
    got = [(p.name, p.kind, p.default, p.annotation) for p in fn_params.parameters(fn)]
    assert got == _expected(fn)


def test_plain_function_values() -> None:
    params = fn_params.parameters(plain)
    assert [p.name for p in params] == ["a", "b", "rest", "c", "d", "extra"]
    assert params[1].default == "x" and params[3].default is fn_params.EMPTY
    assert params[0].annotation == "int"  # unresolved, as written (PEP 563 here)
