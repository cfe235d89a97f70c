"""Structured events about runner API calls (which call, how long, did it fail).

Every public ``Runner`` method runs inside :class:`log_event`, which times the call and
records a :class:`TorchxEvent` to a logger named ``torchx-events-<destination>``. The
default destination ``null`` drops events; a platform that wants them attaches a handler
to that logger or records to ``console``. Each destination has its own logger, so
recording to one never redirects the others.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from enum import Enum
from types import TracebackType

from torchx.plugins import PluginType, registry
from torchx.util.log import get_logger
from torchx.util.session import get_session_id_or_create_new
from torchx.util.startup.lazy_dataclass import asdict, dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from typing import Literal

__all__ = ["SourceType", "TorchxEvent", "log_event", "record"]

_log = get_logger(__name__)


class SourceType(str, Enum):
    """Who triggered the call: TorchX itself, an external caller, or not known."""

    UNKNOWN = "<unknown>"
    INTERNAL = "INTERNAL"
    EXTERNAL = "EXTERNAL"


@dataclass
class TorchxEvent:
    """One runner API call: identity of the session and app, timings and any error.

    ``runcfg`` is the run config as JSON; ``exception_source_location`` is JSON with the
    ``filename``, ``lineno`` and ``name`` of the frame that raised.
    """

    session: str
    scheduler: str
    api: str
    app_id: str | None = None
    app_image: str | None = None
    app_metadata: dict[str, str] | None = None
    runcfg: str | None = None
    raw_exception: str | None = None
    source: SourceType = SourceType.UNKNOWN
    cpu_time_usec: int | None = None
    wall_time_usec: int | None = None
    start_epoch_time_usec: int | None = None
    workspace: str | None = None
    exception_type: str | None = None
    exception_message: str | None = None
    exception_source_location: str | None = None

    def serialize(self) -> str:
        """The event as one JSON object (non-JSON metadata values are stringified)."""

        return json.dumps(asdict(self), default=str)

    @staticmethod
    def deserialize(data: str | TorchxEvent) -> TorchxEvent:
        """Parses :meth:`serialize` output; an unknown ``source`` becomes ``UNKNOWN``."""
        if isinstance(data, TorchxEvent):
            return data
        if not isinstance(data, str):
            raise TypeError(
                f"cannot deserialize a TorchxEvent from {type(data).__name__};"
                " pass the JSON string produced by TorchxEvent.serialize()"
            )

        fields = json.loads(data)
        source = fields.pop("source", None)
        try:
            fields["source"] = SourceType(source)
        except ValueError:
            fields["source"] = SourceType.UNKNOWN
        return TorchxEvent(**fields)

    def __str__(self) -> str:
        return self.serialize()


_loggers: dict[str, logging.Logger] = {}
_loggers_lock = threading.Lock()


def _events_logger(destination: str) -> logging.Logger:
    """The non-propagating logger of ``destination``, created with its handler once."""
    logger = _loggers.get(destination)
    if logger is not None:
        return logger
    import logging

    from torchx.runner.events.handlers import get_logging_handler

    with _loggers_lock:
        logger = _loggers.get(destination)
        if logger is None:
            handler = get_logging_handler(destination)
            logger = logging.getLogger(f"torchx-events-{destination}")
            logger.setLevel(logging.DEBUG)
            logger.propagate = False
            logger.addHandler(handler)
            _loggers[destination] = logger
    return logger


def _nobody_listens(logger: logging.Logger) -> bool:
    """Whether a record logged to ``logger`` would reach no handler and no filter."""
    import logging

    return (
        not logger.propagate
        and not logger.filters
        and all(type(h) is logging.NullHandler for h in logger.handlers)
    )


def may_listen(destination: str = "null") -> bool:
    """False when an event sent to ``destination`` surely reaches nobody (cheap to ask).

    Lets callers skip building costly event fields, such as the run config as JSON. An
    ``event_handler`` plugin named ``null`` listens to the default destination.
    """
    return destination != "null" or "logging" in sys.modules or _null_is_plugged()


_plugged: list[bool] = []


def _null_is_plugged() -> bool:
    """Whether an ``event_handler`` plugin takes the ``null`` destination (asked once)."""
    if not _plugged:
        _plugged.append("null" in registry().get(PluginType.EVENT_HANDLER))
    return _plugged[0]


def record(event: TorchxEvent, destination: str = "null") -> None:
    """Logs ``event`` (as JSON, level INFO) to the logger of ``destination``.

    A failure to serialize the event is logged and never breaks the API call it describes.
    """
    if not may_listen(destination):
        # Nobody can have attached a handler to the logger yet, and the one created
        # here would only hold a NullHandler: skip importing `logging` for nothing.
        return
    logger = _events_logger(destination)
    if _nobody_listens(logger):
        return  # the default: serializing would only feed a NullHandler
    try:
        message = event.serialize()
    except (TypeError, ValueError, RecursionError) as e:
        _log.warning("could not serialize torchx event for api %s: %s", event.api, e)
        return
    logger.info(message)


def _session_id() -> str:
    return get_session_id_or_create_new()


class log_event:
    """Context manager that times the block and records a :class:`TorchxEvent`.

    The event is reachable as ``ctx._torchx_event`` inside the block so the caller can
    fill in what it learns (app id, image...). Exceptions are recorded and re-raised.
    """

    def __init__(  # noqa: PLR0917 (positional order is the upstream API)
        self,
        api: str,
        scheduler: str | None = None,
        app_id: str | None = None,
        app_image: str | None = None,
        app_metadata: dict[str, str] | None = None,
        runcfg: str | None = None,
        workspace: str | None = None,
        destination: str = "null",
    ) -> None:
        self._torchx_event = TorchxEvent(
            session=_session_id(),
            scheduler=scheduler or "",
            api=api,
            app_id=app_id,
            app_image=app_image,
            app_metadata=app_metadata,
            runcfg=runcfg,
            workspace=workspace,
        )
        self._destination = destination
        self._start_cpu_ns = 0
        self._start_wall_ns = 0

    def __enter__(self) -> log_event:
        self._start_cpu_ns = time.process_time_ns()
        self._start_wall_ns = time.perf_counter_ns()
        self._torchx_event.start_epoch_time_usec = time.time_ns() // 1000
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]:
        event = self._torchx_event
        event.cpu_time_usec = (time.process_time_ns() - self._start_cpu_ns) // 1000
        event.wall_time_usec = (time.perf_counter_ns() - self._start_wall_ns) // 1000
        if exc_value is not None:
            _describe_exception(event, exc_value, traceback)
        record(event, self._destination)
        return False


def _describe_exception(
    event: TorchxEvent, exc: BaseException, traceback: TracebackType | None
) -> None:
    import traceback as tb

    event.exception_type = type(exc).__name__
    event.exception_message = str(exc)
    event.raw_exception = "".join(tb.format_exception(type(exc), exc, traceback))
    frames = tb.extract_tb(traceback) if traceback is not None else []
    if frames:
        last = frames[-1]
        event.exception_source_location = json.dumps(
            {"filename": last.filename, "lineno": last.lineno, "name": last.name}
        )
