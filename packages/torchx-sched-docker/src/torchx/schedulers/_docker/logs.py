"""Following a container's log through a restart of the Docker daemon.

The daemon ends every log stream when it stops; with ``live-restore`` the container runs
on and its log keeps growing. The follower asks for the log with timestamps and, when
the stream ends while the container still runs, or breaks, asks again from where it
stood (:mod:`torchx.schedulers.shared.log_resume`): no line lost, none repeated.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from torchx.schedulers._docker.client import unix_time
from torchx.schedulers._docker.retry import transient
from torchx.schedulers.shared.log_resume import ResumePoint, Stamp, parse_stamp

__all__ = ["follow_log"]

_IDLE_S = 0.1  # before asking again when a stream ended with nothing new


def _unix_seconds(value: Any) -> int | None:
    """A ``since`` in whole Unix seconds, as the daemon is asked for it."""

    return None if value is None else int(unix_time(value))


def follow_log(api: Any, container_id: str, kwargs: dict[str, Any]) -> Iterator[bytes]:
    """The container's log lines (each with its ``\\n``) until it stops, resumed across
    daemon restarts; ``kwargs`` are those of ``logs()`` (streams, ``since``, ``until``).

    Each frame of the daemon is one log entry; a line longer than the daemon's entry
    limit comes as several, joined here. A line is given out (and its entries counted as
    given) only once its ``\\n`` arrived: a line cut by a break is read again whole.
    """

    point = ResumePoint(floor=_unix_seconds(kwargs.get("since")))
    following = True
    while True:
        ask = dict(kwargs, timestamps=True, follow=following, stream=True)
        since = point.resume()
        if since is not None:
            ask["since"] = since
        parts: list[bytes] = []
        stamps: list[Stamp | None] = []
        got_any = broke = False
        try:
            for frame in api.logs(container_id, **ask):
                raw, _, text = frame.partition(b" ")
                stamp = parse_stamp(raw)
                if stamp is None:
                    text = frame
                if not point.fresh(stamp):
                    continue
                parts.append(text)
                stamps.append(stamp)
                if text.endswith(b"\n"):
                    point.given(*stamps)
                    got_any = True
                    yield b"".join(parts)
                    parts.clear()
                    stamps.clear()
        except Exception as e:
            if not transient(e):
                raise
            broke = True
        if not following and not broke:
            if parts:  # the container has ended: its last line has no line break
                yield b"".join(parts)
            return
        if following:
            state = api.inspect_container(container_id).get("State") or {}
            following = bool(state.get("Running"))  # else one last read of what came since
        if not got_any:
            time.sleep(_IDLE_S)
