"""Exactly-once submission: ``Runner.run(..., idempotency_key=KEY)``.

A submission with a key first asks the scheduler for an app of that key on the same
target (:meth:`Scheduler.find_by_idempotency_key`) and submits only when there is none.
Every app of a key is named by the key (:func:`torchx.schedulers.ids.keyed_ids`), so:

- the key is on the backend's own object and outlives this process: a submission the
  backend accepted but whose answer was lost (a dropped connection) is found by the next
  run, and by this one, which looks again when the submission raises;
- two submissions at once on this host are serialized by a lock file per key; across
  hosts, a backend that refuses a second object of one name (a Kubernetes Job, a Docker
  container, a Ray submission id, a local_cwd app directory) refuses the second one,
  which then finds the first.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from torchx.specs.api import CfgVal
from torchx.util.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers.api import Scheduler

__all__ = ["check_key", "submit_once"]

logger = get_logger(__name__)

MAX_KEY_LENGTH = 1024


def check_key(key: str) -> str:
    """``key`` if it can be an idempotency key; else one ``ValueError`` line."""
    if not key or not key.strip():
        raise ValueError("the idempotency key is empty; give a non-empty string")
    if len(key) > MAX_KEY_LENGTH:
        raise ValueError(
            f"the idempotency key is {len(key)} characters long; give at most {MAX_KEY_LENGTH}"
        )
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        raise ValueError(
            "the idempotency key holds a control character (a line break?); give printable text"
        )
    return key


@contextmanager
def _key_lock(key: str) -> Iterator[None]:
    """Holds this host's lock of ``key`` (``$TORCHX_HOME/locks/``, private)."""
    import fcntl

    from torchx.schedulers.ids import key_id
    from torchx.util._support.atomic import FILE_MODE, make_private_dirs
    from torchx.util._support.home import torchx_home

    locks = os.path.join(torchx_home(), "locks")
    make_private_dirs(locks)
    fd = os.open(
        os.path.join(locks, f"idempotency-{key_id(key)}.lock"),
        os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
        FILE_MODE,
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def submit_once(
    sched: Scheduler[object],
    key: str,
    *,
    cfg: Mapping[str, CfgVal],
    submit: Callable[[], str],
    handle_of: Callable[[str], str],
    target: str,
) -> tuple[str, bool]:
    """``(app_id, submitted)``: the app of ``key`` on the target, submitted by ``submit``
    only when the scheduler has none. ``handle_of`` makes an app id a handle and
    ``target`` names the target, for the messages."""
    with _key_lock(key):
        existing = sched.find_by_idempotency_key(key, cfg)
        if existing is not None:
            logger.warning(
                "an app with idempotency key %r exists already on %s: %s; nothing was submitted",
                key,
                target,
                handle_of(existing),
            )
            return existing, False
        try:
            return submit(), True
        except Exception as error:
            # the backend may have taken it before the error (a lost answer), or another
            # host's submission of the key may have taken the name first
            found = sched.find_by_idempotency_key(key, cfg)
            if found is None:
                raise
            logger.warning(
                "the submission with idempotency key %r ended in an error (%s), but the app"
                " exists on %s: %s",
                key,
                str(error).splitlines()[0] if str(error) else type(error).__name__,
                target,
                handle_of(found),
            )
            return found, False
