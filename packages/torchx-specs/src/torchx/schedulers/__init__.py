"""Scheduler registry: every scheduler is a factory in the ``torchx.schedulers`` group.

Built-in and third-party schedulers register the same way (``torchx-runner`` registers
``local_cwd``), and a third-party scheduler adds to the list instead of hiding the
others. Importing this package scans nothing: discovery happens on the first call.
"""

from torchx._namespace import extend_path
from torchx.plugins import PluginType, registry
from torchx.util.entrypoints import load_group

__path__ = extend_path(__path__, __name__)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._factory import SchedulerFactory
    from torchx.schedulers.api import Scheduler

__all__ = [
    "DEFAULT_SCHEDULER_MODULES",
    "SCHEDULER_GROUP",
    "Scheduler",
    "SchedulerFactory",
    "get_default_scheduler_name",
    "get_scheduler_factories",
]

SCHEDULER_GROUP = "torchx.schedulers"
PREFERRED_DEFAULT_SCHEDULER = "local_cwd"

DEFAULT_SCHEDULER_MODULES: dict[str, str] = {}
"""Kept for compatibility: built-in schedulers are now ordinary entry points."""


def get_scheduler_factories(
    *, skip_defaults: bool = False, group: str = SCHEDULER_GROUP
) -> "dict[str, SchedulerFactory]":
    """``{name: factory}`` for every scheduler registered in ``group``.

    For ``torchx.schedulers`` that is its entry points and the ``@register.scheduler()``
    functions of ``torchx_plugins.schedulers`` (see :mod:`torchx.plugins`). Each factory
    imports its scheduler module on first call, so a scheduler whose SDK is missing or broken
    fails only when it is used and never hides the others. ``skip_defaults`` is accepted for
    compatibility (there are no hidden defaults).
    """
    del skip_defaults
    if group == SCHEDULER_GROUP:
        return dict(registry().get(PluginType.SCHEDULER))

    factories: dict[str, SchedulerFactory] = load_group(group)
    return factories


def get_default_scheduler_name() -> str:
    """``local_cwd`` when it is installed, otherwise the first registered scheduler."""
    names = list(get_scheduler_factories())
    if PREFERRED_DEFAULT_SCHEDULER in names:
        return PREFERRED_DEFAULT_SCHEDULER
    if names:
        return names[0]
    raise RuntimeError(
        f"no scheduler is installed (entry-point group `{SCHEDULER_GROUP}` is empty);"
        " install `torchx-runner` for local_cwd, or a scheduler package such as"
        " torchx-sched-k8s or torchx-sched-slurm"
    )


def __getattr__(name: str) -> object:
    # ``Scheduler`` pulls in torchx.specs and ``SchedulerFactory`` (a Protocol) typing;
    # resolve them only when someone asks for them.
    if name == "Scheduler":
        from torchx.schedulers.api import Scheduler

        return Scheduler
    if name == "SchedulerFactory":
        from torchx.schedulers._factory import SchedulerFactory

        return SchedulerFactory
    raise AttributeError(f"module 'torchx.schedulers' has no attribute {name!r}")
