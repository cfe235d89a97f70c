"""Where plugins come from: ``torchx.*`` entry points and ``torchx_plugins.*`` namespace
packages, merged per kind, with every problem met on the way kept as a
:class:`RegistrationError` instead of breaking discovery.

Namespace packages are scanned once per registry and kind, on first :meth:`PluginRegistry.get`;
when no ``torchx_plugins`` package is installed that costs one ``find_spec``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

from torchx.plugins._namespace_scan import scan_namespace
from torchx.plugins._types import (
    NAMED_RESOURCES_ATTR,
    SOURCE_ENV,
    PluginFactories,
    PluginSource,
    PluginType,
    RegistrationError,
)
from torchx.util.entrypoints import load_group
from torchx.util.log import get_logger
from torchx.util.startup.static_typing import overload

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "NAMED_RESOURCES_ATTR",
    "PluginRegistry",
    "PluginSource",
    "PluginType",
    "RegistrationError",
    "registry",
]

logger = get_logger(__name__)

OWN_DISTRIBUTIONS = frozenset(
    {
        "torchx",
        "torchx-specs",
        "torchx-runner",
        "torchx-cli",
        "torchx-sched-batch",
        "torchx-sched-docker",
        "torchx-sched-k8s",
        "torchx-sched-ray",
        "torchx-sched-slurm",
        "torchx-tracker-mlflow",
        "torchx-pipelines-kfp",
        "torchx-workspace-docker",
        "torchx-ui",
    }
)
"""TorchX's own distributions: their entry points are the built-in plugins, which load
whatever ``$TORCHX_PLUGINS_SOURCE`` says."""


def _is_own_distribution(dist: str) -> bool:
    return dist.lower().replace("_", "-").replace(".", "-") in OWN_DISTRIBUTIONS


class PluginRegistry:
    """The plugins of each :class:`PluginType`, discovered once per kind and kept.

    Both channels feed each kind; a name found in both is taken from the entry point, and
    the namespace plugin it hides is reported in :attr:`errors`. Entry points of TorchX's own
    distributions are the built-ins and always load, so turning the entry-point channel off
    (``plugin_sources`` without ``ENTRYPOINT``) drops only third-party entry points.
    """

    def __init__(
        self, *, plugin_sources: PluginSource = PluginSource.NAMESPACE_PKG | PluginSource.ENTRYPOINT
    ) -> None:
        self._sources = plugin_sources
        self._namespaced: dict[PluginType, PluginFactories] = {}
        self._shadowed: set[tuple[PluginType, str]] = set()
        self._errors: list[RegistrationError] = []

    @property
    def plugin_sources(self) -> PluginSource:
        return self._sources

    def get(self, plugin_type: PluginType) -> PluginFactories:
        """``{name: factory}`` of one kind (``{}`` when there are none).

        Namespace packages are scanned on the first call for a kind; entry points are read
        each call (from a cache that follows installs), so a distribution installed since
        shows up.
        """
        if plugin_type not in self._namespaced:
            self._namespaced[plugin_type] = (
                scan_namespace(plugin_type, self._record)
                if PluginSource.NAMESPACE_PKG in self._sources
                else {}
            )
        return self._merge(plugin_type, self._namespaced[plugin_type])

    @overload
    def info(self) -> dict[PluginType, PluginFactories]: ...

    @overload
    def info(self, plugin_type: PluginType) -> PluginFactories: ...

    def info(
        self, plugin_type: PluginType | None = None
    ) -> dict[PluginType, PluginFactories] | PluginFactories:
        """A copy of one kind's plugins, or of every kind's (discovering what is needed)."""
        if plugin_type is not None:
            return dict(self.get(plugin_type))
        return {kind: dict(self.get(kind)) for kind in PluginType}

    def clear(self) -> None:
        """Forgets what was discovered here, and the process-wide :func:`registry`."""
        self._namespaced.clear()
        self._shadowed.clear()
        self._errors.clear()
        registry.cache_clear()

    @property
    def errors(self) -> list[RegistrationError]:
        """Problems found by the discovery that has run so far (see :meth:`load_errors`)."""
        return list(self._errors)

    def load_errors(self, plugin_type: PluginType | None = None) -> list[RegistrationError]:
        """Discovers ``plugin_type`` (every kind when None), then returns its problems.

        A plugin in the wrong namespace counts for both the kind it was found under and
        the kind it is.
        """
        kinds = [plugin_type] if plugin_type is not None else list(PluginType)
        for kind in kinds:
            self.get(kind)
        if plugin_type is None:
            return list(self._errors)
        namespace = plugin_type.namespace
        return [
            e
            for e in self._errors
            if e.plugin_type == plugin_type.label
            or e.module == namespace
            or e.module.startswith(namespace + ".")
        ]

    def to_dict(self) -> dict[str, Any]:
        """Every kind's plugins as plain data (``yaml.safe_dump``/``json.dumps`` ready).

        One list per kind (``scheduler``, ``named_resource``, ``tracker``) of
        ``{"name", "module"}`` entries; a named resource's aliases and slices are listed under
        it, a plugin that was not taken carries an ``error``; modules that failed to import
        are under ``errors``.
        """
        found = self.info()
        data: dict[str, Any] = {}
        for kind in PluginType:
            children: dict[str, dict[str, list[str]]] = {}
            for name, factory in found[kind].items():
                base = getattr(factory, "_plugin_base_name", None)
                if base is not None:
                    key = (
                        "aliases" if getattr(factory, "_plugin_is_alias", False) else "fractionals"
                    )
                    children.setdefault(base, {}).setdefault(key, []).append(name)
            hidden = {n for kids in children.values() for names in kids.values() for n in names}
            entries: list[dict[str, Any]] = []
            for name, factory in found[kind].items():
                if name in hidden:
                    continue
                entry: dict[str, Any] = {"name": name, "module": _module_of(factory)}
                entry.update(children.get(name, {}))
                entries.append(entry)
            entries += [
                {"name": e.name, "module": e.module, "error": e.error}
                for e in self._errors
                if e.plugin_type == kind.label
            ]
            data[kind.label] = entries
        data["errors"] = [
            {"module": e.module, "error": e.error} for e in self._errors if e.plugin_type is None
        ]
        return data

    def __str__(self) -> str:
        """:meth:`to_dict` as YAML (loadable with ``yaml.safe_load``)."""
        import json

        lines: list[str] = []
        for key, entries in self.to_dict().items():
            if not entries:
                lines.append(f"{key}: []")
                continue
            lines.append(f"{key}:")
            for entry in entries:
                prefix = "  - "
                for field, value in entry.items():
                    shown = (
                        "[" + ", ".join(json.dumps(v) for v in value) + "]"
                        if isinstance(value, list)
                        else json.dumps(value)
                    )
                    lines.append(f"{prefix}{field}: {shown}")
                    prefix = "    "
        return "\n".join(lines)

    def _record(self, error: RegistrationError) -> None:
        logger.warning("plugin discovery: %s: %s", error.name or error.module, error.error)
        self._errors.append(error)

    def _merge(self, plugin_type: PluginType, found: PluginFactories) -> PluginFactories:
        from_entry_points = {
            name: factory
            for name, factory in load_group(plugin_type.value).items()
            if PluginSource.ENTRYPOINT in self._sources
            or _is_own_distribution(getattr(getattr(factory, "entry_point", None), "dist", ""))
        }
        for name in sorted(from_entry_points.keys() & found.keys()):
            if (plugin_type, name) in self._shadowed:
                continue
            self._shadowed.add((plugin_type, name))
            self._record(
                RegistrationError(
                    module=_module_of(found[name]),
                    error=(
                        f"`{name}` is both a `{plugin_type.value}` entry point and a plugin in"
                        f" `{plugin_type.namespace}`; the entry point is used. Remove one of them"
                    ),
                    name=name,
                    plugin_type=plugin_type.label,
                )
            )
        return found | from_entry_points


def _module_of(factory: Callable[..., Any]) -> str:
    entry_point = getattr(factory, "entry_point", None)
    if entry_point is not None:
        return str(entry_point.module)
    return str(getattr(factory, "__module__", "") or "")


def sources_from_env() -> PluginSource:
    """The channels ``$TORCHX_PLUGINS_SOURCE`` selects (both when unset)."""
    both = PluginSource.NAMESPACE_PKG | PluginSource.ENTRYPOINT
    raw = os.environ.get(SOURCE_ENV, "").strip()
    if not raw:
        return both
    if raw not in {"0", "1", "2", "3"}:
        raise ValueError(
            f"{SOURCE_ENV}={raw!r} is not valid: use 0 (no plugins), 1 (torchx_plugins"
            " namespace packages only), 2 (entry points only) or 3 (both, the default)"
        )
    return PluginSource(int(raw))


@functools.lru_cache(maxsize=1)
def registry() -> PluginRegistry:
    """The process's registry, its channels chosen by ``$TORCHX_PLUGINS_SOURCE``."""
    return PluginRegistry(plugin_sources=sources_from_env())
