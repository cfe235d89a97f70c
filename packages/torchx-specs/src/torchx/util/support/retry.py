"""Riding through a backend's restart: bounded, jittered retries of transient failures.

A job runs for days; the service the launcher asks about it (slurmctld, dockerd, an API
server, a dashboard) restarts, throttles or drops a connection now and then. Each backend
says which of its errors are transient (``is_transient``) and calls the service through
:func:`retry_call`; everything else (a 403, an unknown job, a refused spec) is raised at
once, so retries never turn a permanent error into a hang.

How long to keep trying depends on who is asking: a one-off ``torchx status`` gives up after
``TORCHX_RETRY_S`` seconds (default 15), while a wait or a followed log, which the user
expects to last as long as the job, keeps trying for ``TORCHX_OUTAGE_S`` seconds (default
600) inside :func:`outage_budget` (or :func:`within_outage_budget`, for an iterator). A
one-off command whose service refuses its very first connection (nothing listens: most often
the service is simply not running) gives up after ``FIRST_CONTACT_S`` (4 s), unless
``TORCHX_RETRY_S`` is set.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar, Token, copy_context

from torchx.util.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    import random
    import threading
    from typing import TypeVar

    R = TypeVar("R")
    T = TypeVar("T")

__all__ = [
    "ServiceUnavailableError",
    "backoff_delays",
    "budget_s",
    "in_thread",
    "outage_budget",
    "outage_budget_s",
    "retry_call",
    "within_outage_budget",
]

DEFAULT_BUDGET_S = 15.0
FIRST_CONTACT_S = 4.0
DEFAULT_OUTAGE_S = 600.0
FIRST_DELAY_S = 0.2
MAX_DELAY_S = 5.0

_budget: ContextVar[float | None] = ContextVar("torchx_retry_budget", default=None)
_answered: set[str] = set()
"""Services that answered in this process: a refusal from one of them is an outage."""
_warned: set[str] = set()
"""Outage warnings given in this process (threads asking one service warn once)."""


class ServiceUnavailableError(RuntimeError):
    """A transient failure that lasted longer than the retry budget.

    The message is the backend's own one-line error (which names the service and the
    fix) plus how long torchx kept trying; ``last`` is that error.
    """

    def __init__(self, last: BaseException, tries: int, elapsed_s: float) -> None:
        env = "TORCHX_OUTAGE_S" if _budget.get() is not None else "TORCHX_RETRY_S"
        self.retried = (
            f"still failing after {tries} tries over {elapsed_s:.0f} s; {env} sets how long"
            " torchx keeps trying"
        )
        """How long torchx tried, for a backend that words ``last`` its own way."""
        super().__init__(f"{last} ({self.retried})")
        self.last = last
        self.tries = tries


def _env_seconds(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a number of seconds; e.g. {name}=60") from None
    return max(0.0, seconds)


def budget_s() -> float:
    """Seconds a call keeps retrying here: the enclosing :func:`outage_budget`, else
    ``TORCHX_RETRY_S`` (default 15)."""
    inside = _budget.get()
    return inside if inside is not None else _env_seconds("TORCHX_RETRY_S", DEFAULT_BUDGET_S)


def outage_budget_s() -> float:
    """Seconds a wait or a followed log rides out one outage: ``TORCHX_OUTAGE_S`` (600)."""
    return _env_seconds("TORCHX_OUTAGE_S", DEFAULT_OUTAGE_S)


class outage_budget:
    """``with outage_budget(seconds):`` calls made inside keep retrying for ``seconds``
    (default: the outage budget). A class, not ``contextlib.contextmanager``: every
    ``torchx run --wait`` enters it, and :mod:`contextlib` would be its only use."""

    def __init__(self, seconds: float | None = None) -> None:
        self._seconds = outage_budget_s() if seconds is None else seconds
        self._tokens: list[Token[float | None]] = []

    def __enter__(self) -> None:
        self._tokens.append(_budget.set(self._seconds))

    def __exit__(self, *exc_info: object) -> None:
        _budget.reset(self._tokens.pop())


def in_thread(target: Callable[..., object], *args: object) -> threading.Thread:
    """A started daemon thread running ``target(*args)`` in this context: contextvars do
    not cross threads by themselves, and a wait's outage budget must reach its helpers."""

    context = copy_context()
    thread = threading.Thread(target=context.run, args=(target, *args), daemon=True)
    thread.start()
    return thread


def within_outage_budget(items: Iterator[T], seconds: float | None = None) -> Iterator[T]:
    """``items`` with every step taken inside :func:`outage_budget`: a followed log keeps
    following through an outage, in whichever thread it is read."""
    while True:
        with outage_budget(seconds):
            try:
                item = next(items)
            except StopIteration:
                return
        yield item


def backoff_delays(
    first_s: float = FIRST_DELAY_S, cap_s: float = MAX_DELAY_S, rng: random.Random | None = None
) -> Iterator[float]:
    """Delays between tries: doubling from ``first_s`` up to ``cap_s``, each drawn from
    the upper half of its step ("equal jitter"), so clients that failed together do not
    come back together, yet none retries sooner than half a step."""
    if rng is None:
        # deferred: random (with hashlib) costs `torchx status` 2 ms and only a retry draws
        import random

        rng = random.Random()  # noqa: S311 (jitter, not cryptography)
    draw = rng
    step = first_s
    while True:
        yield step / 2 + draw.uniform(0, step / 2)
        step = min(cap_s, step * 2)


def retry_call(
    fn: Callable[[], R],
    *,
    service: str,
    is_transient: Callable[[BaseException], bool],
    budget: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> R:
    """``fn()``, tried again after transient failures until ``budget`` seconds (default
    :func:`budget_s`) have passed; then :class:`ServiceUnavailableError`.

    A permanent error is raised at once, unchanged. The first retry of an outage is
    logged once (the backend's error names the service) and so is the recovery
    (``service`` names what answered again).
    """
    limit = budget_s() if budget is None else budget
    first_contact = budget is None and _budget.get() is None and service not in _answered
    first_contact = first_contact and not os.environ.get("TORCHX_RETRY_S", "").strip()
    start = clock()
    tries = 0
    delays = backoff_delays()
    while True:
        tries += 1
        try:
            result = fn()
        except Exception as e:
            if not is_transient(e):
                raise
            elapsed = clock() - start
            if tries == 1 and first_contact and _refused(e):
                limit = min(limit, FIRST_CONTACT_S)  # nothing listens: likely not running
            if elapsed >= limit:
                if tries == 1:
                    raise  # no retries wanted (budget 0): the backend's own error
                raise ServiceUnavailableError(e, tries, elapsed) from e
            if tries == 1:
                _log_outage(e, limit)
            sleep(min(next(delays), max(0.0, limit - elapsed)))
            continue
        _answered.add(service)
        if tries > 1:
            _log_recovery(service, tries, clock() - start)
        return result


def _refused(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is a refused connection: nothing listens."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        text = str(current).lower()
        if "connection refused" in text or "connect failure" in text:
            return True
        current = current.__cause__ or current.__context__
    return False


def _log_outage(error: BaseException, limit: float) -> None:
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if first in _warned:
        return
    _warned.add(first)
    get_logger(__name__).warning("%s (retrying for up to %.0f s)", first[:300], limit)


def _log_recovery(service: str, tries: int, elapsed: float) -> None:
    get_logger(__name__).warning(
        "%s answered again after %.1f s (%d tries)", service, elapsed, tries
    )
