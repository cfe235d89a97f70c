"""What both readers of a component's arguments share: how a parameter is spelled on the
command line, and the error they raise.

The two readers are argparse (:mod:`torchx.specs.component_parser`, which also makes
``--help``) and the plain form of :func:`torchx.util.startup.plain_args.split_options`, which
:mod:`torchx.specs.builders` tries first because it needs no argparse.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Mapping

from torchx.util.startup import fn_params
from torchx.util.startup.fn_params import EMPTY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ComponentArgumentError", "option_strings", "resolved_annotations"]


class ComponentArgumentError(ValueError):
    """An argument of a component is missing or cannot be converted to its type.

    ``usage`` holds the component's usage line so a CLI can print it.
    """

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.usage = usage


def resolved_annotations(fn: Callable[..., Any]) -> dict[str, Any]:
    """Parameter annotations with string annotations (``from __future__ import
    annotations``) resolved when possible.

    A string naming a class (``"str"``, ``"int"``) is looked up directly; anything else
    is evaluated by :func:`typing.get_type_hints`, where names the module does not define
    fall back to :mod:`typing`'s own: a component module may import ``Annotated`` or
    ``Optional`` under ``TYPE_CHECKING`` only.
    """
    params = fn_params.parameters(fn)
    found = {p.name: p.annotation for p in params if p.annotation is not EMPTY}
    strings = {name: a for name, a in found.items() if isinstance(a, str)}
    if not strings:
        return found  # evaluated already
    namespace = _globals_of(fn)
    classes = {name: _class_named(a, namespace) for name, a in strings.items()}
    if all(cls is not None for cls in classes.values()):
        return {**found, **classes}
    import typing

    try:
        return typing.get_type_hints(
            fn, localns=_TypingFallback(namespace, typing), include_extras=True
        )
    except Exception:  # unresolvable forward references: use what the signature has
        return found


def _globals_of(fn: Callable[..., Any]) -> dict[str, Any]:
    """The module namespace ``fn``'s annotations are written in (as ``get_type_hints``
    finds it: through ``__wrapped__``)."""
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    namespace: dict[str, Any] = getattr(fn, "__globals__", {})
    return namespace


def _class_named(annotation: str, namespace: Mapping[str, Any]) -> type | None:
    if not annotation.isidentifier():
        return None
    found = namespace[annotation] if annotation in namespace else vars(builtins).get(annotation)
    return found if isinstance(found, type) else None


class _TypingFallback(dict):  # type: ignore[type-arg]  # a dict: eval takes it as locals
    """The module's names, then :mod:`typing`'s (the locals ``get_type_hints`` evaluates
    annotations with: looked up before the module's globals, so they must come first)."""

    def __init__(self, namespace: Mapping[str, Any], typing: Any) -> None:
        super().__init__()
        self._namespace = namespace
        self._typing = typing

    def __missing__(self, name: str) -> Any:
        if name in self._namespace:
            return self._namespace[name]
        if hasattr(self._typing, name) and not name.startswith("_"):
            return getattr(self._typing, name)
        raise KeyError(name)


def _aliases(annotation: Any) -> list[str]:
    """Extra option spellings from ``Annotated[T, "-x"]`` metadata."""
    typing = sys.modules.get("typing")
    if typing is None:  # nothing made with typing exists yet, so no Annotated either
        return []
    if typing.get_origin(annotation) is not typing.Annotated:
        return []
    return [m for m in typing.get_args(annotation)[1:] if isinstance(m, str) and m.startswith("-")]


def option_strings(name: str, annotation: Any) -> list[str]:
    """How parameter ``name`` is given: its ``Annotated`` aliases, ``-n`` for a one-letter
    name, and ``--name``."""
    flags = _aliases(annotation)
    if len(name) == 1:
        flags.append(f"-{name}")
    flags.append(f"--{name}")
    return flags
