"""``PopenProtocol``: what the local scheduler needs of a started replica process.

Its own module because a :class:`typing.Protocol` needs :mod:`typing`, which ``torchx run``
does not import; ``torchx.schedulers.local_scheduler.PopenProtocol`` loads it on first use.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["PopenProtocol"]


class PopenProtocol(Protocol):
    """What the local scheduler needs of a started replica process (``subprocess.Popen``)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...

    def terminate(self) -> None: ...
