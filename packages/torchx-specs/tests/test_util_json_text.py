"""torchx.util.json_text: what json.dumps writes, for the documents torchx writes."""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest

import torchx.specs as specs
from torchx.util import json_text
from torchx.util.lazy_dataclass import asdict


class Color(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


VALUES: list[Any] = [
    None,
    True,
    0,
    -12,
    1.5,
    1e100,
    "plain",
    'quote " backslash \\ tab \t newline \n é 日本 \x00 \U0001f600',
    [],
    {},
    [[], {}, [1, [2, {"a": []}]]],
    {"k": {"nested": [None, False, 2.25]}, "é": "v"},
    (1, "tuple"),
    {"enum": Color.RED, "int_enum": Level.HIGH},
    {"other": specs.AppState.RUNNING, "path": __import__("pathlib").Path("/tmp/x")},
    {1: "int key", None: "none key"},  # json's own key rules: handed to json
    {"nan": float("nan"), "inf": float("inf")},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_writes_what_json_dumps_writes(value: Any) -> None:
    assert json_text.indented(value) == json.dumps(value, indent=2, default=str)
    try:
        expected = json.dumps(value, separators=(",", ":"))
    except TypeError as e:  # not plain data: json's own error
        with pytest.raises(TypeError, match=str(e)):
            json_text.compact(value)
    else:
        assert json_text.compact(value) == expected


def test_a_dry_run_app_is_written_as_json_writes_it() -> None:
    app = specs.AppDef(
        name="app",
        roles=[
            specs.Role(
                name="r",
                image="img",
                entrypoint="python",
                args=["-c", "print('hi')", "$${app_id}"],
                env={"A": "1"},
                resource=specs.resource(cpu=2, gpu=1, memMB=1024),
                mounts=[specs.BindMount(src_path="/a", dst_path="/b", read_only=True)],
                port_map={"http": 8080},
                metadata={"owner": "me"},
            )
        ],
    )
    data = asdict(app)
    assert json_text.indented(data) == json.dumps(data, indent=2, default=str)
    assert json.loads(json_text.indented(data))["roles"][0]["args"][1] == "print('hi')"
