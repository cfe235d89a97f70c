"""Readiness checks: what ``torchx check`` reports for each scheduler and tracker.

A check is one cheap, read-only probe of one thing a backend needs (the controller, the
credentials, a queue, ...): its status, one line saying what was found and, for a problem,
one concrete fix. Probes never create or change anything and never print secrets.
Schedulers offer them through :meth:`torchx.schedulers.api.Scheduler.check_ready`; a
tracker's module may define ``check_ready(config)``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from torchx.util.startup.lazy_dataclass import dataclass

__all__ = [
    "NOT_CONFIGURED",
    "NOT_READY",
    "NO_CHECKS",
    "READY",
    "ReadinessCheck",
    "not_configured",
    "not_ready",
    "overall",
    "probe",
    "ready",
    "write_problem",
]

READY = "ready"
NOT_READY = "not ready"
NOT_CONFIGURED = "not configured"
NO_CHECKS = "no checks"

_RANK = {NOT_READY: 3, NOT_CONFIGURED: 2, READY: 1, NO_CHECKS: 0}


@dataclass
class ReadinessCheck:
    """One probe's verdict: ``status`` is one of ``READY``, ``NOT_READY``,
    ``NOT_CONFIGURED`` or ``NO_CHECKS``; ``fix`` is set whenever something is wrong."""

    name: str
    status: str
    found: str
    fix: str = ""


def ready(name: str, found: str) -> ReadinessCheck:
    return ReadinessCheck(name, READY, found)


def not_ready(name: str, found: str, fix: str) -> ReadinessCheck:
    return ReadinessCheck(name, NOT_READY, found, fix)


def not_configured(name: str, found: str, fix: str) -> ReadinessCheck:
    return ReadinessCheck(name, NOT_CONFIGURED, found, fix)


def overall(checks: Iterable[ReadinessCheck]) -> str:
    """The worst status among ``checks`` (``NO_CHECKS`` when there are none)."""
    statuses = [c.status for c in checks]
    return max(statuses, key=lambda s: _RANK.get(s, 3)) if statuses else NO_CHECKS


def probe(name: str, fn: Callable[[], ReadinessCheck], fix: str) -> ReadinessCheck:
    """``fn()``, with any exception turned into a NOT_READY check whose ``found`` is the
    exception's first line and whose fix is ``fix``."""
    try:
        return fn()
    except Exception as e:  # a probe reports what went wrong; it never raises
        text = str(e).strip().splitlines()
        return not_ready(name, text[0][:300] if text else type(e).__name__, fix)


def write_problem(path: str, directory: bool = False) -> str | None:
    """None when this process can write ``path`` (an existing file or directory, or one a
    first write would create), else why not, in a few words naming the path. Only looks:
    the nearest existing ancestor of a missing path must be a writable directory.
    ``directory``: ``path`` must be a directory where it exists."""
    path = os.path.abspath(os.path.expanduser(path))
    target = path
    while not os.path.exists(target):
        parent = os.path.dirname(target)
        if parent == target:
            return f"{path} has no existing parent directory"
        target = parent
    if target == path and not os.path.isdir(path):
        if directory:
            return f"{path} is not a directory"
        return None if os.access(path, os.W_OK) else f"{path} is not writable"
    if not os.path.isdir(target):
        return f"{target} is not a directory"
    if os.access(target, os.W_OK | os.X_OK):
        return None
    return (
        f"{path} is not writable" if target == path else f"{path} cannot be created under {target}"
    )
