"""The closed words of the operator's loop, part of the plugin contract: why a replica
ended (:class:`Cause`, ``Failure.cause`` and ``Attempt.cause``) and the phases an app goes
through (:class:`PhaseName`, ``Phase.phase`` and ``Waiting.phase``).

Both are ``str`` enums: a member equals its JSON value (``Cause.OOM == "oom"``), so the
JSON keys and values ``--json`` prints stay what they are, and a backend that writes a
word outside them fails ``tests/test_vocabulary.py``. Adding a cause is one member here
(its comment, its words, whether the scheduler names it) and each backend's
``failure.py`` that can tell it.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["Cause", "PhaseName", "keeps_scheduler_word"]


class Cause(str, Enum):
    """What ended a replica, best evidence first where several apply."""

    EXCEPTION = "exception"
    """A Python exception: its traceback is in the log (or a torchelastic error file)."""
    EXIT_CODE = "exit_code"
    """It exited with a non-zero code and said no more."""
    SIGNAL = "signal"
    """A signal killed it (SIGKILL: often the out-of-memory killer)."""
    OOM = "oom"
    """The scheduler or the kernel's cgroup stopped it for its memory."""
    TIME_LIMIT = "time_limit"
    """It ran past the time it was given (Slurm's TIMEOUT, a deadline)."""
    PREEMPTED = "preempted"
    """Something else needed its resources, or it was stopped from outside (SIGTERM)."""
    NODE_FAILURE = "node_failure"
    """Its node or host went away under it."""
    IMAGE_PULL = "image_pull"
    """Its image could not be pulled."""
    REJECTED = "rejected"
    """The scheduler would not start it (a launch error, a refused request)."""
    CANCELLED = "cancelled"
    """It was stopped on purpose (a cancel, or after another replica failed)."""
    UNKNOWN = "unknown"
    """Nothing more is known."""

    @property
    def words(self) -> str:
        """How ``torchx status`` says it; ``{exit_code}`` and ``{signal}`` are filled in."""
        return _CAUSE_WORDS[self]

    @property
    def named_by_scheduler(self) -> bool:
        """Whether the scheduler itself names this cause: then a traceback in the log (the
        program's reaction to it, a MemoryError, a lost collective) does not replace it."""
        return self in _SCHEDULER_NAMED


_CAUSE_WORDS = {
    Cause.EXCEPTION: "a Python exception",
    Cause.EXIT_CODE: "exited with code {exit_code}",
    Cause.SIGNAL: "killed by {signal}",
    Cause.OOM: "out of memory",
    Cause.TIME_LIMIT: "hit its time limit",
    Cause.PREEMPTED: "preempted",
    Cause.NODE_FAILURE: "its node failed",
    Cause.IMAGE_PULL: "its image could not be pulled",
    Cause.REJECTED: "rejected by the scheduler",
    Cause.CANCELLED: "cancelled",
    Cause.UNKNOWN: "unknown",
}
_SCHEDULER_NAMED = frozenset(
    {
        Cause.OOM,
        Cause.TIME_LIMIT,
        Cause.PREEMPTED,
        Cause.NODE_FAILURE,
        Cause.IMAGE_PULL,
        Cause.REJECTED,
    }
)


def keeps_scheduler_word(cause: str) -> bool:
    """Whether ``cause`` (a ``Failure.cause``) is one the scheduler named (see
    :attr:`Cause.named_by_scheduler`); False for a word outside the vocabulary."""
    try:
        return Cause(cause).named_by_scheduler
    except ValueError:
        return False


class PhaseName(str, Enum):
    """The phases an app goes through, in the order they can come (a backend reports the
    ones it knows: at least ``submitted``, ``queued`` when it waited, ``running`` and
    ``finished``)."""

    SUBMITTED = "submitted"
    """The scheduler took the request."""
    QUEUED = "queued"
    """It waits for resources (a pending job, an unadmitted workload)."""
    ADMITTED = "admitted"
    """A queue admitted it (Kueue); its pods are being made."""
    PULLING_IMAGE = "pulling_image"
    """Its image is being pulled."""
    STARTING = "starting"
    """Resources are given; containers and processes are being made."""
    RUNNING = "running"
    """Its replicas run."""
    PREEMPTED = "preempted"
    """It was stopped to free its resources."""
    REQUEUED = "requeued"
    """It waits to run again (a requeue after preemption, a node failure, a retry)."""
    FINISHED = "finished"
    """It ended (any terminal state)."""
