"""YAML from users, loaded with limits.

``yaml.safe_load`` builds no objects but still follows aliases, and a document of nested
aliases (a "billion laughs") is tiny as text yet expands to billions of nodes as soon as
anything walks or copies it. Here the text size is capped and the expanded size is
counted (shared nodes counted once per reference, in linear time) before anyone walks it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_YAML_CHARS", "MAX_YAML_NODES", "check_expansion", "load_yaml"]

MAX_YAML_CHARS = 10 << 20
"""Longest YAML text read (characters)."""

MAX_YAML_NODES = 1_000_000
"""Most nodes a document may expand to, aliases followed."""


def check_expansion(data: Any, what: str, limit: int = MAX_YAML_NODES) -> None:
    """Raises ``ValueError`` when ``data``, with every shared (aliased) part counted each
    time it is referenced, holds more than ``limit`` nodes."""
    sizes: dict[int, int] = {}

    def size(node: Any) -> int:
        if not isinstance(node, (dict, list, tuple)):
            return 1
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = 1  # a cycle (a recursive alias) counts once
        children = node.items() if isinstance(node, dict) else enumerate(node)
        total = 1
        for key, value in children:
            total += size(key) + size(value)
            if total > limit:
                break
        sizes[id(node)] = total
        return total

    if size(data) > limit:
        raise ValueError(
            f"{what} expands to more than {limit:,} YAML nodes (aliases followed); refusing it"
            " (a document of nested aliases, or far too large: write it out without aliases)"
        )


def load_yaml(text: str, what: str, loader: Any = None) -> Any:
    """``text`` parsed as YAML with a safe loader (``loader``: a ``SafeLoader`` subclass),
    within :data:`MAX_YAML_CHARS` and :data:`MAX_YAML_NODES`."""
    import yaml

    if len(text) > MAX_YAML_CHARS:
        raise ValueError(f"{what} is larger than {MAX_YAML_CHARS >> 20} MB of YAML; refusing it")
    data = yaml.load(text, Loader=loader or yaml.SafeLoader)  # noqa: S506 - safe loaders only
    check_expansion(data, what)
    return data
