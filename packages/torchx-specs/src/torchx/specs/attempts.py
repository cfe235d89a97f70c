"""Every attempt of an app on record (``torchx status --json``'s ``"attempts"``).

An app runs again after a failure its ``max_retries`` allows, a requeue (Slurm's
preemption, node failure or time-limit warning), a Kubernetes back-off or JobSet restart,
an AWS Batch retry. Each run is an attempt, numbered as ``$TORCHX_ATTEMPT`` numbers it in
the replicas: 0 first. The last entry is the current attempt. A scheduler that keeps the
history of its attempts fills them in (:attr:`DescribeAppResponse.attempts`); for one that
does not, the earlier attempts are listed with what is known (their number) and the last
one with the app's state.
"""

from __future__ import annotations

import time

from torchx.specs.failure import cause_words
from torchx.specs.states import AppState, is_terminal
from torchx.specs.timeline import duration
from torchx.util.startup.lazy_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.specs.failure import Failure

__all__ = ["Attempt", "with_current"]


@dataclass
class Attempt:
    """One run of an app: ``state`` an :class:`AppState`; ``cause`` one of
    :data:`torchx.specs.failure.CAUSES` for an attempt that ended in failure (a requeue's
    reason: ``preempted``, ``node_failure``, ``time_limit``...); ``signal`` the signal that
    ended it (``SIGTERM`` for a stop from outside, as a preemption sends), when known; times
    in unix seconds."""

    attempt: int
    start: float | None = None
    end: float | None = None
    state: AppState | None = None
    cause: str | None = None
    exit_code: int | None = None
    signal: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "start": self.start,
            "end": self.end,
            "state": (self.state if self.state is not None else AppState.UNKNOWN).name,
            "cause": self.cause,
            "exit_code": self.exit_code,
            "signal": self.signal,
        }

    def why(self) -> str:
        """How it ended, as people say it: ``exit code 3``, ``preempted by SIGTERM``,
        ``killed by SIGKILL (often the out-of-memory killer)``; empty when nothing is
        known."""

        if self.cause in (None, "exit_code"):
            return f"exit code {self.exit_code}" if self.exit_code is not None else ""
        if self.cause == "signal" and not self.signal:
            return "killed by a signal"
        return cause_words(self.cause, self.exit_code, self.signal)

    def line(self) -> str:
        """``0  FAILED     2026-12-02 03:01:12 → 03:01:40 (28s)  preempted by SIGTERM``: the
        attempt with its local start and end times and how long it ran."""

        state = (self.state.name if self.state is not None else "UNKNOWN").ljust(9)
        when = "not started"
        if self.start is not None:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.start))
            if self.end is not None:
                same_day = time.localtime(self.start)[:3] == time.localtime(self.end)[:3]
                shown = "%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S"
                ended = time.strftime(shown, time.localtime(self.end))
                when += f" → {ended} ({duration(self.end - self.start)})"
            else:
                when += f" → now ({duration(time.time() - self.start)} so far)"
        why = self.why()
        return f"{self.attempt}  {state}  {when}" + (f"  {why}" if why else "")


def with_current(
    known: list[Attempt] | None,
    num_restarts: int,
    *,
    state: AppState,
    failure: Failure | None,
    start: float | None,
    end: float | None,
) -> list[Attempt]:
    """The attempts of an app: the scheduler's (``known``, oldest first), completed up to
    the current one (number ``num_restarts``), which takes the app's ``state``, its
    ``failure``'s cause and exit code, and its ``start``/``end`` where the scheduler gave
    none."""
    attempts = sorted(known or [], key=lambda a: a.attempt)
    current_number = max(num_restarts, attempts[-1].attempt if attempts else 0)
    numbers = {a.attempt for a in attempts}
    attempts += [Attempt(n) for n in range(current_number) if n not in numbers]
    attempts.sort(key=lambda a: a.attempt)
    if not attempts or attempts[-1].attempt != current_number:
        attempts.append(Attempt(current_number))
    current = attempts[-1]
    current.state = state
    if current.start is None:
        current.start = start
    if current.end is None and is_terminal(state):
        current.end = end
    if failure is not None:
        current.cause = current.cause or failure.cause
        if current.exit_code is None:
            current.exit_code = failure.exit_code
    return attempts
