"""The table of named resources behind ``resource(h=...)``, built on first lookup.

Sources, later ones winning on a name clash:

1. ``torchx.specs.named_resources_generic.NAMED_RESOURCES``
2. ``torchx.specs.named_resources_aws.NAMED_RESOURCES``
3. ``NAMED_RESOURCES`` of the module named by ``$TORCHX_CUSTOM_NAMED_RESOURCES``
   (default ``torchx.specs.fb.named_resources``; a missing module contributes nothing)
4. named-resource plugins: the ``torchx.named_resources`` entry-point group and
   ``torchx_plugins.named_resources`` (zero-argument factories, see :mod:`torchx.plugins`)
5. ``NULL`` and ``MISSING``, which map to ``NULL_RESOURCE``

Building the table imports plugin modules, so it never happens at ``import torchx.specs``.
"""

import importlib
import os
import threading
import warnings
from collections.abc import Callable, Iterator, KeysView, Mapping, MutableMapping

from torchx.specs.api import NULL_RESOURCE, Resource

GiB: int = 1024
"""MB per GiB."""

ResourceFactory = Callable[[], Resource]
"""A zero-argument function returning a fresh :class:`Resource`."""

CUSTOM_NAMED_RESOURCES_ENV = "TORCHX_CUSTOM_NAMED_RESOURCES"
DEFAULT_CUSTOM_NAMED_RESOURCES_MODULE = "torchx.specs.fb.named_resources"
ENTRYPOINT_GROUP = "torchx.named_resources"


