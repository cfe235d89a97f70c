"""String decoding for component arguments and run options.

Component parameters and ``-cfg`` options arrive from the command line as strings; these
helpers turn them into the annotated Python types (``bool``, ``list[T]``, ``dict[K, V]``,
``T | None``, ``Annotated[T, ...]``) with one-line errors naming the bad value.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable

from torchx.util.startup.fn_params import EMPTY

TYPE_CHECKING = False
if TYPE_CHECKING:
    import inspect
    from typing import Any, TypeVar

    from torchx.util.startup.fn_params import Param

    _T = TypeVar("_T")

__all__ = [
    "BOOL_FALSE",
    "BOOL_TRUE",
    "decode",
    "decode_from_string",
    "decode_optional",
    "get_argparse_param_type",
    "is_bool",
    "is_optional",
    "is_primitive",
    "none_throws",
    "strip_annotated",
    "to_bool",
    "to_dict",
    "to_list",
]

BOOL_TRUE = ("true", "1", "yes", "on")
BOOL_FALSE = ("false", "0", "no", "off")

_PAIR_DELIMITERS = ",;"
_QUOTES = "'\""


def to_list(arg: str) -> list[str]:
    """Splits ``"a, b,c"`` on commas into stripped items; a blank string is ``[]``."""
    if not arg.strip():
        return []
    return [item.strip() for item in arg.split(",")]


def to_bool(value: str | bool) -> bool:
    """``true/1/yes/on`` → True and ``false/0/no/off`` → False (any case)."""
    if isinstance(value, bool):
        return value
    lowered = value.strip().lower()
    if lowered in BOOL_TRUE:
        return True
    if lowered in BOOL_FALSE:
        return False
    raise ValueError(
        f"`{value}` is not a boolean; accepted values: {', '.join(BOOL_TRUE + BOOL_FALSE)}"
    )


class _Text:
    """A string with quotes removed, remembering which characters were quoted."""

    def __init__(self, chars: str, quoted: list[bool], empty_quotes: tuple[int, ...] = ()) -> None:
        self.chars = chars
        self.quoted = quoted
        self.empty_quotes = empty_quotes  # where a '' or "" stood (it left no character)

    @staticmethod
    def parse(arg: str) -> _Text:
        """Removes quotes that open a key or value (``'...'`` / ``"..."``).

        A quote in the middle of a word (``don't``) is an ordinary character.
        """
        chars: list[str] = []
        quoted: list[bool] = []
        empty_quotes: list[int] = []
        quote = ""
        opened_at = 0
        token_start = True
        for ch in arg:
            if quote:
                if ch == quote:
                    quote = ""
                    if len(chars) == opened_at:
                        empty_quotes.append(opened_at)
                else:
                    chars.append(ch)
                    quoted.append(True)
                continue
            if ch in _QUOTES and token_start:
                quote = ch
                opened_at = len(chars)
                token_start = False
                continue
            chars.append(ch)
            quoted.append(False)
            if ch in _PAIR_DELIMITERS or ch == "=":
                token_start = True
            elif not ch.isspace():
                token_start = False
        if quote:
            raise ValueError(f"`{arg}` has an unterminated {quote} quote")
        return _Text("".join(chars), quoted, tuple(empty_quotes))

    def split(self, sep: str) -> list[_Text]:
        """Splits on unquoted occurrences of ``sep`` (a single character)."""
        parts: list[_Text] = []
        start = 0
        for i, ch in enumerate(self.chars):
            if ch == sep and not self.quoted[i]:
                parts.append(self[start:i])
                start = i + 1
        parts.append(self[start:])
        return parts

    def rfind_unquoted(self, candidates: str) -> int:
        for i in range(len(self.chars) - 1, -1, -1):
            if self.chars[i] in candidates and not self.quoted[i]:
                return i
        return -1

    def strip(self) -> str:
        """The text without unquoted leading/trailing whitespace."""
        start, end = 0, len(self.chars)
        while start < end and self.chars[start].isspace() and not self.quoted[start]:
            start += 1
        while end > start and self.chars[end - 1].isspace() and not self.quoted[end - 1]:
            end -= 1
        return self.chars[start:end]

    def __getitem__(self, s: slice) -> _Text:
        start, stop, _ = s.indices(len(self.chars))
        empty = tuple(p - start for p in self.empty_quotes if start <= p <= stop)
        return _Text(self.chars[s], self.quoted[s], empty)

    def value(self, arg: str) -> str:
        """The stripped text as a value: an unquoted empty one is refused, as every
        upstream release refuses ``FOO=`` (``FOO=''`` is the empty string)."""
        text = self.strip()
        if not text and not self.empty_quotes:
            from torchx.util.support.secrets import mask_text  # the text may hold credentials

            raise ValueError(
                f"`{mask_text(arg)}` has a key without a value; write KEY=VALUE, or KEY=''"
                " for an empty value"
            )
        return text


def to_dict(arg: str) -> dict[str, str]:
    """Parses ``KEY=VALUE`` pairs separated by ``,`` or ``;`` into a dict of strings.

    A value may itself be a list literal using the same delimiters; the LAST delimiter
    before the next ``=`` separates the pairs, so ``FOO=v1,v2,BAR=v3`` is
    ``{"FOO": "v1,v2", "BAR": "v3"}``. Quote a value (``'...'`` or ``"..."``) to keep
    ``=``, ``,`` or ``;`` in it; ``FOO=''`` is the empty string. List literals are
    returned as strings: the caller decodes them.
    """
    if not arg or not arg.strip():
        return {}
    segments = _Text.parse(arg).split("=")
    if len(segments) < 2:
        raise ValueError(f"`{arg}` is not of the form KEY=VALUE[,KEY=VALUE...]")
    result: dict[str, str] = {}
    key = segments[0].strip()
    for segment in segments[1:-1]:
        idx = segment.rfind_unquoted(_PAIR_DELIMITERS)
        if idx == -1:
            from torchx.util.support.secrets import mask_text  # the text may hold credentials

            raise ValueError(
                f"cannot tell where the value `{mask_text(segment.strip())}` ends and the"
                f" next key starts in `{mask_text(arg)}`; separate pairs with `,` or `;` and"
                " quote values containing `=`"
            )
        _store(result, key, segment[:idx].value(arg), arg)
        key = segment[idx + 1 :].strip()
    _store(result, key, segments[-1].value(arg), arg)
    return result


def _store(result: dict[str, str], key: str, value: str, arg: str) -> None:
    if not key:
        raise ValueError(f"`{arg}` has a value without a key; expected KEY=VALUE[,KEY=VALUE...]")
    result[key] = value


# `typing` is asked only once something imported it: before that no annotation can be an
# `Annotated`, `Optional`, `Union` or `Any`, and a `list[str]` or `int | None` answers itself.
def _origin(tp: Any) -> Any:
    typing = sys.modules.get("typing")
    if typing is not None:
        return typing.get_origin(tp)
    if isinstance(tp, (types.GenericAlias, types.UnionType)):
        return types.UnionType if isinstance(tp, types.UnionType) else tp.__origin__
    return None


def _args(tp: Any) -> tuple[Any, ...]:
    typing = sys.modules.get("typing")
    if typing is not None:
        args: tuple[Any, ...] = typing.get_args(tp)
        return args
    if isinstance(tp, (types.GenericAlias, types.UnionType)):
        return tp.__args__
    return ()


def _is_typing(tp: Any, name: str) -> bool:
    """Whether ``tp`` is ``typing.<name>`` (``Any``, ``Union``, ``Annotated``)."""
    typing = sys.modules.get("typing")
    return typing is not None and tp is getattr(typing, name)


def strip_annotated(tp: Any) -> Any:
    """``Annotated[T, ...]`` → ``T``; anything else unchanged."""
    while _is_typing(_origin(tp), "Annotated"):
        tp = _args(tp)[0]
    return tp


def _is_union(tp: Any) -> bool:
    origin = _origin(tp)
    return origin is types.UnionType or _is_typing(origin, "Union")


def is_optional(tp: Any) -> bool:
    """Whether ``tp`` (possibly ``Annotated``) is a union containing ``None``."""
    tp = strip_annotated(tp)
    return _is_union(tp) and type(None) in _args(tp)


def decode_optional(param_type: Any) -> Any:
    """The inner type of ``Optional[T]``, ``T | None`` or ``None | T`` (any position).

    ``Annotated`` wrappers are removed first. A union of several non-None types keeps
    those types (``int | str | None`` → ``int | str``); anything else is returned as is.
    """
    tp = strip_annotated(param_type)
    if not _is_union(tp):
        return tp
    members = [strip_annotated(a) for a in _args(tp) if a is not type(None)]
    if len(members) == len(_args(tp)):
        return tp
    if len(members) == 1:
        return members[0]
    import typing

    return typing.Union[tuple(members)]  # noqa: UP007 (built dynamically)


def is_bool(param_type: Any) -> bool:
    """Whether ``param_type`` is ``bool``."""
    return strip_annotated(param_type) is bool


def is_primitive(param_type: Any) -> bool:
    """Whether ``param_type`` is one of ``int``, ``str``, ``float``."""
    return strip_annotated(param_type) in (int, str, float)


def _decode_scalar(value: str, tp: Any, what: str) -> Any:
    tp = decode_optional(tp)
    if tp is bool:
        return to_bool(value)
    if tp in (int, float, str):
        try:
            return tp(value)
        except ValueError:
            raise ValueError(f"{what} `{value}` is not a valid {tp.__name__}") from None
    if _is_typing(tp, "Any"):
        return value
    raise ValueError(
        f"{what} type {getattr(tp, '__name__', tp)} is not supported; use int, str, float or bool"
    )


def decode_from_string(
    encoded_value: str, annotation: Any
) -> dict[Any, Any] | list[Any] | tuple[Any, ...] | None:
    """Decodes ``a,b`` into ``list[T]``/``tuple[...]`` or ``k=v,k2=v2`` into ``dict[K, V]``.

    Element types must be ``int``, ``str``, ``float`` or ``bool``. An empty string
    decodes to ``None``.
    """
    if not encoded_value:
        return None
    tp = decode_optional(annotation)
    origin = _origin(tp) or tp
    args = _args(tp)
    if origin is dict:
        key_type, value_type = args if len(args) == 2 else (str, str)
        return {
            _decode_scalar(k, key_type, "key"): _decode_scalar(v, value_type, "value")
            for k, v in to_dict(encoded_value).items()
        }
    if origin is list:
        item_type = args[0] if args else str
        return [_decode_scalar(v, item_type, "item") for v in to_list(encoded_value)]
    if origin is tuple:
        return _decode_tuple(encoded_value, args)
    raise ValueError(
        f"cannot decode `{encoded_value}` into {annotation}; only list[T], tuple[...] and"
        " dict[K, V] are decoded from strings"
    )


def _decode_tuple(encoded_value: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    items = to_list(encoded_value)
    if not args:
        return tuple(items)
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_decode_scalar(v, args[0], "item") for v in items)
    if len(items) != len(args):
        raise ValueError(
            f"`{encoded_value}` has {len(items)} items; expected exactly {len(args)}"
            f" comma-separated values"
        )
    return tuple(_decode_scalar(v, t, "item") for v, t in zip(items, args, strict=True))


def decode(encoded_value: Any, annotation: Any) -> Any:
    """Converts a CLI string into ``annotation``'s type; non-strings pass through.

    ``bool`` accepts ``true/false/1/0/yes/no/on/off``; ``list``/``dict`` use
    ``to_list``/``to_dict``; ``T | None`` and ``Annotated[T, ...]`` decode as ``T``.
    """
    if encoded_value is None:
        return None
    tp = decode_optional(annotation)
    if not isinstance(encoded_value, str):
        return encoded_value
    if tp is bool:
        return to_bool(encoded_value)
    if tp in (int, float):
        return _decode_scalar(encoded_value, tp, "value")
    if tp is str or _is_typing(tp, "Any") or _is_signature_empty(tp):
        return encoded_value
    if (_origin(tp) or tp) in (list, dict, tuple):
        return decode_from_string(encoded_value, tp)
    return encoded_value


def _is_signature_empty(tp: Any) -> bool:
    """No annotation: ours or ``inspect.Parameter.empty`` (without importing inspect to ask)."""
    if tp is EMPTY:
        return True
    module = sys.modules.get("inspect")
    return module is not None and tp is module.Parameter.empty


def get_argparse_param_type(parameter: inspect.Parameter | Param) -> Callable[[str], object]:
    """The ``type=`` for argparse: the annotation when it is int/str/float, else ``str``."""
    annotation = strip_annotated(parameter.annotation)
    if annotation in (int, str, float):
        converter: Callable[[str], object] = annotation
        return converter
    return str


def none_throws(optional: _T | None, message: str = "Unexpected `None`") -> _T:
    """Returns ``optional``, raising ``AssertionError(message)`` when it is ``None``."""
    if optional is None:
        raise AssertionError(message)
    return optional
