"""Following a container's log through a restart of the Docker daemon.

The daemon ends every log stream when it stops; with ``live-restore`` the container runs
on and its log keeps growing. The follower asks for the log with timestamps, remembers
the stamp of the last entry it gave out (and how many entries carried that very stamp),
and when the stream ends while the container still runs, or breaks, it asks again from
that second on and drops what it already gave: no line lost, none repeated.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["follow_log"]

_Stamp = tuple[str, int]
"""(RFC 3339 seconds ``YYYY-MM-DDTHH:MM:SS``, nanoseconds): ordered like the time."""


def _stamp(raw: bytes) -> _Stamp:
    text = raw.decode("ascii", "replace").rstrip("Z")
    seconds, _, fraction = text.partition(".")
    nanos = int((fraction[:9]).ljust(9, "0")) if fraction[:9].isdigit() else 0
    return seconds, nanos


def _epoch_seconds(stamp: _Stamp) -> int:
    from datetime import datetime, timezone

    at = datetime.strptime(stamp[0], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return int(at.timestamp())


def _entries(frames: Any) -> Iterator[tuple[_Stamp, bytes]]:
    """(stamp, line) per log line: each frame is one timestamped entry; a line longer than
    the daemon's entry limit comes as several entries, joined here under the first stamp."""
    pending: bytes = b""
    first: _Stamp | None = None
    for frame in frames:
        raw, _, text = frame.partition(b" ")
        if first is None:
            first = _stamp(raw)
        pending += text
        if pending.endswith(b"\n"):
            yield first, pending
            pending, first = b"", None
    if first is not None and pending:
        yield first, pending


def follow_log(api: Any, container_id: str, kwargs: dict[str, Any]) -> Iterator[bytes]:
    """The container's log lines (each with its ``\\n``) until it stops, resumed across
    daemon restarts; ``kwargs`` are those of ``logs()`` (streams, ``since``, ``until``)."""
    from torchx.schedulers.docker_retry import transient

    last: _Stamp | None = None
    at_last = 0  # entries given out that carry the stamp `last`
    following = True
    while True:
        ask = dict(kwargs, timestamps=True, follow=following, stream=True)
        if last is not None:
            ask["since"] = _epoch_seconds(last)
        skip = at_last
        try:
            for stamp, line in _entries(api.logs(container_id, **ask)):
                if last is not None and stamp < last:
                    continue  # given out before the stream was asked for again
                if last is not None and stamp == last and skip:
                    skip -= 1
                    continue
                at_last = at_last + 1 if stamp == last else 1
                last = stamp
                yield line
        except Exception as e:
            if not transient(e):
                raise
        if not following:
            return
        state = api.inspect_container(container_id).get("State") or {}
        if not state.get("Running"):
            following = False  # one last read of what came while the stream was down
