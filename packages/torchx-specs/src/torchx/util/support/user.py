"""The name of the user running TorchX, for tags, experiment names and cancel reasons."""

from __future__ import annotations

__all__ = ["current_user"]


def current_user() -> str:
    """The login name, or ``unknown`` where there is none: containers often run as a uid
    with no passwd entry and no ``USER``/``LOGNAME``, where ``getpass.getuser()`` raises."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
