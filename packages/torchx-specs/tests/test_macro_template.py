"""MacroTemplate: macros substituted as string.Template.safe_substitute does."""

from __future__ import annotations

import itertools
import random
from string import Template

import pytest

from torchx.util.startup.macro_template import MacroTemplate

MAPPING = {"app_id": "abc", "replica_id": "0", "a": "A", "A_1": "x$y", "_": "U"}
PIECES = ["$", "{", "}", "app_id", "replica_id", "a", "A_1", "_", "1", "x", " ", "é", "-", "$$"]


def _corpus() -> list[str]:
    rng = random.Random(7)  # fixed: the same strings every run
    exhaustive = ["".join(p) for p in itertools.product(["$", "{", "}", "a", "1"], repeat=4)]
    sampled = ["".join(rng.choices(PIECES, k=rng.randint(0, 9))) for _ in range(3000)]
    return exhaustive + sampled


def test_every_string_substitutes_as_string_template_does() -> None:
    for text in _corpus():
        expected = Template(text).safe_substitute(MAPPING)
        assert MacroTemplate(text).safe_substitute(MAPPING) == expected, repr(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("local_cwd://torchx/${app_id}", "local_cwd://torchx/abc"),
        ("$app_id-$replica_id", "abc-0"),
        ("$app_idx ${nope} $$app_id $", "$app_idx ${nope} $app_id $"),
        ("${ a} ${a}b $1", "${ a} Ab $1"),
    ],
)
def test_torchx_macros(text: str, expected: str) -> None:
    assert MacroTemplate(text).safe_substitute(MAPPING) == expected
    assert MacroTemplate(text).template == text