class UnknownNamedResourceError(KeyError):
    """No named resource is registered under the requested name."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _null_resource() -> Resource:
    return NULL_RESOURCE


def load_custom_named_resources() -> dict[str, ResourceFactory]:
    """The ``NAMED_RESOURCES`` of the module named by ``$TORCHX_CUSTOM_NAMED_RESOURCES``.

    A module that does not exist contributes nothing. A module that exists but fails to import
    one of its own dependencies raises when the env var names it explicitly.
    """
    explicit = os.environ.get(CUSTOM_NAMED_RESOURCES_ENV, "").strip()
    module_name = explicit or DEFAULT_CUSTOM_NAMED_RESOURCES_MODULE
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            return {}
        if explicit:
            raise
        return {}
    try:
        table = module.NAMED_RESOURCES
    except AttributeError:
        raise AttributeError(
            f"module {module_name!r} (named by ${CUSTOM_NAMED_RESOURCES_ENV}) has no"
            " NAMED_RESOURCES; define NAMED_RESOURCES = {'name': zero_arg_factory, ...}"
        ) from None
    if not isinstance(table, Mapping):
        raise TypeError(
            f"{module_name}.NAMED_RESOURCES must be a mapping of name -> zero-argument"
            f" factory returning Resource, got {type(table).__name__}"
        )
    return dict(table)


def _load_plugin_named_resources() -> dict[str, ResourceFactory]:
    """Factories of named-resource plugins: the ``torchx.named_resources`` entry points and
    the ``@register.named_resource`` functions of ``torchx_plugins.named_resources``.

    Each factory is called once here so that a broken plugin is reported (as a warning) and
    skipped instead of hiding the others or failing a later lookup.
    """
    from torchx.plugins import PluginType, registry

    factories: dict[str, ResourceFactory] = {}
    for name, factory in registry().get(PluginType.NAMED_RESOURCE).items():
        where = getattr(factory, "entry_point", None)
        origin = f"entry point group {ENTRYPOINT_GROUP}" if where else factory.__module__
        try:
            sample = factory()
        except Exception as e:
            warnings.warn(
                f"named resource {name!r} ({origin}) failed and is skipped:"
                f" {type(e).__name__}: {e}",
                stacklevel=2,
            )
            continue
        if not isinstance(sample, Resource):
            warnings.warn(
                f"named resource {name!r} ({origin}) is skipped: its factory returned"
                f" {type(sample).__name__}, not Resource",
                stacklevel=2,
            )
            continue
        factories[name] = factory
    return factories


def _discover() -> dict[str, ResourceFactory]:
    from torchx.specs.named_resources_aws import NAMED_RESOURCES as AWS
    from torchx.specs.named_resources_generic import NAMED_RESOURCES as GENERIC

    table: dict[str, ResourceFactory] = {}
    table.update(GENERIC)
    table.update(AWS)
    table.update(load_custom_named_resources())
    table.update(_load_plugin_named_resources())
    table["NULL"] = _null_resource
    table["MISSING"] = _null_resource
    return table


class _NamedResourcesLibrary(Mapping[str, Resource]):
    """Read-only mapping ``name -> Resource``; every lookup returns a fresh Resource."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._table: dict[str, ResourceFactory] | None = None
        self._building_thread: int | None = None

    def _factories(self) -> dict[str, ResourceFactory]:
        table = self._table
        if table is not None:
            return table
        with self._lock:
            if self._table is not None:
                return self._table
            if self._building_thread == threading.get_ident():
                raise RuntimeError(
                    "a named resource was looked up while named resources are being"
                    " discovered; do not call resource(h=...) at import time of a"
                    " named-resource plugin module"
                )
            self._building_thread = threading.get_ident()
            try:
                self._table = _discover()
            finally:
                self._building_thread = None
            return self._table

    def reset(self) -> None:
        """Forgets the table so that the next lookup discovers it again (for tests)."""
        with self._lock:
            self._table = None

    def factories(self) -> MutableMapping[str, ResourceFactory]:
        """A live, writable view of ``name -> factory`` (compat ``_named_resource_factories``)."""
        return _FactoriesView(self)

    def __getitem__(self, key: str) -> Resource:
        table = self._factories()
        factory = table.get(key)
        if factory is None:
            raise UnknownNamedResourceError(self._not_found_message(key, list(table)))
        return factory()

    @staticmethod
    def _not_found_message(key: str, names: list[str]) -> str:
        import difflib

        message = f"No named resource found for `{key}`. "
        close = difflib.get_close_matches(key, names, n=1)
        if close:
            return message + f"Did you mean `{close[0]}`?"
        return message + f"Registered named resources: {sorted(names)}"

    def __contains__(self, key: object) -> bool:
        return key in self._factories()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._factories()))

    def __len__(self) -> int:
        return len(self._factories())

    def keys(self) -> KeysView[str]:
        return self._factories().keys()

    def __repr__(self) -> str:
        if self._table is None:
            return "named_resources(<not loaded yet>)"
        return f"named_resources({sorted(self._table)})"


class _FactoriesView(MutableMapping[str, ResourceFactory]):
    def __init__(self, library: _NamedResourcesLibrary) -> None:
        self._library = library

    def __getitem__(self, key: str) -> ResourceFactory:
        return self._library._factories()[key]

    def __setitem__(self, key: str, factory: ResourceFactory) -> None:
        self._library._factories()[key] = factory

    def __delitem__(self, key: str) -> None:
        del self._library._factories()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._library._factories()))

    def __len__(self) -> int:
        return len(self._library._factories())

    def __repr__(self) -> str:
        return repr(self._library._factories())


named_resources = _NamedResourcesLibrary()
"""All registered named resources: ``named_resources["gpu.small"]`` -> ``Resource``."""


def resource(
    cpu: int | None = None,
    gpu: int | None = None,
    memMB: int | None = None,
    h: str | None = None,
) -> Resource:
    """A resource given either by name (``h``, wins over the numbers) or by numbers.

    Unset (or zero) numbers default to 2 cpus, 0 gpus and 1024 MB.
    """
    if h:
        return named_resources[h]
    return Resource(cpu=cpu or 2, gpu=gpu or 0, memMB=memMB or 1024)


def get_named_resources(res: str) -> Resource:
    """Deprecated: use ``resource(h=res)``."""
    warnings.warn(
        "get_named_resources() is deprecated; use torchx.specs.resource(h=name) instead",
        FutureWarning,
        stacklevel=2,
    )
    return named_resources[res]
