"""A replica's output on Ray, read through the dashboard's log API: what ``torchx log``
follows and the tail a root cause and ``torchx.progress`` are read from.

The driver stamps every line a replica writes (``<UTC time> <line>``), so the replica's
stdout and stderr can be merged by time and told from Ray's own lines in the same file.
A file is read by node and file name where the driver recorded them (that works after
the actor is gone), else by actor id.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any

from torchx.schedulers._ray.client import RayApiError, RayJobsClient
from torchx.specs.failure import LOG_TAIL_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._ray.status import ReplicaInfo

__all__ = ["actor_lines", "aware", "parse_stamp", "replica_lines", "replica_tail"]

FOLLOW_POLL_S = 1.0
UNREAD_GRACE_S = 15.0
TAIL_LINES = 400  # of a failed replica's log, for its root cause
_STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
"""The UTC time the driver's replica actor puts before each line it copies."""
Entries = list[tuple[str, str]]
"""``(time stamp, line)`` of a replica's log."""


def replica_tail(client: RayJobsClient, info: ReplicaInfo) -> str:
    """The end of a replica's last attempt: its stdout and stderr merged by the driver's
    stamps (a traceback and the lines before it, ``torchx.progress`` reports); the last
    lines only, as Ray's log API reads them from the end."""
    attempts = list(zip(info.actor_ids or [], info.log_files or [], strict=False))
    if not attempts:
        return ""
    actor_id, files = attempts[-1]
    entries: Entries = []
    for suffix in ("out", "err"):
        entries += actor_lines(client, actor_id, suffix, files, lines=TAIL_LINES) or []
    entries.sort(key=lambda entry: entry[0])  # stable: a tie keeps stdout before stderr
    return "".join(text for _, text in entries[-TAIL_LINES:])[-LOG_TAIL_BYTES:]


def actor_lines(
    client: RayJobsClient,
    actor_id: str,
    suffix: str,
    files: Mapping[str, str],
    lines: int = -1,
) -> Entries | None:
    """``(time stamp, line)`` of what the replica wrote to one stream; None while the
    file cannot be read (not written yet, or the node's agent does not answer).

    Read by node and file name where the driver recorded them (that works after the
    actor is gone), else by actor id. Only the lines the driver stamped are the
    replica's: the rest is Ray's own (the worker's headers, its exit tracebacks)."""
    try:
        if files.get("node_id") and files.get(suffix):
            raw = client.node_log(files["node_id"], files[suffix], lines)
        else:
            raw = client.actor_log(actor_id, suffix, lines)
    except RayApiError as e:
        if e.status in (404, 500):
            return None
        raise
    entries = []
    *whole, last = raw.split(b"\n")  # on \n only: a progress bar's \r ends no line
    for line in [piece + b"\n" for piece in whole] + ([last] if last else []):
        stamp, sep, rest = line.partition(b" ")
        if not sep or not _STAMP.fullmatch(stamp):
            continue
        entries.append((stamp.decode(), rest.decode("utf-8", "replace")))
    return entries


def replica_lines(
    client: RayJobsClient,
    replica: Callable[[], tuple[Any, bool]],
    *,
    what: str,
    suffixes: list[str],
    since: datetime | None,
    until: datetime | None,
    follow: bool,
) -> Iterator[str]:
    """Every line of one replica's attempts, in the streams ``suffixes`` names, between
    ``since`` and ``until``; followed until it ends when ``follow``. ``replica()`` reads
    the replica's state afresh: (its info, whether it has finished)."""

    seen: dict[tuple[str, str], int] = {}
    unread_since: float | None = None
    while True:
        info, finished = replica()
        fresh: Entries = []
        unread: list[str] = []
        attempts = zip(info.actor_ids or [], info.log_files or [], strict=False)
        for actor_id, files in attempts:
            for suffix in suffixes:
                entries = actor_lines(client, actor_id, suffix, files)
                if entries is None:  # not readable (yet): keep what was read so far
                    unread.append(f"{actor_id}.{suffix}")
                    continue
                if not finished and entries and not entries[-1][1].endswith("\n"):
                    entries.pop()  # still being written: taken whole on a later read
                start = seen.get((actor_id, suffix), 0)
                seen[(actor_id, suffix)] = max(start, len(entries))
                fresh += entries[start:]
        fresh.sort(key=lambda entry: entry[0])  # stdout and stderr merged by time
        for stamp, text in fresh:
            line = text if text.endswith("\n") else text + "\n"  # a finished one's last
            when = parse_stamp(stamp)
            if since is not None and when is not None and when < aware(since):
                continue
            if until is not None and when is not None and when > aware(until):
                continue
            yield line
        if finished and unread:
            # a finished replica's files must be read once more before giving up: the
            # node's agent may answer late; nothing is dropped silently
            unread_since = unread_since or time.monotonic()
            if time.monotonic() - unread_since > UNREAD_GRACE_S:
                raise RuntimeError(
                    f"the logs of {what} could not be read"
                    f" from the Ray cluster ({', '.join(unread)}); its node may be gone"
                    " (see the Ray dashboard)"
                )
            time.sleep(FOLLOW_POLL_S / 2)
            continue
        if not follow or finished:
            return
        time.sleep(FOLLOW_POLL_S)


def parse_stamp(stamp: str) -> datetime | None:
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def aware(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.astimezone()
