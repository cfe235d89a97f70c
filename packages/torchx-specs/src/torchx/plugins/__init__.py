"""Plugins that live in ``torchx_plugins.*`` namespace packages, beside entry points.

A distribution adds a scheduler, tracker or named resource by shipping a module under
``torchx_plugins/schedulers/``, ``torchx_plugins/tracker/`` or
``torchx_plugins/named_resources/`` whose functions carry ``@register``::

    # torchx_plugins/schedulers/my_cluster.py
    from torchx.plugins import register

    @register.scheduler()
    def my_cluster(session_name: str, **kwargs) -> Scheduler: ...

Entry points (``[project.entry-points."torchx.schedulers"]``) keep working and are how
TorchX's own distributions register; both kinds appear in ``get_scheduler_factories()``,
named resources, trackers and ``torchx plugins``. ``registry()`` shows what was found
(``print(registry())``) and what failed (``registry().load_errors()``).
``$TORCHX_PLUGINS_SOURCE`` picks the channels: 1 namespace packages only, 2 entry points
only, 3 both (default), 0 none; TorchX's own entry points always load.
"""

from torchx.plugins._registration import (
    EIGHTH,
    HALF,
    QUARTER,
    SIXTEENTH,
    WHOLE,
    halve_mem_down_to,
    powers_of_two_gpus,
    register,
    resource_tags,
)
from torchx.plugins._registry import (
    PluginRegistry,
    PluginSource,
    PluginType,
    RegistrationError,
    registry,
)

__all__ = [
    "EIGHTH",
    "HALF",
    "QUARTER",
    "SIXTEENTH",
    "WHOLE",
    "PluginRegistry",
    "PluginSource",
    "PluginType",
    "RegistrationError",
    "halve_mem_down_to",
    "powers_of_two_gpus",
    "register",
    "registry",
    "resource_tags",
]
