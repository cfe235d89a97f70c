"""Module loggers that import :py:mod:`logging` only when something is logged.

``import logging`` (with the ``threading``, ``traceback``, ``string`` and ``weakref`` it
pulls in) is a noticeable share of a ``torchx run --dryrun``, which usually logs nothing.
Modules on the command's path therefore hold a :py:func:`get_logger` proxy: it behaves as
``logging.getLogger(name)`` (every attribute and method is the real logger's) but looks
the logger up on first use.

While ``logging`` is not imported nobody can have configured a logger, so every logger's
effective level is the root's: ``WARNING``, or the level a command line promised to give
the root logger once ``logging`` is imported (:py:func:`set_root_level_before_import`).
Calls below that level are dropped without importing ``logging``, exactly as the real
logger would drop them.
"""

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging

__all__ = [
    "configure_on_first_use",
    "ensure_configured",
    "get_logger",
    "set_root_level_before_import",
]

# The numbers of logging's levels, by level name and by the Logger method that logs at it.
_LEVEL_NAMES = {
    "CRITICAL": 50, "FATAL": 50, "ERROR": 40, "WARN": 30, "WARNING": 30, "INFO": 20,
    "DEBUG": 10, "NOTSET": 0,
}  # fmt: skip
_METHOD_LEVELS = {
    "critical": 50, "fatal": 50, "error": 40, "exception": 40, "warning": 30, "warn": 30,
    "info": 20, "debug": 10,
}  # fmt: skip


def set_root_level_before_import(level: "int | str") -> None:
    """Declares the level the root logger will get when ``logging`` is imported.

    For a command line that configures logging lazily (on import); ``level`` is a number
    or a ``logging`` level name.
    """
    number = level if isinstance(level, int) else _LEVEL_NAMES[level.upper()]
    _LazyLogger.root_level_before_import = number


_configure: "list[object]" = []
"""The pending configuration of ``logging`` (a callable), run once when it is needed."""


def configure_on_first_use(configure: "object") -> None:
    """Registers how ``logging`` is to be configured (the CLI's level and format): run the
    first time a torchx logger is really used, or by :func:`ensure_configured`."""
    _configure[:] = [configure]


def ensure_configured() -> None:
    """Runs the registered configuration now, if it has not run: where a library that logs
    through ``logging`` itself (an SDK, a plugin) is about to be used."""
    if _configure:
        configure = _configure.pop()
        configure()  # type: ignore[operator]


def _drop(*args: object, **kwargs: object) -> None:
    """A log call below the effective level: nothing to do."""


class _LazyLogger:
    """Stands in for ``logging.getLogger(name)`` until an attribute is first needed."""

    __slots__ = ("_logger", "_name")

    root_level_before_import = 30  # logging.WARNING, the root logger's default

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: logging.Logger | None = None

    def _real(self) -> "logging.Logger":
        logger = self._logger
        if logger is None:
            import logging

            ensure_configured()
            logger = self._logger = logging.getLogger(self._name)
        return logger

    def __getattr__(self, attr: str) -> object:
        if self._logger is None and "logging" not in sys.modules:
            level = _METHOD_LEVELS.get(attr)
            if level is not None and level < _LazyLogger.root_level_before_import:
                return _drop
        return getattr(self._real(), attr)

    def __setattr__(self, attr: str, value: object) -> None:
        if attr in _LazyLogger.__slots__:
            object.__setattr__(self, attr, value)
        else:
            setattr(self._real(), attr, value)

    def __repr__(self) -> str:
        return repr(self._real())


def get_logger(name: str) -> "logging.Logger":
    """``logging.getLogger(name)``, resolved when the logger is first used."""
    proxy: object = _LazyLogger(name)
    return proxy  # type: ignore[return-value]  # duck-types logging.Logger
