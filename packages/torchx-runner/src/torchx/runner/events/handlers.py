"""Where runner events go: one ``logging`` handler per destination name.

Integrators that want the events (usage metrics, audit logs) attach their own handlers
to the ``torchx-events-<destination>`` logger or record to ``"console"``.
"""

import logging

from torchx.plugins import PluginType, registry

__all__ = ["DESTINATIONS", "get_logging_handler"]

DESTINATIONS = ("console", "null")
"""Destination names accepted by :func:`get_logging_handler`."""


def get_logging_handler(destination: str = "null") -> logging.Handler:
    """A fresh handler for ``destination``: an ``event_handler`` plugin of that name
    (``torchx.event_handlers``), else ``console`` (prints to stderr) or ``null`` (drops)."""

    factory = registry().get(PluginType.EVENT_HANDLER).get(destination)
    if factory is not None:
        handler: logging.Handler = factory()
        return handler
    if destination == "console":
        return logging.StreamHandler()
    if destination == "null":
        return logging.NullHandler()
    raise ValueError(
        f"unknown event destination {destination!r}; accepted: {', '.join(DESTINATIONS)}"
        " or an event_handler plugin's name (see `torchx plugins`)"
    )
