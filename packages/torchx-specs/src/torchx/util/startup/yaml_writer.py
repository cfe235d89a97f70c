"""A small, fast YAML writer for Kubernetes objects (plain dicts, lists and scalars).

``yaml.dump`` of a 10,000-replica Volcano Job takes many seconds; this writer emits the
same block style, quotes only what needs it (as JSON strings, which are valid YAML), and
writes a sub-object shared by many pods once per indentation level, reusing the text.
The output is what ``kubectl apply -f`` and ``yaml.safe_load`` read back unchanged.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["dump"]

_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./-]*\Z")
_RESERVED = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})


class _Writer:
    def __init__(self) -> None:
        self.scalars: dict[Any, str] = {True: "true", False: "false", None: "null"}
        self.keys: dict[tuple[str, str], str] = {}
        self.blocks: dict[tuple[int, int], str] = {}
        self.keep: list[Any] = []  # objects whose id() keys a cached block stay alive

    def scalar(self, value: Any) -> str:
        if value is True or value is False or value is None:
            return self.scalars[value]
        if isinstance(value, str):
            if _PLAIN.match(value) and value.lower() not in _RESERVED:
                text = value
            else:
                text = json.dumps(value, ensure_ascii=False)
        elif isinstance(value, (int, float)):
            text = repr(value)
        else:
            text = json.dumps(str(value), ensure_ascii=False)
        return text

    def block(self, obj: Any, pad: str) -> str:
        """``obj`` (a non-empty dict or list) written at indentation ``pad``."""
        key = (id(obj), len(pad))
        text = self.blocks.get(key)
        if text is None:
            text = self.mapping(obj, pad) if type(obj) is dict else self.sequence(obj, pad)
            self.blocks[key] = text
            self.keep.append(obj)
        return text

    def mapping(self, obj: dict[Any, Any], pad: str) -> str:
        parts = []
        keys = self.keys
        scalars = self.scalars
        inner = pad + "  "
        for k, v in obj.items():
            head = keys.get((pad, k))
            if head is None:
                head = keys[(pad, k)] = pad + self.scalar(k) + ":"
            kind = type(v)
            if kind is str:
                text = scalars.get(v)
                if text is None:
                    text = scalars[v] = self.scalar(v)
                parts.append(f"{head} {text}\n")
            elif kind is dict:
                parts.append(f"{head}\n{self.block(v, inner)}" if v else f"{head} {{}}\n")
            elif kind is list:
                parts.append(f"{head}\n{self.block(v, pad)}" if v else f"{head} []\n")
            else:
                parts.append(f"{head} {self.scalar(v)}\n")
        return "".join(parts)

    def sequence(self, obj: list[Any], pad: str) -> str:
        parts = []
        inner = pad + "  "
        cut = len(inner)
        scalars = self.scalars
        for item in obj:
            kind = type(item)
            if kind is dict and item:
                # the first line of the item's mapping goes on the "- " line
                parts.append(pad + "- " + self.block(item, inner)[cut:])
            elif kind is list and item:
                parts.append(pad + "-\n" + self.block(item, inner))
            elif kind is str:
                text = scalars.get(item)
                if text is None:
                    text = scalars[item] = self.scalar(item)
                parts.append(f"{pad}- {text}\n")
            elif kind is dict or kind is list:
                parts.append(pad + ("- {}\n" if kind is dict else "- []\n"))
            else:
                parts.append(f"{pad}- {self.scalar(item)}\n")
        return "".join(parts)


def dump(obj: Any) -> str:
    """``obj`` as block-style YAML (a scalar or empty container as one flow line)."""
    writer = _Writer()
    if isinstance(obj, (dict, list)) and obj:
        return writer.block(dict(obj) if isinstance(obj, dict) else list(obj), "")
    if isinstance(obj, dict):
        return "{}\n"
    if isinstance(obj, list):
        return "[]\n"
    return writer.scalar(obj) + "\n"
