"""Following replica log files: a thin line iterator that tails a file until its app ends.

Shared by every scheduler whose replicas write plain log files on a filesystem this host
can read (``local_cwd`` in ``torchx-runner``, ``slurm`` in ``torchx-sched-slurm``), so it
lives in ``torchx-specs``, apart from the contract.

Lines keep their trailing ``"\\n"`` (the last line of a finished log may lack it). Files are
read as UTF-8 with undecodable bytes replaced, split on ``"\\n"`` only (a ``"\\r"`` of a
progress bar does not end a line), exactly as the replica wrote them.

Full speed: iterating a 200 MiB log line by line costs a Python object and a call per
line; copying it to a terminal or a pipe needs neither. So :py:class:`LogLines` and
:py:class:`LogIterator` are iterators of ``str`` lines that also offer ``raw_chunks()``:
the same log as undecoded ``bytes`` blocks, each ending at a line end (only the very last
block of a finished log may lack its ``"\\n"``). A consumer that knows the method (the
CLI's log streamer) uses it; anything else sees lines.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from functools import partial

from torchx.schedulers.api import LINE_SPLIT_MARK, MAX_LINE_BYTES
from torchx.specs.api import is_terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any, Protocol, TypeVar

    _T = TypeVar("_T")

    class _AppWatcher(Protocol):
        """The part of a scheduler that following a log needs."""

        def describe(self, app_id: str) -> Any: ...


__all__ = [
    "FOLLOW_STOP",
    "LogIterator",
    "LogLines",
    "follow_chunks",
    "follow_files",
    "follow_lines",
    "open_log",
    "read_chunks",
    "read_lines",
]


FOLLOW_STOP: ContextVar[threading.Event | None] = ContextVar("torchx_follow_stop", default=None)
"""Set (in the thread that follows) to an event that ends the follow once set, at its next
round: a follower whose reader went away (a closed dashboard page) ends within
``_MAX_WAIT_S`` even when the log is idle."""


def _stopped() -> bool:
    stop = FOLLOW_STOP.get()
    return stop is not None and stop.is_set()


def open_log(path: str) -> IO[str]:
    return open(path, encoding="utf-8", errors="replace", newline="\n")


def read_lines(path: str, regex: str | None = None) -> Iterator[str]:
    """The lines currently in ``path`` (filtered by ``re.search(regex)`` when given).

    The file object's own ``readline``, bounded: a line longer than
    :data:`~torchx.schedulers.api.MAX_LINE_BYTES` comes in pieces, each but the last
    ending with the split mark (as a followed log has it), so a program that never ends
    its line cannot make a reader (``torchx log --regex``, the dashboard's progress
    history) hold all of it. As fast as iterating the file.
    """

    split = LINE_SPLIT_MARK.decode()
    with open_log(path) as f:
        pieces = iter(partial(f.readline, MAX_LINE_BYTES), "")
        lines = (p + split if len(p) == MAX_LINE_BYTES and p[-1] != "\n" else p for p in pieces)
        if regex:
            yield from filter(re.compile(regex).search, lines)
        else:
            yield from lines


def _is_finished(scheduler: _AppWatcher, app_id: str) -> bool:
    desc = scheduler.describe(app_id)
    return desc is None or is_terminal(desc.state)


def _wait(scheduler: _AppWatcher, app_id: str, timeout: float) -> None:
    wait_for_change = getattr(scheduler, "wait_for_change", None)
    if wait_for_change is None:
        time.sleep(timeout)
    else:
        wait_for_change(app_id, timeout)


_MIN_WAIT_S = 0.005
_MAX_WAIT_S = 0.1
_BLOCK = 1 << 16  # below malloc's mmap threshold: a block's buffers are reused, not mapped


def _wait_for_file(scheduler: _AppWatcher, app_id: str, path: str) -> None:
    delay = _MIN_WAIT_S
    while not os.path.isfile(path):
        if _stopped():
            return
        if _is_finished(scheduler, app_id):
            raise RuntimeError(f"app {app_id} finished without writing its log file {path}")
        _wait(scheduler, app_id, delay)
        delay = min(delay * 2, _MAX_WAIT_S)


def _follow(
    scheduler: _AppWatcher, app_id: str, drain: Callable[[bool], Iterator[_T]]
) -> Iterator[_T]:
    """What ``drain(final)`` yields, round after round, until the app has ended.

    Each round drains what the file holds now; ``final`` is true for the last round (the
    app had ended before it began), where a partial last line is yielded too. Between
    rounds, waits through the scheduler's ``wait_for_change`` (5 ms backing off to 100 ms).
    """
    delay = _MIN_WAIT_S
    while True:
        # check before draining: the app's final state is written after its logs
        finished = _is_finished(scheduler, app_id)
        got_data = False
        for item in drain(finished):
            got_data = True
            yield item
        if finished or _stopped():
            return
        if got_data:
            delay = _MIN_WAIT_S
        _wait(scheduler, app_id, delay)
        delay = min(delay * 2, _MAX_WAIT_S)


def _whole_lines(f: IO[str], pending: list[str]) -> Iterator[str]:
    """The complete lines ``f`` holds now; a partial last line waits in ``pending`` and is
    joined to its rest on a later call (split with the mark once it reaches 1 MiB)."""
    for chunk in iter(lambda: f.readline(MAX_LINE_BYTES), ""):
        if chunk[-1] != "\n":
            pending.append(chunk)
            if sum(map(len, pending)) >= MAX_LINE_BYTES:
                yield "".join(pending) + LINE_SPLIT_MARK.decode()
                pending.clear()
        elif pending:
            pending.append(chunk)
            yield "".join(pending)
            pending.clear()
        else:
            yield chunk


def follow_lines(scheduler: _AppWatcher, app_id: str, path: str) -> Iterator[str]:
    """Lines of ``path`` until the app is terminal (or unknown) and the file is exhausted.

    Waits for new data through the scheduler's ``wait_for_change`` (backing off from 5 ms
    to 100 ms), so an idle follower costs nothing and returns as soon as the app ends.
    Only complete lines are yielded while the app runs.
    """
    _wait_for_file(scheduler, app_id, path)
    if _stopped():
        return
    with open_log(path) as f:
        pending: list[str] = []

        def drain(final: bool) -> Iterator[str]:
            yield from _whole_lines(f, pending)
            if final and pending:
                yield "".join(pending)

        yield from _follow(scheduler, app_id, drain)


def follow_files(
    scheduler: _AppWatcher, app_id: str, paths: list[str], should_tail: bool
) -> Iterator[str]:
    """Lines of several log files of one replica (stdout and stderr written apart, as srun
    does), each file's in order; followed until the app ends when ``should_tail``.

    One path is :class:`LogIterator`. Several: a file that does not exist yet counts as
    empty, only whole lines are yielded while the app runs, and partial last lines are
    yielded once it has ended.
    """
    if len(paths) == 1:
        yield from LogIterator(app_id, paths[0], scheduler, should_tail=should_tail)
        return
    files: dict[str, IO[str]] = {}
    partial: dict[str, list[str]] = {path: [] for path in paths}

    def drain(final: bool) -> Iterator[str]:
        for path in paths:
            f = files.get(path)
            if f is None:
                if not os.path.isfile(path):
                    continue
                f = files[path] = open_log(path)
            yield from _whole_lines(f, partial[path])
        if final:
            yield from ("".join(rest) for rest in partial.values() if rest)

    try:
        yield from _follow(scheduler, app_id, drain) if should_tail else drain(True)
    finally:
        for f in files.values():
            f.close()


class LogLines(Iterator[str]):
    """The lines of one replica log; ``raw_chunks()`` gives the same log as raw blocks.

    Use one or the other: both read the file from the start, independently.
    """

    def __init__(
        self, make_lines: Callable[[], Iterator[str]], make_chunks: Callable[[], Iterator[bytes]]
    ) -> None:
        self._make_lines = make_lines
        self._make_chunks = make_chunks
        self._lines: Iterator[str] | None = None

    def __iter__(self) -> Iterator[str]:
        # the underlying iterator itself: a ``for`` loop then runs at its native speed
        if self._lines is None:
            self._lines = self._make_lines()
        return self._lines

    def __next__(self) -> str:
        return next(iter(self))

    def raw_chunks(self) -> Iterator[bytes]:
        """Undecoded blocks of whole lines, in order (see the module docstring)."""
        return self._make_chunks()


def _drain(f: Any, pending: bytearray) -> Iterator[bytes]:
    """Blocks of whole lines from what ``f`` holds now; a partial line is kept in ``pending``."""
    while data := f.read(_BLOCK):
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            pending += data
            if len(pending) >= MAX_LINE_BYTES:  # a line without end: split, never hold all
                yield bytes(pending[:MAX_LINE_BYTES]) + LINE_SPLIT_MARK
                del pending[:MAX_LINE_BYTES]
            continue
        if pending:
            yield bytes(pending) + data[:cut]
            pending.clear()
        else:
            yield data if cut == len(data) else data[:cut]
        pending += data[cut:]


def read_chunks(path: str) -> Iterator[bytes]:
    """What ``path`` holds now, as raw blocks of whole lines (the last may be partial)."""
    with open(path, "rb") as f:
        pending = bytearray()
        yield from _drain(f, pending)
        if pending:
            yield bytes(pending)


def follow_chunks(scheduler: _AppWatcher, app_id: str, path: str) -> Iterator[bytes]:
    """Raw blocks of whole lines of ``path`` as they are written, until the app has ended.

    :py:func:`follow_lines` in blocks: a partial line is held back while the app runs.
    """
    _wait_for_file(scheduler, app_id, path)
    if _stopped():
        return
    with open(path, "rb") as f:
        pending = bytearray()

        def drain(final: bool) -> Iterator[bytes]:
            yield from _drain(f, pending)
            if final and pending:
                yield bytes(pending)

        yield from _follow(scheduler, app_id, drain)


class LogIterator:
    """Iterates the lines of one log file of an app, following it while the app runs.

    Public because file-based schedulers (local_cwd, slurm) share it. With ``should_tail=False``
    it returns what the file holds now (nothing if the file does not exist yet); otherwise it
    waits for the file to appear and ends once the app is terminal (or no longer known to
    ``scheduler``) and the file is exhausted. Raises RuntimeError if the app ended without
    creating the file.
    """

    def __init__(
        self,
        app_id: str,
        log_file: str,
        scheduler: _AppWatcher,
        should_tail: bool = True,
    ) -> None:
        self._app_id = app_id
        self._log_file = log_file
        self._scheduler = scheduler
        self._should_tail = should_tail
        self._lines: Iterator[str] | None = None

    def _start(self) -> Iterator[str]:
        if self._should_tail:
            return follow_lines(self._scheduler, self._app_id, self._log_file)
        if not self._exists():
            return iter(())  # nothing logged yet
        return read_lines(self._log_file)

    def _exists(self) -> bool:
        if os.path.isfile(self._log_file):
            return True
        if _is_finished(self._scheduler, self._app_id):
            raise RuntimeError(
                f"app {self._app_id} finished without writing its log file {self._log_file}"
            )
        return False

    def raw_chunks(self) -> Iterator[bytes]:
        """The same log as raw blocks of whole lines (see the module docstring)."""
        if self._should_tail:
            return follow_chunks(self._scheduler, self._app_id, self._log_file)
        return read_chunks(self._log_file) if self._exists() else iter(())

    def __iter__(self) -> LogIterator:
        if self._lines is None:
            self._lines = self._start()
        return self

    def __next__(self) -> str:
        if self._lines is None:
            self._lines = self._start()
        return next(self._lines)
