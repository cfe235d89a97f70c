"""Tee every replica's log of an app into one stream (``torchx run --tee_logs``).

Each line becomes ``role/replica <line>`` (the prefix coloured when ``colorize``). Lines
are never lost: see :py:mod:`torchx.cli._logstream`.
"""

import threading

from torchx.cli._logstream import (
    LogPrinter,
    find_role_replicas,
    join_streamers,
    prefix_line,
    stream_replicas,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

    from torchx.runner import Runner
    from torchx.schedulers.api import Stream
    from torchx.specs import AppDef

__all__ = ["tee_logs"]


def _find_role_replicas(app: "AppDef", role_name: "str | None") -> list[tuple[str, int]]:
    """``(role, replica index)`` of every replica of ``role_name`` (all roles if None)."""
    return find_role_replicas(app, role_name)


def _prefix_line(prefix: str, line: str) -> str:
    """``prefix`` before ``line`` and after each ``\\r``/inner ``\\n`` in it."""
    return prefix_line(prefix, line)


def tee_logs(  # noqa: PLR0917 (positional order is the public API)
    dst: "TextIO",
    app_handle: str,
    regex: "str | None",
    runner: "Runner",
    should_tail: bool = False,
    streams: "Stream | None" = None,
    colorize: bool = False,
    *,
    app_done: "threading.Event | None" = None,
) -> threading.Thread:
    """An unstarted thread that copies the logs of every replica of the app to ``dst``.

    The caller starts and joins it. ``regex``, ``should_tail`` and ``streams`` are honoured
    (upstream ignored them). ``app_done``, when given, is set by the caller once the app is
    terminal; it lets a following read finish with a complete catch-up read.
    """

    def _tee() -> None:
        app = runner.describe(app_handle)
        if app is None:
            raise RuntimeError(f"app {app_handle} not found: cannot tee its logs")
        printer = LogPrinter(dst, colorize=colorize, strip=True)
        streamers, threads = stream_replicas(
            runner,
            app_handle,
            find_role_replicas(app, None),
            printer,
            regex=regex,
            should_tail=should_tail,
            streams=streams,
            app_done=app_done,
        )
        join_streamers(streamers, threads)

    return threading.Thread(target=_tee, name=f"tee-logs-{app_handle}", daemon=True)
