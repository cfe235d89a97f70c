"""The ``@register`` decorators that mark a function in a ``torchx_plugins.*`` module as a
plugin, and helpers for named resources sold in slices of a host.

Decorating only tags the function (``_plugin_type``, ``_plugin_name``); the registry finds
it later by importing the module. Named resources also land in the module's
``NAMED_RESOURCES`` dict, so modules written for ``$TORCHX_CUSTOM_NAMED_RESOURCES`` keep working.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from torchx.plugins._types import NAMED_RESOURCES_ATTR, PluginType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    from torchx.specs.api import Resource

    F = TypeVar("F", bound=Callable[..., object])

WHOLE: float = 1.0
"""The whole host: all of its CPUs, memory and GPUs."""
HALF: float = 0.5
"""Half of every resource of the host."""
QUARTER: float = 0.25
"""A quarter of every resource of the host."""
EIGHTH: float = 0.125
"""An eighth of every resource of the host."""
SIXTEENTH: float = 0.0625
"""A sixteenth of every resource of the host."""

if TYPE_CHECKING:
    from typing import Any

    Fractionals = Callable[[Any], dict[float, str]]
else:
    Fractionals = Callable[[object], dict[float, str]]
"""``(whole-host Resource) -> {fraction: name suffix}``."""


class resource_tags:
    """``Resource.tags`` keys that ``@register.named_resource`` sets on what it returns.

    Read them through ``Resource.get_resource_name()`` and ``Resource.is_fractional()``.
    """

    RESOURCE_NAME: str = "torchx/named_resources.name"
    """The registered name that made the resource."""
    IS_FRACTIONAL: str = "torchx/named_resources.is_fractional"
    """True when the resource is less than a whole host."""


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def powers_of_two_gpus(resource: Any) -> dict[float, str]:
    """``{fraction: gpu count}`` for each halving of a host's GPUs down to one GPU.

    An 8-GPU host gives ``{1.0: "8", 0.5: "4", 0.25: "2", 0.125: "1"}``; a host without GPUs,
    or whose GPU count is not a power of two, is a ``ValueError``.
    """
    gpus = int(resource.gpu)
    if gpus <= 0:
        raise ValueError(
            f"powers_of_two_gpus needs a resource with GPUs (gpu={gpus}); use"
            " halve_mem_down_to for CPU hosts"
        )
    if not _is_power_of_two(gpus):
        raise ValueError(
            f"powers_of_two_gpus needs a power-of-two GPU count (gpu={gpus}); list the"
            " slices as a dict instead, e.g. fractionals={1.0: '6', 0.5: '3'}"
        )
    slices: dict[float, str] = {}
    fraction = WHOLE
    while int(gpus * fraction) >= 1:
        slices[fraction] = str(int(gpus * fraction))
        fraction /= 2
    return slices


def _odd_part(n: int) -> int:
    while n > 0 and n % 2 == 0:
        n //= 2
    return n


def halve_mem_down_to(*, minGiB: int) -> Fractionals:
    """Slices named by memory in GiB, halving from the whole host down to ``minGiB``.

    ``halve_mem_down_to(minGiB=8)`` on a 64 GiB host gives
    ``{1.0: "64", 0.5: "32", 0.25: "16", 0.125: "8"}``. ``minGiB`` below the odd part of the
    host's GiB (48 GiB: 3) would need fractional GiB and is a ``ValueError``.
    """

    def slices(resource: Any) -> dict[float, str]:
        mem_mb = int(resource.memMB)
        if mem_mb <= 0:
            raise ValueError(f"halve_mem_down_to needs a resource with memory (memMB={mem_mb})")
        if mem_mb % 1024:
            raise ValueError(
                f"halve_mem_down_to needs whole GiB of memory (memMB={mem_mb} is not a"
                " multiple of 1024)"
            )
        gib = mem_mb // 1024
        odd = _odd_part(gib)
        if minGiB < odd:
            raise ValueError(
                f"minGiB={minGiB} is too small for a {gib} GiB host: halving stops being"
                f" whole GiB below {odd}; use minGiB >= {odd}"
            )
        result: dict[float, str] = {}
        fraction = WHOLE
        while gib * fraction >= minGiB:
            result[fraction] = str(int(gib * fraction))
            fraction /= 2
        return result

    return slices


def _tag(fn: Callable[..., Any], plugin_type: PluginType, name: str) -> None:
    fn._plugin_type = plugin_type  # type: ignore[attr-defined]
    fn._plugin_name = name  # type: ignore[attr-defined]


class register:
    """Marks a function as a TorchX plugin for discovery under ``torchx_plugins.*``.

    Use the shortcuts: ``@register.scheduler()``, ``@register.tracker()`` and
    ``@register.named_resource(...)``; the name defaults to the function's. The module must
    live in the namespace of its kind (``torchx_plugins/schedulers/``,
    ``torchx_plugins/tracker/``, ``torchx_plugins/named_resources/``).
    """

    def __init__(self, type: PluginType, name: str | None = None) -> None:
        self._type = type
        self._name = name

    def __call__(self, fn: F) -> F:
        _tag(fn, self._type, self._name or fn.__name__)
        return fn

    @classmethod
    def scheduler(cls, name: str | None = None) -> register:
        """For ``create_scheduler(session_name, **kwargs) -> Scheduler`` functions."""
        return cls(PluginType.SCHEDULER, name=name)

    @classmethod
    def tracker(cls, name: str | None = None) -> register:
        """For ``factory(config: str | None) -> TrackerBase`` functions."""
        return cls(PluginType.TRACKER, name=name)

    @classmethod
    def event_handler(cls, name: str | None = None) -> register:
        """Register a factory of the ``logging.Handler`` that records TorchX's events for
        the destination ``name`` (the function's name by default): it wins over the
        built-in ``console`` and ``null``, so a site sends events to its own telemetry."""
        return cls(PluginType.EVENT_HANDLER, name=name)

    @classmethod
    def named_resource(
        cls,
        name: str | None = None,
        aliases: list[str] | None = None,
        fractionals: Fractionals | dict[float, str] | None = None,
    ) -> _NamedResourceRegistration:
        """For functions returning a ``Resource``.

        ``aliases`` are further names for the same resource. ``fractionals`` (a dict
        ``{fraction: suffix}`` or a function of the whole-host resource returning one, such
        as :func:`powers_of_two_gpus`) adds one resource ``<name>_<suffix>`` per slice; the
        function must then take the fraction as its one argument (``fractional=WHOLE``).
        """
        return _NamedResourceRegistration(name, aliases or [], fractionals)


class _NamedResourceRegistration(register):
    """``@register.named_resource``: tags what the function returns, and registers its
    aliases and slices as attributes and ``NAMED_RESOURCES`` entries of its module."""

    def __init__(
        self,
        name: str | None,
        aliases: list[str],
        fractionals: Fractionals | dict[float, str] | None,
    ) -> None:
        super().__init__(PluginType.NAMED_RESOURCE, name=name)
        self._aliases = aliases
        self._fractionals = fractionals

    def _slices(self, whole: Resource) -> dict[float, str]:
        if not self._fractionals:
            return {}
        if isinstance(self._fractionals, dict):
            return dict(self._fractionals)
        return self._fractionals(whole)

    def __call__(self, fn: Callable[..., Resource]) -> Callable[..., Resource]:  # type: ignore[override]
        module = sys.modules[fn.__module__]
        name = self._name or fn.__name__
        table: dict[str, Callable[..., Resource]] = (
            getattr(module, NAMED_RESOURCES_ATTR, None) or {}
        )
        setattr(module, NAMED_RESOURCES_ATTR, table)

        def add(entry: str, factory: Callable[..., Resource], as_attribute: bool) -> None:
            if entry in table:
                raise ValueError(
                    f"named resource `{entry}` is registered twice in module `{module.__name__}`"
                )
            if as_attribute and hasattr(module, entry):
                raise AttributeError(
                    f"cannot register named resource `{entry}`: module `{module.__name__}`"
                    " already has an attribute of that name"
                )
            factory.__module__ = module.__name__
            factory.__qualname__ = entry
            _tag(factory, PluginType.NAMED_RESOURCE, entry)
            table[entry] = factory
            if as_attribute:
                setattr(module, entry, factory)

        def named(*args: Any, **kwargs: Any) -> Resource:
            resource = fn(*args, **kwargs)
            resource.tags[resource_tags.RESOURCE_NAME] = name
            resource.tags[resource_tags.IS_FRACTIONAL] = False
            return resource

        named.__doc__ = fn.__doc__
        add(name, named, as_attribute=name != fn.__name__)
        for alias in self._aliases:

            def alias_of(*args: Any, **kwargs: Any) -> Resource:
                return named(*args, **kwargs)

            alias_of._plugin_base_name = name  # type: ignore[attr-defined]
            alias_of._plugin_is_alias = True  # type: ignore[attr-defined]
            add(alias, alias_of, as_attribute=True)
        if self._fractionals:
            for fraction, suffix in self._slices(fn()).items():
                slice_name = f"{name}_{suffix}"
                add(slice_name, _slice_factory(fn, fraction, slice_name, name), True)
        return named


def _slice_factory(
    fn: Callable[..., Resource], fraction: float, slice_name: str, base: str
) -> Callable[[], Resource]:
    def one_slice() -> Resource:
        resource = fn(fraction)
        resource.tags[resource_tags.RESOURCE_NAME] = slice_name
        resource.tags[resource_tags.IS_FRACTIONAL] = fraction != WHOLE
        return resource

    one_slice._plugin_base_name = base  # type: ignore[attr-defined]
    return one_slice
