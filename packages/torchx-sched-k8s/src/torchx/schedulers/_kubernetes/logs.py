"""Logs of a replica's pod: every container's lines, followed through API server and
kubelet restarts without losing or repeating a line."""

from __future__ import annotations

import datetime as dt
import functools
import math
import queue
import re
import time
from collections.abc import Iterator
from typing import Any

from torchx.schedulers._kubernetes import client as _client
from torchx.schedulers.api import whole_lines
from torchx.schedulers.shared import log_resume
from torchx.specs.failure import LOG_TAIL_BYTES
from torchx.util.support.retry import in_thread

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime

    from torchx.schedulers.api import LogQuery

__all__ = ["check_stream", "log_tail", "replica_lines"]

_RESUME_SLACK_S = 2  # seconds asked for before a resume point, for clocks and rounding
_RESUME_IDLE_S = 0.2  # before asking again when a stream ended with nothing new
_TIMESTAMP = re.compile(rb"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?Z?")


def check_stream(stream: str) -> None:
    """Kubernetes keeps one combined log per container: refuses stdout or stderr alone."""
    if stream != "combined":
        raise ValueError(
            "kubernetes keeps one combined log per container; use streams=combined"
            " (the default) instead of stdout/stderr"
        )


def log_tail(core: Any, ns: str, pod: dict[str, Any]) -> str:
    """The end of a pod's log (its first failed container's, else its first container's:
    a root cause, or ``torchx.progress``'s reports): the last lines, at most 64 KiB, read
    from the end by the kubelet."""

    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    failed = [
        c.get("name")
        for c in statuses
        if ((c.get("state") or {}).get("terminated") or {}).get("exitCode") not in (0, None)
    ]
    names = failed or [c.get("name") for c in (pod.get("spec") or {}).get("containers") or ()]
    if not names:
        return ""
    name = str((pod.get("metadata") or {}).get("name"))
    try:
        text = _client.call(
            functools.partial(
                core.read_namespaced_pod_log,
                name,
                ns,
                container=names[0],
                tail_lines=400,
                limit_bytes=LOG_TAIL_BYTES,
            ),
            f"reading the end of the log of {name}",
            ns,
        )
    except _client.KubernetesApiError:  # no log (never started, or gone): no tail
        return ""
    return text if isinstance(text, str) else ""


def replica_lines(core: Any, ns: str, pod: dict[str, Any], query: LogQuery) -> Iterator[str]:
    """Lines (timestamped by Kubernetes) of every container of ``pod``, a replica's pod.

    Lines of containers other than the first are prefixed with ``[container]``.
    ``follow`` follows the log until the containers end, keeping line breaks.
    """
    pod_name = pod["metadata"]["name"]
    containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or ()]
    kw: dict[str, Any] = {"timestamps": True, "follow": query.follow}
    since = query.since
    if since is not None:
        now = dt.datetime.now(dt.timezone.utc)
        start = since if since.tzinfo else since.astimezone()
        kw["since_seconds"] = max(1, math.ceil((now - start).total_seconds()))
    sources = [
        _container_lines(core, ns, pod_name, c, i > 0, kw, query.until)
        for i, c in enumerate(containers)
    ]
    if query.follow and len(sources) > 1:
        return _merge(sources)
    return _chain(sources)


def _container_lines(  # noqa: PLR0917
    core: Any,
    ns: str,
    pod_name: str,
    container: str,
    prefixed: bool,
    kw: dict[str, Any],
    until: datetime | None,
) -> Iterator[str]:
    """One container's lines; a followed log whose stream breaks or ends while the
    container runs (an API server or kubelet restart, a dropped connection) is asked
    for again from where it stood (:mod:`torchx.schedulers.shared.log_resume`), so no line is
    lost or repeated. A line cut by the break is not given out: it comes again whole."""

    prefix = f"[{container}] " if prefixed else ""
    limit = None
    if until is not None:
        limit = (until if until.tzinfo else until.astimezone()).strftime("%Y-%m-%dT%H:%M:%S")
    point = log_resume.ResumePoint()
    following = bool(kw.get("follow"))
    node_ahead_s = 0.0  # how far the node's clock seems ahead of ours (its stamps)
    while True:
        ask = dict(kw, follow=following)
        since = point.resume()
        if since is not None:
            # sinceSeconds counts back from the node's clock: ask from a little earlier
            # than the resume second; what comes before it is refused by the point
            back = time.time() - since + max(0.0, node_ahead_s) + _RESUME_SLACK_S
            ask["since_seconds"] = max(1, math.ceil(back))
        response = _client.call(
            functools.partial(
                core.read_namespaced_pod_log,
                pod_name,
                ns,
                container=container,
                _preload_content=False,
                **ask,
            ),
            f"reading the log of {pod_name}/{container}",
            ns,
        )
        broke = got_any = False
        try:
            for raw in whole_lines(_client.iter_chunks(response)):
                if following and not raw.endswith(b"\n"):
                    break  # the stream ended inside a line: read it again whole
                stamp = _TIMESTAMP.match(raw)
                if limit is not None and stamp and stamp.group(1).decode() > limit:
                    response.close()
                    return
                parsed = log_resume.parse_stamp(stamp.group(0)) if stamp else None
                if not point.fresh(parsed):
                    continue
                if parsed is not None and following:
                    node_ahead_s = max(node_ahead_s, log_resume.stamp_seconds(parsed) - time.time())
                point.given(parsed)
                got_any = True
                yield prefix + raw.decode("utf-8", errors="replace")
        except Exception as e:
            if not following or not _client.stream_broke(e):
                raise
            broke = True
        if not following:
            return
        # the server ends a followed log when the container ends, but a restart of the
        # API server or kubelet, or a proxy, ends it too: ask the pod which it was
        try:
            if _container_ended(core, ns, pod_name, container):
                following = False  # one last read of what came while it was away
        except _client.KubernetesApiError as e:
            if e.status == 404:
                return  # the pod is gone, and its log with it
            raise
        if not broke and not got_any and following:
            time.sleep(_RESUME_IDLE_S)


def _container_ended(core: Any, ns: str, pod_name: str, container: str) -> bool:
    pod = _client.read_json(core.read_namespaced_pod, f"reading pod {pod_name!r}", ns, pod_name, ns)
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    for found in status.get("containerStatuses") or ():
        if found.get("name") == container:
            return "terminated" in (found.get("state") or {})
    return False


def _chain(sources: list[Iterator[str]]) -> Iterator[str]:
    for source in sources:
        yield from source


def _merge(sources: list[Iterator[str]]) -> Iterator[str]:
    """Lines of several followed logs, in the order they arrive (one thread per log)."""

    lines: queue.Queue[tuple[int, str | BaseException | None]] = queue.Queue(maxsize=1024)

    def pump(i: int, source: Iterator[str]) -> None:
        try:
            for line in source:
                lines.put((i, line))
        except BaseException as e:  # handed to the reader, which re-raises it
            lines.put((i, e))
        lines.put((i, None))

    for i, source in enumerate(sources):
        in_thread(pump, i, source)  # with the reader's outage budget
    open_count = len(sources)
    while open_count:
        _, item = lines.get()
        if item is None:
            open_count -= 1
        elif isinstance(item, BaseException):
            raise item
        else:
            yield item
