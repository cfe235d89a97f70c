"""String decoding of component arguments and run options (``torchx.util.types``).

The legacy ``typing.Optional``/``List``/``Dict`` spellings are tested on purpose: components
in the wild still use them.
"""

# ruff: noqa: UP006, UP007, UP035, UP045

from __future__ import annotations

import inspect
from typing import Annotated, Dict, List, Optional, Union

import pytest

from torchx.util.types import (
    decode,
    decode_from_string,
    decode_optional,
    get_argparse_param_type,
    is_bool,
    is_optional,
    is_primitive,
    none_throws,
    strip_annotated,
    to_bool,
    to_dict,
    to_list,
)


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("", {}),
        ("   ", {}),
        ("FOO=v1", {"FOO": "v1"}),
        ("FOO=''", {"FOO": ""}),
        ('FOO=""', {"FOO": ""}),
        ("FOO=v1,v2", {"FOO": "v1,v2"}),
        ("FOO=v1;v2", {"FOO": "v1;v2"}),
        ("FOO=v1,v2,BAR=v3", {"FOO": "v1,v2", "BAR": "v3"}),
        ("FOO=v1;v2,BAR=v3", {"FOO": "v1;v2", "BAR": "v3"}),
        ("FOO=v1;v2;BAR=v3", {"FOO": "v1;v2", "BAR": "v3"}),
        ("FOO=v1,v2,BAR=v3,BAZ=v4;v5", {"FOO": "v1,v2", "BAR": "v3", "BAZ": "v4;v5"}),
        (" A = 1 , B = 2 ", {"A": "1", "B": "2"}),
        ("A='x=1,y;z',B=2", {"A": "x=1,y;z", "B": "2"}),
        ('A="a b",B=c', {"A": "a b", "B": "c"}),
        ("MSG=don't,B=1", {"MSG": "don't", "B": "1"}),
        ("URL=http://h:80/p", {"URL": "http://h:80/p"}),
        # upstream's own cases: a trailing delimiter belongs to the value
        ("FOO=,", {"FOO": ","}),
        ("FOO=;", {"FOO": ";"}),
        ("FOO=v1,v2,", {"FOO": "v1,v2,"}),
        ("key1=value1,,foo=bar", {"key1": "value1,", "foo": "bar"}),
        ("FOO='',BAR=x", {"FOO": "", "BAR": "x"}),
    ],
)
def test_to_dict_grammar(arg: str, expected: dict[str, str]) -> None:
    assert to_dict(arg) == expected


@pytest.mark.parametrize(
    "arg",
    # upstream's malformed literals (FOO, FOO, FOO; FOO= FOO=;BAR=v1) and ours
    [
        "FOO",
        "FOO,",
        "FOO;",
        "FOO=",
        "FOO=;BAR=v1",
        "A=,B=1",
        "FOO=a,=b",
        "=a",
        "FOO=a=b",
        "A='unterminated",
    ],
)
def test_to_dict_rejects_malformed_input(arg: str) -> None:
    with pytest.raises(ValueError, match="`"):
        to_dict(arg)


def test_to_list() -> None:
    assert to_list("") == []
    assert to_list("  ") == []
    assert to_list("a, b ,c") == ["a", "b", "c"]
    assert to_list("a") == ["a"]


@pytest.mark.parametrize("word", ["true", "True", "1", "yes", "ON"])
def test_to_bool_true(word: str) -> None:
    assert to_bool(word) is True


@pytest.mark.parametrize("word", ["false", "FALSE", "0", "no", "off"])
def test_to_bool_false(word: str) -> None:
    assert to_bool(word) is False


def test_to_bool_error_names_value_and_accepted_words() -> None:
    with pytest.raises(ValueError, match=r"`maybe`.*true.*false"):
        to_bool("maybe")


@pytest.mark.parametrize(
    "tp",
    [
        Optional[int],
        Union[None, int],
        int | None,
        None | int,
        Annotated[int, "-x"],
        Annotated[Optional[int], "-x"],
        Optional[Annotated[int, "-x"]],
    ],
)
def test_decode_optional_unwraps_any_position(tp: object) -> None:
    assert decode_optional(tp) is int


def test_decode_optional_keeps_other_unions() -> None:
    assert decode_optional(int | str | None) == Union[int, str]
    assert decode_optional(int | str) == int | str
    assert decode_optional(List[str]) == List[str]


def test_is_optional_and_strip_annotated() -> None:
    assert is_optional(Annotated[Optional[str], "x"])
    assert not is_optional(str)
    assert strip_annotated(Annotated[Annotated[int, "a"], "b"]) is int


def test_decode_scalars_and_containers() -> None:
    assert decode("3", int) == 3
    assert decode("0.5", Optional[float]) == 0.5
    assert decode("x", str) == "x"
    assert decode("yes", bool) is True
    assert decode("False", Optional[bool]) is False
    assert decode(None, int) is None
    assert decode(7, int) == 7
    assert decode("a=1,b=2", Dict[str, int]) == {"a": 1, "b": 2}
    assert decode("a=1,b=2", dict[str, str] | None) == {"a": "1", "b": "2"}
    assert decode("1,2", Optional[List[int]]) == [1, 2]
    assert decode("x, y", Annotated[list[str], "-l"]) == ["x", "y"]
    assert decode("1,a", tuple[int, str]) == (1, "a")
    assert decode("1,2,3", tuple[int, ...]) == (1, 2, 3)
    assert decode("", Optional[List[str]]) is None


def test_decode_errors_name_the_value() -> None:
    with pytest.raises(ValueError, match="`abc` is not a valid int"):
        decode("abc", int)
    with pytest.raises(ValueError, match="`x` is not a valid int"):
        decode("a=x", dict[str, int])
    with pytest.raises(ValueError, match="expected exactly 2"):
        decode("1", tuple[int, int])
    with pytest.raises(ValueError, match="not supported"):
        decode_from_string("a,b", list[dict[str, str]])


def test_primitive_helpers() -> None:
    assert is_bool(bool)
    assert is_bool(Annotated[bool, "x"])
    assert not is_bool(int)
    assert all(is_primitive(t) for t in (int, str, float))
    assert not is_primitive(bool)
    assert not is_primitive(List[str])


def test_get_argparse_param_type() -> None:
    def fn(a: int, b: Annotated[float, "-b"], c: bool, d: list[str], e) -> None:  # type: ignore[no-untyped-def]
        del a, b, c, d, e

    params = inspect.signature(fn, eval_str=True).parameters
    assert get_argparse_param_type(params["a"]) is int
    assert get_argparse_param_type(params["b"]) is float
    assert get_argparse_param_type(params["c"]) is str
    assert get_argparse_param_type(params["d"]) is str
    assert get_argparse_param_type(params["e"]) is str


def test_none_throws() -> None:
    assert none_throws(0) == 0
    with pytest.raises(AssertionError, match="gone"):
        none_throws(None, "gone")


def test_a_value_that_cannot_be_split_is_shown_as_text() -> None:
    """The message once showed ``<torchx.util.types._Text object at 0x...>``."""
    with pytest.raises(ValueError) as refused:
        to_dict("FOO=a=b")
    assert "the value `a` ends" in str(refused.value) and "object at 0x" not in str(refused.value)
