"""Overlays: patches merged into a scheduler's native request right before submission.

They reach fields that :class:`~torchx.specs.AppDef` and :class:`~torchx.specs.Role` do not
model (pod tolerations, node selectors, ...). An overlay is a nested dict stored under
``metadata[<namespace>][<kind>]`` of an app or role, e.g. ``role.metadata["kubernetes"]["V1Pod"]``
for the Kubernetes scheduler, which applies it to every pod of the role.

Merge rules of :func:`apply_overlay`: dicts merge recursively, lists are appended to, other
values overwrite. Operator keys change that for one field:

* ``PUT("f")``: replace ``f`` instead of merging/appending
* ``JOIN("f", on="name")``: merge the list of dicts ``f`` item by item, matching on ``name``
* ``DEL("f")``: remove ``f``

Example::

    set_overlay(role, "kubernetes", "V1Pod", {
        "spec": {
            "nodeSelector": {"pool": "gpu"},
            JOIN("containers", on="name"): [{"name": "trainer", "stdin": True}],
        },
    })
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from torchx.specs.api import AppDef, Role
from torchx.util.startup.lazy_dataclass import dataclass

__all__ = [
    "DEL",
    "JOIN",
    "PUT",
    "OverlaySpec",
    "apply_overlay",
    "get_overlay",
    "set_overlay",
    "validate_overlay",
]

OVERLAYS_MARKER = "__torchx_overlays__"
"""Key flagging a namespace dict written by :func:`set_overlay` (``{kind: overlay}`` format)."""

_PUT = "__put__:"
_JOIN = "__join__:"
_DEL = "__del__:"


def PUT(key: str) -> str:
    """Operator key: replace ``key`` instead of merging into or appending to it."""
    return f"{_PUT}{key}"


def JOIN(key: str, *, on: str) -> str:
    """Operator key: merge the list of dicts ``key`` item by item, matching on field ``on``."""
    return f"{_JOIN}{key}:{on}"


def DEL(key: str) -> str:
    """Operator key: remove ``key`` (unlike ``{key: None}``, which sets it to null)."""
    return f"{_DEL}{key}"


def _parse_key(key: Any) -> tuple[str, Any, str | None]:
    """``(operation, field, join_on)`` of an overlay key; operation is merge/put/join/del."""
    if not isinstance(key, str):
        return "merge", key, None
    if key.startswith(_PUT):
        return "put", key[len(_PUT) :], None
    if key.startswith(_DEL):
        return "del", key[len(_DEL) :], None
    if key.startswith(_JOIN):
        field_name, sep, on = key[len(_JOIN) :].rpartition(":")
        if not sep or not field_name or not on:
            raise ValueError(f"malformed JOIN key {key!r}; build it with JOIN('field', on='name')")
        return "join", field_name, on
    return "merge", key, None


def _materialize(value: Any) -> Any:
    """A deep copy with tuples turned into lists and operator keys resolved."""
    if isinstance(value, Mapping):
        result: dict[Any, Any] = {}
        apply_overlay(result, dict(value))
        return result
    if isinstance(value, (list, tuple)):
        return [_materialize(v) for v in value]
    return copy.deepcopy(value)


def _join(base: dict[str, Any], field_name: str, on: str, items: Any) -> None:
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, Mapping) for i in items):
        raise TypeError(f"JOIN({field_name!r}, on={on!r}) needs a list of dicts, got {items!r}")
    existing = base.get(field_name)
    if existing is None:
        base[field_name] = _materialize(items)
        return
    if not isinstance(existing, list) or not all(isinstance(i, dict) for i in existing):
        raise TypeError(
            f"JOIN({field_name!r}, on={on!r}) needs the base value to be a list of dicts,"
            f" got {existing!r}"
        )
    for item in items:
        match = None
        if on in item:
            match = next((b for b in existing if on in b and b[on] == item[on]), None)
        if match is None:
            existing.append(_materialize(item))
            continue
        # Matched items get their top-level fields replaced (operator keys still apply).
        patch = {k if _parse_key(k)[0] != "merge" else PUT(k): v for k, v in item.items()}
        apply_overlay(match, patch)


def _merge_value(base: dict[str, Any], key: str, value: Any, resolve: bool) -> None:
    if key not in base or base[key] is None:
        base[key] = _materialize(value) if resolve else copy.deepcopy(value)
        return
    current = base[key]
    if isinstance(current, dict) and isinstance(value, Mapping):
        apply_overlay(current, dict(value), _resolve=resolve)
    elif isinstance(current, list) and isinstance(value, tuple):
        # Legacy spelling of PUT (YAML files may write ``!!python/tuple``).
        base[key] = _materialize(value) if resolve else copy.deepcopy(value)
    elif isinstance(current, list) and isinstance(value, list):
        current.extend(_materialize(v) if resolve else copy.deepcopy(v) for v in value)
    elif isinstance(current, (dict, list)) or isinstance(value, (Mapping, list, tuple)):
        raise TypeError(
            f"type mismatch for attr: {key!r}: cannot merge {type(value).__name__}"
            f" {value!r} into {type(current).__name__}; use PUT({key!r}) to replace it"
        )
    else:
        base[key] = copy.deepcopy(value)


def apply_overlay(
    base: dict[str, Any], overlay: Mapping[str, Any], *, _resolve: bool = True
) -> None:
    """Merges ``overlay`` into ``base`` in place (rules in the module docstring).

    ``_resolve=False`` (used by :func:`set_overlay`) keeps operator keys as they are so that
    several overlays can be accumulated and applied later; the latest operation on a field
    then replaces the earlier ones.
    """
    for key, value in overlay.items():
        operation, field_name, on = _parse_key(key)
        if not _resolve:
            if operation != "merge":
                for other in [k for k in base if _parse_key(k)[1] == field_name]:
                    del base[other]
                base[key] = copy.deepcopy(value)
            else:
                _merge_value(base, key, value, resolve=False)
            continue
        if operation == "put":
            base[field_name] = _materialize(value)
        elif operation == "del":
            base.pop(field_name, None)
        elif operation == "join":
            assert on is not None
            _join(base, field_name, on, value)
        else:
            _merge_value(base, key, value, resolve=True)


def set_overlay(
    target: AppDef | Role, namespace: str, kind: str, overlay: Mapping[str, Any]
) -> None:
    """Adds ``overlay`` to ``target.metadata[namespace][kind]`` (accumulating over calls)."""
    if kind == OVERLAYS_MARKER:
        raise ValueError(f"{OVERLAYS_MARKER!r} is reserved and cannot be used as an overlay kind")
    metadata = target.metadata
    stored = metadata.get(namespace)
    if stored is not None and not isinstance(stored, dict):
        warnings.warn(
            f"metadata[{namespace!r}] held {type(stored).__name__} {stored!r}; replacing it"
            f" with a dict of overlays",
            stacklevel=2,
        )
        stored = None
    if stored is None:
        stored = {}
        metadata[namespace] = stored
    stored[OVERLAYS_MARKER] = True
    existing = stored.get(kind)
    if not isinstance(existing, dict):
        existing = {}
        stored[kind] = existing
    apply_overlay(existing, dict(overlay), _resolve=False)


class _TupleSafeLoader:
    """Builds (once) a YAML safe loader that also accepts ``!!python/tuple``."""

    loader: Any = None

    @classmethod
    def get(cls) -> Any:
        if cls.loader is None:
            import yaml

            class Loader(yaml.SafeLoader):
                pass

            def construct_tuple(loader: yaml.SafeLoader, node: yaml.Node) -> tuple[Any, ...]:
                assert isinstance(node, yaml.SequenceNode)
                return tuple(loader.construct_sequence(node, deep=True))

            Loader.add_constructor("tag:yaml.org,2002:python/tuple", construct_tuple)
            cls.loader = Loader
        return cls.loader


def _read_text(uri: str) -> str:
    if "://" not in uri or uri.startswith("file://"):
        path = uri[len("file://") :] if uri.startswith("file://") else uri
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            return f.read()
    try:
        import fsspec
    except ImportError:
        raise ImportError(
            f"overlay file {uri!r} is a remote URI, which needs fsspec: pip install fsspec"
            " (or point to a local path)"
        ) from None
    with fsspec.open(uri, "r") as f:
        return str(f.read())


def _load_overlay_file(uri: str) -> dict[str, Any]:
    text = _read_text(uri)
    try:
        data = json.loads(text)
    except ValueError:
        try:
            import yaml  # noqa: F401 - imported here only to say what is missing
        except ImportError:
            raise ValueError(
                f"overlay file {uri!r} is not JSON; install PyYAML to read YAML overlays"
            ) from None
        from torchx.util.support.safe_yaml import load_yaml

        data = load_yaml(text, f"overlay file {uri!r}", _TupleSafeLoader.get())
    if not isinstance(data, dict):
        raise ValueError(f"overlay file {uri!r} must hold a mapping, got {type(data).__name__}")
    return data


def _looks_nested(stored: Mapping[str, Any]) -> bool:
    return len(stored) > 1 and all(isinstance(v, Mapping) for v in stored.values())


def get_overlay(
    target: AppDef | Role, namespace: str, kind: str, *, flat_fallback: bool = True
) -> dict[str, Any]:
    """The overlay stored for ``namespace``/``kind`` on ``target`` (``{}`` when there is none).

    ``metadata[namespace]`` may also be a path or URI of a JSON/YAML file holding the
    namespace dict. A hand-written namespace dict without kinds (legacy flat format) is
    returned as the overlay, with a warning, when ``flat_fallback`` is set.
    """
    stored = target.metadata.get(namespace)
    if stored is None:
        return {}
    if isinstance(stored, str):
        stored = _load_overlay_file(stored)
    if not isinstance(stored, Mapping):
        raise ValueError(
            f"metadata[{namespace!r}] must be a dict of overlays or a file path, got"
            f" {type(stored).__name__}"
        )
    if stored.get(OVERLAYS_MARKER):
        overlay = stored.get(kind)
        return dict(overlay) if isinstance(overlay, Mapping) else {}
    if kind in stored:
        overlay = stored[kind]
        return dict(overlay) if isinstance(overlay, Mapping) else {}
    if flat_fallback and stored and not _looks_nested(stored):
        warnings.warn(
            f"[Deprecated] metadata[{namespace!r}] holds a flat overlay; store it per kind"
            f" with set_overlay(target, {namespace!r}, {kind!r}, overlay)",
            UserWarning,
            stacklevel=2,
        )
        return dict(stored)
    return {}


def validate_overlay(
    overlay: Mapping[str, Any],
    *,
    blocklist: Iterable[str] | None = None,
    forbidden_keys: Iterable[str] | None = None,
    overlay_name: str = "overlay",
    suggestion: str = "",
) -> None:
    """Raises ``ValueError`` if ``overlay`` sets a blocklisted or forbidden top-level key.

    ``blocklist`` holds fields that must be set through Role/AppDef attributes;
    ``forbidden_keys`` holds fields that belong to another kind (``suggestion`` says which).
    """
    blocked = set(blocklist or ())
    forbidden = set(forbidden_keys or ())
    for key in overlay:
        field_name = _parse_key(key)[1]
        if field_name in blocked:
            raise ValueError(
                f"{overlay_name} must not set {field_name!r}; set it through the Role/AppDef"
                f" attribute instead (blocked keys: {sorted(blocked)})"
            )
        if field_name in forbidden:
            hint = f"; {suggestion}" if suggestion else ""
            raise ValueError(f"{overlay_name} must not contain {field_name!r}{hint}")


@dataclass(frozen=True)
class OverlaySpec:
    """One overlay kind of a scheduler, with the keys it must not set."""

    namespace: str
    kind: str
    blocklist: tuple[str, ...] = ()

    @property
    def _name(self) -> str:
        return f"{self.namespace} {self.kind} overlay"

    def set(self, target: AppDef | Role, overlay: Mapping[str, Any]) -> None:
        validate_overlay(overlay, blocklist=self.blocklist, overlay_name=self._name)
        set_overlay(target, self.namespace, self.kind, overlay)

    def get(self, target: AppDef | Role) -> dict[str, Any]:
        overlay = get_overlay(target, self.namespace, self.kind, flat_fallback=False)
        validate_overlay(overlay, blocklist=self.blocklist, overlay_name=self._name)
        return overlay
