"""Reading a Slurm replica's two log files (``.out`` and ``.err``) as one stream.

srun writes a replica's stdout and stderr to separate files; ``torchx log`` without
``--streams`` shows both, interleaved as they are written. Reading one file uses the
shared follower in :mod:`torchx.schedulers.log_files`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import IO, Any, Protocol

from torchx.schedulers.log_files import LogIterator, open_log

__all__ = ["follow_files"]

_MIN_WAIT_S = 0.02
_MAX_WAIT_S = 0.5


class _AppWatcher(Protocol):
    def describe(self, app_id: str) -> Any: ...


def _finished(watcher: _AppWatcher, app_id: str) -> bool:
    from torchx.specs.api import is_terminal

    desc = watcher.describe(app_id)
    return desc is None or is_terminal(desc.state)


def follow_files(
    watcher: _AppWatcher, app_id: str, paths: list[str], should_tail: bool
) -> Iterator[str]:
    """Lines of ``paths`` (each file's in order); followed until the app ends when tailing.

    One path is the shared :class:`LogIterator`. Several: files that do not exist yet count
    as empty, only whole lines are yielded while the app runs, and the rest is drained
    once it has ended.
    """
    if len(paths) == 1:
        yield from LogIterator(app_id, paths[0], watcher, should_tail=should_tail)
        return
    files: dict[str, IO[str]] = {}
    partial = dict.fromkeys(paths, "")
    delay = _MIN_WAIT_S
    try:
        while True:
            finished = not should_tail or _finished(watcher, app_id)
            got_data = False
            for path in paths:
                f = files.get(path)
                if f is None:
                    if not os.path.isfile(path):
                        continue
                    f = files[path] = open_log(path)
                for chunk in iter(f.readline, ""):
                    got_data = True
                    if chunk.endswith("\n"):
                        yield partial[path] + chunk
                        partial[path] = ""
                    else:
                        partial[path] += chunk
            if finished:
                yield from (rest for rest in partial.values() if rest)
                return
            delay = _MIN_WAIT_S if got_data else min(delay * 2, _MAX_WAIT_S)
            time.sleep(delay)
    finally:
        for f in files.values():
            f.close()
