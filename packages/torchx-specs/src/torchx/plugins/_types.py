"""The vocabulary of plugin discovery, shared by the registry, the namespace scanner and
the ``@register`` decorators (which need it without needing each other)."""

from __future__ import annotations

import enum
from collections.abc import Callable

from torchx.util.startup.lazy_dataclass import dataclass

__all__ = [
    "NAMED_RESOURCES_ATTR",
    "NAMESPACE_ROOT",
    "SOURCE_ENV",
    "PluginFactories",
    "PluginSource",
    "PluginType",
    "RegistrationError",
]

NAMED_RESOURCES_ATTR = "NAMED_RESOURCES"
"""The module attribute ``@register.named_resource`` fills (as custom resource modules have)."""

SOURCE_ENV = "TORCHX_PLUGINS_SOURCE"
"""Which channels discovery uses: 0 none, 1 namespace packages, 2 entry points, 3 both."""

NAMESPACE_ROOT = "torchx_plugins"


class PluginType(str, enum.Enum):
    """A kind of plugin; its value is the kind's entry-point group."""

    SCHEDULER = "torchx.schedulers"
    NAMED_RESOURCE = "torchx.named_resources"
    TRACKER = "torchx.tracker"
    EVENT_HANDLER = "torchx.event_handlers"
    """A ``logging.Handler`` factory for TorchX's events, named after its destination
    (``TORCHX_EVENTS_DESTINATION``)."""

    @property
    def namespace(self) -> str:
        """The namespace package that holds this kind (``torchx_plugins.schedulers``)."""
        return f"{NAMESPACE_ROOT}.{self.value.removeprefix('torchx.')}"

    @property
    def label(self) -> str:
        """``scheduler``, ``named_resource``, ``tracker`` or ``event_handler``."""
        return self.name.lower()


class PluginSource(enum.IntFlag):
    """The discovery channels, as a bit mask (the value of ``$TORCHX_PLUGINS_SOURCE``)."""

    NONE = 0
    NAMESPACE_PKG = 1
    ENTRYPOINT = 2


@dataclass(frozen=True)
class RegistrationError:
    """One problem found by discovery.

    A module that failed to import has only ``module`` and ``error``; a plugin that was found
    but not taken (wrong namespace, a clashing name) also has ``name`` and ``plugin_type``.
    """

    module: str
    error: str
    name: str | None = None
    plugin_type: str | None = None


TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    PluginFactories = dict[str, Callable[..., Any]]
else:
    PluginFactories = dict[str, Callable[..., object]]
