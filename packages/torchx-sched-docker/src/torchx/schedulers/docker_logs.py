"""Following a container's log through a restart of the Docker daemon.

The daemon ends every log stream when it stops; with ``live-restore`` the container runs
on and its log keeps growing. The follower asks for the log with timestamps and, when
the stream ends while the container still runs, or breaks, asks again from where it
stood (:mod:`torchx.schedulers.log_resume`): no line lost, none repeated.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torchx.schedulers.log_resume import ResumePoint, Stamp, parse_stamp

__all__ = ["follow_log"]


def _entries(frames: Any) -> Iterator[tuple[Stamp | None, bytes]]:
    """(stamp, line) per log line: each frame is one timestamped entry; a line longer than
    the daemon's entry limit comes as several entries, joined here under the first stamp."""
    pending: bytes = b""
    first: Stamp | None = None
    started = False
    for frame in frames:
        raw, _, text = frame.partition(b" ")
        if not started:
            first, started = parse_stamp(raw), True
        pending += text
        if pending.endswith(b"\n"):
            yield first, pending
            pending, first, started = b"", None, False
    if pending:
        yield first, pending


def follow_log(api: Any, container_id: str, kwargs: dict[str, Any]) -> Iterator[bytes]:
    """The container's log lines (each with its ``\\n``) until it stops, resumed across
    daemon restarts; ``kwargs`` are those of ``logs()`` (streams, ``since``, ``until``)."""
    from torchx.schedulers.docker_retry import transient

    point = ResumePoint()
    following = True
    while True:
        ask = dict(kwargs, timestamps=True, follow=following, stream=True)
        since = point.resume()
        if since is not None:
            ask["since"] = since
        try:
            for stamp, line in _entries(api.logs(container_id, **ask)):
                if point.fresh(stamp):
                    yield line
        except Exception as e:
            if not transient(e):
                raise
        if not following:
            return
        state = api.inspect_container(container_id).get("State") or {}
        if not state.get("Running"):
            following = False  # one last read of what came while the stream was down
