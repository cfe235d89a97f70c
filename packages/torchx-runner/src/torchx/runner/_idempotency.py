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

import fcntl
import hashlib
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from torchx.runner._requested_as import requested_words
from torchx.schedulers.ids import ENV_REQUEST, ENV_REQUEST_HASH, key_id
from torchx.specs.api import AppDef, CfgVal
from torchx.util.log import get_logger
from torchx.util.startup.lazy_dataclass import asdict
from torchx.util.strings import escape_unprintable
from torchx.util.support.atomic import FILE_MODE, check_private, make_private_dirs
from torchx.util.support.home import torchx_home

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers.api import Scheduler

__all__ = [
    "IdempotencyLockTimeout",
    "check_key",
    "request_env",
    "submit_once",
]

logger = get_logger(__name__)

MAX_KEY_LENGTH = 1024

_MAX_REQUEST_WORDS = 200


def request_env(app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal] | None) -> dict[str, str]:
    """The env an app of a key keeps of its request: its hash (the app as given, less the
    ``TORCHX_*`` env TorchX adds, the scheduler and the run options asked for) and the
    words that made it."""
    given = asdict(app)
    for role in given["roles"]:  # what TorchX adds (the run's ids) is not the request's
        role["env"] = {k: v for k, v in role["env"].items() if not k.startswith("TORCHX_")}
    request = {"scheduler": scheduler, "cfg": dict(cfg or {}), "app": given}
    canonical = json.dumps(request, sort_keys=True, default=str)
    words = requested_words() or " ".join(
        shlex.join([role.entrypoint, *role.args]) for role in app.roles
    )
    if len(words) > _MAX_REQUEST_WORDS:
        words = words[: _MAX_REQUEST_WORDS - 1] + "…"
    return {
        ENV_REQUEST_HASH: hashlib.sha256(canonical.encode()).hexdigest()[:16],
        ENV_REQUEST: words,
    }


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


LOCK_WAIT_S = 600.0
"""How long a run waits for another run of the same key on this host to finish
submitting (``$TORCHX_LOCK_WAIT_S`` overrides it) before it gives up with one line."""


class IdempotencyLockTimeout(TimeoutError):
    """Another run of the same key on this host held its lock longer than allowed."""


def _holder(fd: int) -> str:
    """Who holds the lock, from what its holder wrote into the lock file."""
    try:
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""

    return escape_unprintable(text) or "another process (it wrote nothing yet)"


@contextmanager
def _key_lock(key: str) -> Iterator[None]:
    """Holds this host's lock of ``key`` (``$TORCHX_HOME/locks/``: the user's own, mode
    0700, no link). The holder writes who it is into the file; a run that has to wait
    says who holds it, and gives up after :data:`LOCK_WAIT_S` with one line."""

    locks = os.path.join(torchx_home(), "locks")
    check_private(locks, torchx_home())
    make_private_dirs(locks)
    check_private(locks, torchx_home())  # made by another process just now: checked too
    fd = os.open(
        os.path.join(locks, f"idempotency-{key_id(key)}.lock"),
        os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
        FILE_MODE,
    )
    try:
        wait_s = float(os.environ.get("TORCHX_LOCK_WAIT_S") or LOCK_WAIT_S)
        deadline = None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + wait_s
                    logger.warning(
                        "waiting for another run of idempotency key %r on this host to"
                        " finish submitting: %s (giving up after %.0f s)",
                        key,
                        _holder(fd),
                        wait_s,
                    )
                elif now >= deadline:
                    raise IdempotencyLockTimeout(
                        f"another run of idempotency key {key!r} on this host is still"
                        f" submitting after {wait_s:.0f} s: {_holder(fd)}; wait for it, or"
                        " stop it and run again (TORCHX_LOCK_WAIT_S sets the wait)"
                    ) from None
                time.sleep(0.1)
        me = f"pid {os.getpid()} ({' '.join(sys.argv)[:200]}) since {time.strftime('%H:%M:%S')}"
        os.ftruncate(fd, 0)
        os.pwrite(fd, me.encode("utf-8", "replace"), 0)
        yield
    finally:
        os.close(fd)


def _found(sched: Scheduler[object], app_id: str, request: Mapping[str, str]) -> tuple[str, str]:
    """``(state, other)`` of the found app: its state (``UNKNOWN`` if it cannot be read),
    and, when it was made from another request than ``request`` (:func:`request_env`),
    which (``; it was made by `utils.sh exit 3`, this run asks for `utils.echo` ...``; else
    "")."""
    try:
        found = sched.describe(app_id)
    except Exception as e:  # the warning must not fail the run: the app exists
        logger.debug("cannot read the state of %s: %s", app_id, e)
        found = None
    if found is None:
        return "UNKNOWN", ""
    env = found.roles[0].env if found.roles else {}
    made = env.get(ENV_REQUEST_HASH)
    if made is None or not request or made == request.get(ENV_REQUEST_HASH):
        return found.state.name, ""  # the same request (or a backend that keeps no env)
    by = escape_unprintable(env.get(ENV_REQUEST) or "another request")
    asks = escape_unprintable(request.get(ENV_REQUEST, ""))
    other = f"; it was made by `{by}`, this run asks for `{asks}` (use another key to run it)"
    return found.state.name, other


def submit_once(
    sched: Scheduler[object],
    key: str,
    *,
    cfg: Mapping[str, CfgVal],
    submit: Callable[[], str],
    handle_of: Callable[[str], str],
    target: str,
    request: Mapping[str, str] | None = None,
) -> tuple[str, bool]:
    """``(app_id, submitted)``: the app of ``key`` on the target, submitted by ``submit``
    only when the scheduler has none. ``handle_of`` makes an app id a handle and
    ``target`` names the target, for the messages; ``request`` (:func:`request_env`)
    tells a found app made from another request."""
    with _key_lock(key):
        existing = sched.find_by_idempotency_key(key, cfg)
        if existing is not None:
            state, other = _found(sched, existing, request or {})
            logger.warning(
                "an app with idempotency key %r exists already on %s: %s (%s)%s; nothing was"
                " submitted",
                key,
                target,
                handle_of(existing),
                state,
                other,
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
