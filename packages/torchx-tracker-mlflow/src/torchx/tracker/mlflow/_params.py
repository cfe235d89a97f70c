"""Flattening a nested config (dataclasses, mappings, lists) into MLflow's flat parameters."""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

__all__ = ["flatten_params"]

_PRIMITIVES = (str, bytes, int, float, bool, type(None))


def _as_container(value: Any) -> Any:
    """A dataclass instance as a dict; anything else unchanged."""
    from dataclasses import asdict, is_dataclass

    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return value


def _is_sequence(value: Any) -> bool:
    return isinstance(value, (list, tuple, Set)) and not isinstance(value, _PRIMITIVES)


def flatten_params(cfg: Any, key: str = "") -> dict[str, Any]:
    """``{"a.b": 1, "layers._0.size": 3, ...}`` for ``cfg`` under the name prefix ``key``.

    Mapping entries join their keys with ``.``; a list, tuple or set of primitives is one
    parameter; a sequence of objects is flattened element by element as ``<key>._<i>``; an
    empty container is logged as it is under ``key``.
    """
    cfg = _as_container(cfg)
    params: dict[str, Any] = {}
    if isinstance(cfg, Mapping):
        if not cfg and key:
            params[key] = cfg
        for k, raw in cfg.items():
            sub = f"{key}.{k}" if key else str(k)
            value = _as_container(raw)
            if isinstance(value, _PRIMITIVES):
                params[sub] = value
            else:
                params.update(flatten_params(value, sub))
    elif _is_sequence(cfg):
        items = list(cfg)
        if not items or all(isinstance(item, _PRIMITIVES) for item in items):
            params[key] = cfg
        else:
            for i, item in enumerate(items):
                params.update(flatten_params(item, f"{key}._{i}"))
    else:
        params[key] = cfg
    if "" in params:
        raise ValueError(
            f"cannot log {type(cfg).__name__} value {cfg!r} as a parameter without a name;"
            " pass key=<name>"
        )
    return params
