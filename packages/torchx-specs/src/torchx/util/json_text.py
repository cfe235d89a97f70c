"""JSON text of plain data (dicts, lists, strings, numbers), written without :mod:`json`.

Why: importing :mod:`json` compiles half a dozen regular expressions (and imports
:mod:`re`), about a tenth of a ``torchx run``, which writes a few small documents: the
dry run's app and request, and ``local_cwd``'s state files (written by its supervisor
too, before it may start the replicas). Strings are escaped by the C function :mod:`json`
itself uses. Anything this writer does not write exactly as :mod:`json` does (a key that
is not a string, a float that is not finite, and in :func:`compact` any value that is not
plain data) is handed to :func:`json.dumps`, which writes it or raises as it always does.
"""

from _json import encode_basestring_ascii
from math import isfinite

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["compact", "indented"]


class _NotPlain(Exception):
    """The value holds something only :mod:`json` writes right."""


def indented(value: "Any") -> str:
    """``json.dumps(value, indent=2, default=str)``."""
    try:
        return _Writer(indent="  ", key_separator=": ", stringify=True).text(value)
    except _NotPlain:
        import json

        return json.dumps(value, indent=2, default=str)


def compact(value: "Any") -> str:
    """``json.dumps(value, separators=(",", ":"))``."""
    try:
        return _Writer(indent=None, key_separator=":", stringify=False).text(value)
    except _NotPlain:
        import json

        return json.dumps(value, separators=(",", ":"))


class _Writer:
    def __init__(self, indent: "str | None", key_separator: str, stringify: bool) -> None:
        self._quote: Callable[[str], str] = encode_basestring_ascii
        self._indent = indent
        self._key_separator = key_separator
        self._stringify = stringify  # default=str: anything else is written as its str()
        self._out: list[str] = []

    def text(self, value: "Any") -> str:
        self._write(value, 0)
        return "".join(self._out)

    def _write(self, value: "Any", level: int) -> None:
        out = self._out
        if value is None:
            out.append("null")
        elif value is True:
            out.append("true")
        elif value is False:
            out.append("false")
        elif isinstance(value, str):
            out.append(self._quote(value))
        elif isinstance(value, int):
            out.append(int.__repr__(value))
        elif isinstance(value, float):
            if not isfinite(value):
                raise _NotPlain
            out.append(float.__repr__(value))
        elif isinstance(value, list | tuple | dict):
            self._write_container(value, level)
        elif self._stringify:
            self._write(str(value), level)
        else:
            raise _NotPlain

    def _write_container(
        self, value: "list[Any] | tuple[Any, ...] | dict[Any, Any]", level: int
    ) -> None:
        out = self._out
        is_dict = isinstance(value, dict)
        if not value:
            out.append("{}" if is_dict else "[]")
            return
        if self._indent is None:
            inner, close = "", ""
        else:
            inner, close = "\n" + self._indent * (level + 1), "\n" + self._indent * level
        out.append("{" if is_dict else "[")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for i, (key, item) in enumerate(items):
            out.append("," + inner if i else inner)
            if is_dict:
                if not isinstance(key, str):
                    raise _NotPlain
                out.append(self._quote(key))
                out.append(self._key_separator)
            self._write(item, level + 1)
        out.append(close + ("}" if is_dict else "]"))
