"""Writes kept while the MLflow server is away, and written once it is back.

A job must not fail because its tracking server restarts, and what it recorded must not
vanish either. A write that still finds the server away after the retry budget
(``TORCHX_RETRY_S``) is appended to a private journal under ``$TORCHX_HOME/trackers/
mlflow-pending/`` (one per tracking URI); the next write to that server from any process
of this user replays the journal first. What cannot be replayed (an artifact file gone
meanwhile) is reported as not recorded, never dropped silently.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

from torchx.util.support.atomic import check_private, make_private_dirs
from torchx.util.support.home import torchx_home

__all__ = ["journal_path", "keep", "taken"]


def journal_path(tracking_uri: str) -> str:
    """The journal of writes kept for ``tracking_uri`` (private to this user)."""

    digest = hashlib.sha256(tracking_uri.encode("utf-8")).hexdigest()[:24]
    return os.path.join(torchx_home(), "trackers", "mlflow-pending", f"{digest}.jsonl")


def keep(tracking_uri: str, op: str, args: list[Any], kwargs: dict[str, Any]) -> str:
    """Appends one write to the journal (one line, appended whole); returns its path."""

    path = journal_path(tracking_uri)
    check_private(path, torchx_home())  # never write where another user could swap it
    make_private_dirs(os.path.dirname(path))
    line = json.dumps({"op": op, "args": args, "kwargs": kwargs}, default=str) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
    return path


def taken(tracking_uri: str) -> Iterator[dict[str, Any]]:
    """The kept writes, oldest first, each taken out of the journal as it is read (the
    journal is renamed first, so two processes never replay the same write)."""

    path = journal_path(tracking_uri)
    if not os.path.exists(path):
        return
    try:
        check_private(path, torchx_home())
    except PermissionError as e:  # a journal another user could write is never replayed
        import logging

        logging.getLogger(__name__).warning("not replaying kept MLflow writes: %s", e)
        return
    claimed = f"{path}.{os.getpid()}.replaying"
    try:
        os.rename(path, claimed)
    except FileNotFoundError:
        return  # another process took it
    try:
        with open(claimed, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)
    finally:
        os.unlink(claimed)
