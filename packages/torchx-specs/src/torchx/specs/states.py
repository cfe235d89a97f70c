"""The states an app and its replicas go through: the floor every loop type stands on.

:class:`AppState` and the two questions asked of it (:func:`is_terminal`,
:func:`is_started`) are imported by the status, attempt and sweep types alike, so they live
below all of them and import nothing of the contract.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["AppState", "ReplicaState", "is_started", "is_terminal"]


class AppState(int, Enum):
    """The state of an app (and of each replica: :data:`ReplicaState` is an alias)."""

    UNSUBMITTED = 0
    SUBMITTED = 1
    PENDING = 2
    RUNNING = 3
    SUCCEEDED = 4
    FAILED = 5
    CANCELLED = 6
    UNKNOWN = 7

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{self.name} ({self.value})"


ReplicaState = AppState

_TERMINAL_STATES = frozenset({AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED})


def is_terminal(state: AppState) -> bool:
    """True once the app can no longer change state (succeeded, failed or cancelled).

    Args:
        state: the app's state.

    Returns:
        Whether it is final.
    """
    return state in _TERMINAL_STATES


def is_started(state: AppState) -> bool:
    """True once the app is running or has finished.

    Args:
        state: the app's state.

    Returns:
        Whether it has started.
    """
    return state == AppState.RUNNING or is_terminal(state)
