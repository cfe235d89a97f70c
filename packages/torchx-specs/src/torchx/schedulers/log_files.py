"""Following replica log files: a thin line iterator that tails a file until its app ends.

Shared by every scheduler whose replicas write plain log files on a filesystem this host
can read (``local_cwd`` in ``torchx-runner``, ``slurm`` in ``torchx-sched-slurm``), so it
lives in ``torchx-specs``; ``torchx.schedulers.local_logs`` re-exports it.

Lines keep their trailing ``"\\n"`` (the last line of a finished log may lack it). Files are
read as UTF-8 with undecodable bytes replaced, split on ``"\\n"`` only (a ``"\\r"`` of a
progress bar does not end a line), exactly as the replica wrote them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import IO, Any, Protocol

__all__ = ["LogIterator", "follow_lines", "open_log", "read_lines"]


class _AppWatcher(Protocol):
    """The part of a scheduler that following a log needs."""

    def describe(self, app_id: str) -> Any: ...


def open_log(path: str) -> IO[str]:
    return open(path, encoding="utf-8", errors="replace", newline="\n")


def read_lines(path: str, regex: str | None = None) -> Iterator[str]:
    """The lines currently in ``path`` (filtered by ``re.search(regex)`` when given).

    Deliberately nothing but the file object's own line iteration: this is as fast as
    reading a file line by line gets in Python.
    """
    with open_log(path) as f:
        if regex:
            import re

            yield from filter(re.compile(regex).search, f)
        else:
            yield from f


def _is_finished(scheduler: _AppWatcher, app_id: str) -> bool:
    from torchx.specs.api import is_terminal

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


def follow_lines(scheduler: _AppWatcher, app_id: str, path: str) -> Iterator[str]:
    """Lines of ``path`` until the app is terminal (or unknown) and the file is exhausted.

    Waits for new data through the scheduler's ``wait_for_change`` (backing off from 5 ms
    to 100 ms), so an idle follower costs nothing and returns as soon as the app ends.
    Only complete lines are yielded while the app runs.
    """
    delay = _MIN_WAIT_S
    while not os.path.isfile(path):
        if _is_finished(scheduler, app_id):
            raise RuntimeError(f"app {app_id} finished without writing its log file {path}")
        _wait(scheduler, app_id, delay)
        delay = min(delay * 2, _MAX_WAIT_S)
    with open_log(path) as f:
        pending = ""
        delay = _MIN_WAIT_S
        while True:
            # check before draining: the app's final state is written after its logs
            finished = _is_finished(scheduler, app_id)
            got_data = False
            for chunk in iter(f.readline, ""):
                got_data = True
                if chunk[-1] != "\n":
                    pending += chunk
                    continue
                if pending:
                    yield pending + chunk
                    pending = ""
                else:
                    yield chunk
            if finished:
                if pending:
                    yield pending
                return
            if got_data:
                delay = _MIN_WAIT_S
            _wait(scheduler, app_id, delay)
            delay = min(delay * 2, _MAX_WAIT_S)


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
        if not os.path.isfile(self._log_file):
            if _is_finished(self._scheduler, self._app_id):
                raise RuntimeError(
                    f"app {self._app_id} finished without writing its log file {self._log_file}"
                )
            return iter(())  # nothing logged yet
        return read_lines(self._log_file)

    def __iter__(self) -> LogIterator:
        if self._lines is None:
            self._lines = self._start()
        return self

    def __next__(self) -> str:
        if self._lines is None:
            self._lines = self._start()
        return next(self._lines)
