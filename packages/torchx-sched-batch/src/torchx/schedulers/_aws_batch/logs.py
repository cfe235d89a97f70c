"""Reads a Batch node's log from CloudWatch Logs, optionally following it while it runs.

Batch's ``awslogs`` driver writes each node's stdout and stderr, interleaved, to one stream
of the group ``/aws/batch/job``; the stream's name is on the node's job (``<job id>#<node>``)
or its last attempt. Following re-reads the node's job between polls, so a retried job
(a new attempt, a new stream) is followed into its new stream.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from torchx.schedulers._aws_batch.client import AWSBatchError, api_call
from torchx.specs.failure import LOG_TAIL_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["LOG_GROUP", "iter_log_events", "tail", "to_datetime", "to_millis_since_epoch"]

LOG_GROUP = "/aws/batch/job"
_PAGE_LIMIT = 10_000
_POLL_MIN_S = 0.25
_POLL_MAX_S = 2.0


def to_millis_since_epoch(ts: datetime) -> int:
    """``ts`` as CloudWatch's milliseconds since the epoch."""
    return int(ts.timestamp() * 1000)


def to_datetime(ms_since_epoch: float) -> datetime:
    """CloudWatch's milliseconds since the epoch as a ``datetime``."""

    return datetime.fromtimestamp(ms_since_epoch / 1000)


def _read_stream(
    logs: Any,
    stream: str,
    start_ms: int | None,
    end_ms: int | None,
    token: str | None,
) -> tuple[list[dict[str, Any]], str | None, bool]:
    """One page of events after ``token``; (events, next token, stream exists)."""
    kwargs: dict[str, Any] = {
        "logGroupName": LOG_GROUP,
        "logStreamName": stream,
        "limit": _PAGE_LIMIT,
        "startFromHead": True,
    }
    if token:
        kwargs["nextToken"] = token
    if start_ms is not None:
        kwargs["startTime"] = start_ms
    if end_ms is not None:
        kwargs["endTime"] = end_ms
    try:
        page = api_call(f"read log stream {stream}", logs.get_log_events, **kwargs)
    except AWSBatchError as e:
        if e.code == "ResourceNotFoundException":
            return [], token, False  # not written yet (or already expired)
        raise
    return list(page.get("events") or []), page.get("nextForwardToken"), True


def tail(logs: Any, stream: str, events: int = 400) -> str:
    """The last ``events`` messages of ``stream``, at most 64 KiB (read from the end: one
    GetLogEvents call), ``""`` when the stream is not there."""

    try:
        page = api_call(
            f"read the end of log stream {stream}",
            logs.get_log_events,
            logGroupName=LOG_GROUP,
            logStreamName=stream,
            limit=events,
            startFromHead=False,
        )
    except AWSBatchError:
        return ""
    text = "".join(
        m if m.endswith("\n") else m + "\n"
        for m in (str(e.get("message", "")) for e in page.get("events") or ())
    )
    return text[-LOG_TAIL_BYTES:]


def iter_log_events(
    logs: Any,
    locate: Callable[[], tuple[str | None, bool]],
    since: datetime | None = None,
    until: datetime | None = None,
    should_tail: bool = False,
) -> Iterator[str]:
    """The messages (each ending in ``\\n``) of the stream that ``locate()`` names.

    ``locate()`` returns (stream name or None, whether the node has ended). Without
    ``should_tail`` the stream is read once to its end; with it, polling continues until
    the node has ended and its stream has been drained.
    """
    start_ms = to_millis_since_epoch(since) if since is not None else None
    end_ms = to_millis_since_epoch(until) if until is not None else None
    stream, ended = locate()
    token: str | None = None
    delay = _POLL_MIN_S
    while True:
        got_any = False
        if stream is not None:
            while True:
                events, next_token, _exists = _read_stream(logs, stream, start_ms, end_ms, token)
                for event in events:
                    message = str(event.get("message", ""))
                    yield message if message.endswith("\n") else message + "\n"
                got_any = got_any or bool(events)
                if not events or next_token == token:
                    token = next_token or token
                    break
                token = next_token
        if not should_tail or ended:
            return
        delay = _POLL_MIN_S if got_any else min(delay * 2, _POLL_MAX_S)
        time.sleep(delay)
        current, ended = locate()
        if current != stream:  # a new attempt writes a new stream
            stream, token = current, None
