"""``json.dumps(value, indent=2, default=str)`` for what a dry run prints, without :mod:`json`.

Why: importing :mod:`json` compiles half a dozen regular expressions, about a twentieth
of a ``torchx run --dryrun``, to print documents of dicts, lists, strings and numbers.
Strings are escaped by the C function :mod:`json` itself uses; anything this writer does
not handle exactly as :mod:`json` does (a non-string key, a float that is not finite)
is handed to :func:`json.dumps`.
"""

from math import isfinite

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["indented_json"]


class _NotPlain(Exception):
    """The value holds something only :mod:`json` writes right."""


def indented_json(value: "Any") -> str:
    """``json.dumps(value, indent=2, default=str)``."""
    from _json import encode_basestring_ascii

    out: list[str] = []
    try:
        _write(value, 0, encode_basestring_ascii, out)
    except _NotPlain:
        import json

        return json.dumps(value, indent=2, default=str)
    return "".join(out)


def _write(value: "Any", level: int, quote: "Callable[[str], str]", out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(quote(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if not isfinite(value):
            raise _NotPlain
        out.append(float.__repr__(value))
    elif isinstance(value, list | tuple | dict):
        _write_container(value, level, quote, out)
    else:
        _write(str(value), level, quote, out)  # default=str


def _write_container(
    value: "list[Any] | tuple[Any, ...] | dict[Any, Any]",
    level: int,
    quote: "Callable[[str], str]",
    out: list[str],
) -> None:
    is_dict = isinstance(value, dict)
    if not value:
        out.append("{}" if is_dict else "[]")
        return
    inner = "\n" + "  " * (level + 1)
    out.append("{" if is_dict else "[")
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for i, (key, item) in enumerate(items):
        out.append("," + inner if i else inner)
        if is_dict:
            if not isinstance(key, str):
                raise _NotPlain
            out.append(quote(key))
            out.append(": ")
        _write(item, level + 1, quote, out)
    out.append("\n" + "  " * level + ("}" if is_dict else "]"))
