"""The local_cwd launcher hands a launched app to its forked supervisor over a pipe.

Why: the supervisor is forked before the app is complete, so it starts while the launcher
still writes the app's files; the request and state then travel as :mod:`marshal` bytes
(built in, plain data only) instead of being written to disk and read back as JSON. Both
ends are this process's own code and the pipe is private to them.
"""

from __future__ import annotations

import marshal
import os

from torchx.util.support.atomic import write_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["receive", "send"]


def send(fd: int, request: dict[str, Any], state: dict[str, Any]) -> None:
    """Writes ``(request, state)`` to ``fd`` and closes it: end-of-file says "take over"."""

    try:
        write_all(fd, marshal.dumps((request, state)))  # the reader drains as we write
    finally:
        os.close(fd)


def receive(fd: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Blocks until the writer closes ``fd``; what it sent, or None if it sent nothing
    whole (it died before or while writing). Closes ``fd``."""

    chunks = []
    try:
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    if not chunks:
        return None
    try:
        request, state = marshal.loads(b"".join(chunks))  # noqa: S302 (our launcher, a private pipe)
    except (EOFError, ValueError, TypeError):
        return None
    return request, state
