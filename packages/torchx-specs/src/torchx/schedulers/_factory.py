"""``SchedulerFactory``, the type of what a scheduler registers (``torchx.schedulers``).

Its own module because a :class:`typing.Protocol` needs :mod:`typing`, which the command
line's path does not import; ``torchx.schedulers.SchedulerFactory`` loads it on first use.
"""

from __future__ import annotations

from typing import Any, Protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers.api import Scheduler

__all__ = ["SchedulerFactory"]


class SchedulerFactory(Protocol):
    """``create_scheduler(session_name, **kwargs) -> Scheduler``.

    ``**kwargs`` is mandatory: the runner passes every ``TORCHX_*`` environment
    variable (lower-cased, prefix removed) as a keyword argument.
    """

    def __call__(self, session_name: str, **kwargs: object) -> Scheduler[Any]: ...
