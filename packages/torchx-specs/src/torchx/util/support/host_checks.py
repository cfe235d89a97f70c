"""Checks against the submitting host: a real submission refuses, a dry run warns.

A dry run shows a plan, often one meant for somewhere else (a cluster's nodes, which have
programs the login node lacks; a CI box without torch), so a program or file missing on
this host must not stop it. Code that submits for real renders its request inside
:class:`real_submit`; a scheduler reports what it finds missing with :func:`host_problem`,
which raises there and otherwise logs one warning line.
"""

from __future__ import annotations

from contextvars import ContextVar
from types import TracebackType

from torchx.util.log import get_logger

__all__ = ["host_problem", "is_real_submit", "real_submit"]

_REAL_SUBMIT: ContextVar[bool] = ContextVar("torchx_real_submit", default=False)


class real_submit:
    """Context in which requests are rendered to be submitted (host problems raise)."""

    def __enter__(self) -> None:
        self._token = _REAL_SUBMIT.set(True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _REAL_SUBMIT.reset(self._token)


def is_real_submit() -> bool:
    """Whether the request being rendered is about to be submitted."""
    return _REAL_SUBMIT.get()


def host_problem(error: Exception | None) -> None:
    """Raises ``error`` on a real submission; in a dry run, logs it as one warning line
    (``None``: nothing is wrong)."""
    if error is None:
        return
    if _REAL_SUBMIT.get():
        raise error
    get_logger("torchx").warning("%s (a real run would be refused)", error)
