"""Where runner events go: one ``logging`` handler per destination name.

Integrators that want the events (usage metrics, audit logs) attach their own handlers
to the ``torchx-events-<destination>`` logger or record to ``"console"``.
"""

import logging

__all__ = ["DESTINATIONS", "get_logging_handler"]

DESTINATIONS = ("console", "null")
"""Destination names accepted by :func:`get_logging_handler`."""


def get_logging_handler(destination: str = "null") -> logging.Handler:
    """A fresh handler for ``destination``: ``console`` prints to stderr, ``null`` drops."""
    if destination == "console":
        return logging.StreamHandler()
    if destination == "null":
        return logging.NullHandler()
    raise ValueError(
        f"unknown event destination {destination!r}; accepted: {', '.join(DESTINATIONS)}"
    )
