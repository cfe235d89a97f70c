"""A function's parameters, read without importing :mod:`inspect` where possible.

Why: ``import inspect`` costs about half a bare interpreter start, and every ``torchx run``
needs the parameters of one component function. A plain Python function lists them in its
code object; any other callable (a ``functools.partial``, a wrapped function, a class)
goes through :func:`inspect.signature`, which knows every corner case.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FunctionType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "EMPTY",
    "KEYWORD_ONLY",
    "POSITIONAL",
    "VAR_KEYWORD",
    "VAR_POSITIONAL",
    "Param",
    "parameters",
]

POSITIONAL = "positional"
"""Positional-only or positional-or-keyword: passed by position."""
VAR_POSITIONAL = "var_positional"
KEYWORD_ONLY = "keyword_only"
VAR_KEYWORD = "var_keyword"

_CO_VARARGS = 0x04
_CO_VARKEYWORDS = 0x08


class _Empty:
    __slots__ = ()

    def __repr__(self) -> str:
        return "EMPTY"


EMPTY: Any = _Empty()
"""The default of a parameter without one, and the annotation of an unannotated one."""


class Param:
    """One parameter: its name, kind, default and (unresolved) annotation."""

    __slots__ = ("annotation", "default", "kind", "name")

    def __init__(self, name: str, kind: str, default: Any = EMPTY, annotation: Any = EMPTY):
        self.name = name
        self.kind = kind
        self.default = default
        self.annotation = annotation

    def __repr__(self) -> str:
        return f"Param({self.name!r}, {self.kind}, default={self.default!r})"


def parameters(fn: Callable[..., Any]) -> list[Param]:
    """The parameters of ``fn`` in signature order (``self`` of a bound method excluded)."""
    if (
        type(fn) is FunctionType
        and "__wrapped__" not in vars(fn)
        and "__signature__" not in vars(fn)
    ):
        return _from_code(fn)
    return _from_inspect(fn)


def _from_code(fn: FunctionType) -> list[Param]:
    code = fn.__code__
    names = code.co_varnames
    annotations = fn.__annotations__
    n_positional = code.co_argcount
    n_keyword = code.co_kwonlyargcount
    defaults = fn.__defaults__ or ()
    keyword_defaults = fn.__kwdefaults__ or {}
    first_default = n_positional - len(defaults)

    result = []
    for i in range(n_positional):
        name = names[i]
        default = defaults[i - first_default] if i >= first_default else EMPTY
        result.append(Param(name, POSITIONAL, default, annotations.get(name, EMPTY)))
    index = n_positional + n_keyword
    if code.co_flags & _CO_VARARGS:
        name = names[index]
        result.append(Param(name, VAR_POSITIONAL, EMPTY, annotations.get(name, EMPTY)))
        index += 1
    for name in names[n_positional : n_positional + n_keyword]:
        default = keyword_defaults.get(name, EMPTY)
        result.append(Param(name, KEYWORD_ONLY, default, annotations.get(name, EMPTY)))
    if code.co_flags & _CO_VARKEYWORDS:
        name = names[index]
        result.append(Param(name, VAR_KEYWORD, EMPTY, annotations.get(name, EMPTY)))
    return result


def _from_inspect(fn: Callable[..., Any]) -> list[Param]:
    import inspect

    kinds = {
        inspect.Parameter.POSITIONAL_ONLY: POSITIONAL,
        inspect.Parameter.POSITIONAL_OR_KEYWORD: POSITIONAL,
        inspect.Parameter.VAR_POSITIONAL: VAR_POSITIONAL,
        inspect.Parameter.KEYWORD_ONLY: KEYWORD_ONLY,
        inspect.Parameter.VAR_KEYWORD: VAR_KEYWORD,
    }
    empty = inspect.Parameter.empty
    return [
        Param(
            p.name,
            kinds[p.kind],
            EMPTY if p.default is empty else p.default,
            EMPTY if p.annotation is empty else p.annotation,
        )
        for p in inspect.signature(fn).parameters.values()
    ]
