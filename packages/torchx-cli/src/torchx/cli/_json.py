"""JSON output of the ``--json`` flags: dataclasses, enums and the rest as plain data."""

import enum
import json
import sys

from torchx.util.startup.lazy_dataclass import fields, is_dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["print_json", "stream_json_array", "to_jsonable"]


def to_jsonable(obj: "Any") -> "Any":
    """``obj`` as JSON-ready data: dataclasses become dicts, enums their name."""

    if isinstance(obj, enum.Enum):
        return obj.name
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in obj]
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return str(obj)


def print_json(data: "Any") -> None:
    """Prints ``data`` as indented JSON on stdout."""
    json.dump(to_jsonable(data), sys.stdout, indent=2)
    sys.stdout.write("\n")


def stream_json_array(items: "Any", flush_every: int = 100) -> None:
    """Writes ``items`` (any iterable) as one JSON array, an element per line, as they
    come: a reader sees the first apps of a long listing before the last are fetched, and
    nothing holds the whole document in memory."""
    out = sys.stdout
    out.write("[")
    count = 0
    for item in items:
        out.write(",\n" if count else "\n")
        out.write(json.dumps(to_jsonable(item)))
        count += 1
        if count % flush_every == 1:  # the first of each run goes out at once
            out.flush()
    out.write("\n]\n" if count else "]\n")
    out.flush()
