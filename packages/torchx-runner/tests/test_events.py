"""Runner events: serialization, timing, error capture and per-destination loggers."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from torchx.runner.events import SourceType, TorchxEvent, log_event, record
from torchx.runner.events.handlers import get_logging_handler


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def captured() -> Iterator[Capture]:
    """Everything recorded to the default ``null`` destination."""
    record(TorchxEvent("s", "sched", "warmup"))  # make sure the logger exists
    logger = logging.getLogger("torchx-events-null")
    handler = Capture()
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


def test_serialize_roundtrip() -> None:
    event = TorchxEvent(
        session="sid",
        scheduler="local_cwd",
        api="run",
        app_id="app-1",
        app_metadata={"k": "v"},
        source=SourceType.EXTERNAL,
    )
    data = json.loads(event.serialize())
    assert data["source"] == "EXTERNAL" and data["app_metadata"] == {"k": "v"}
    assert TorchxEvent.deserialize(event.serialize()) == event
    assert TorchxEvent.deserialize(event) is event
    assert str(event) == event.serialize()


def test_deserialize_unknown_source_and_bad_input() -> None:
    data = json.loads(TorchxEvent("s", "x", "api").serialize())
    data["source"] = "SOMETHING_NEW"
    assert TorchxEvent.deserialize(json.dumps(data)).source == SourceType.UNKNOWN
    with pytest.raises(TypeError, match="cannot deserialize"):
        TorchxEvent.deserialize(42)  # type: ignore[arg-type]


def test_log_event_records_timing_and_fields(captured: Capture) -> None:
    with log_event("status", "local_cwd", app_id="a-1", runcfg='{"x": 1}') as ctx:
        ctx._torchx_event.app_image = "img"
    (message,) = captured.messages
    event = TorchxEvent.deserialize(message)
    assert (event.api, event.scheduler, event.app_id, event.app_image, event.runcfg) == (
        "status",
        "local_cwd",
        "a-1",
        "img",
        '{"x": 1}',
    )
    assert event.wall_time_usec is not None and event.wall_time_usec >= 0
    assert event.cpu_time_usec is not None and event.cpu_time_usec >= 0
    assert event.start_epoch_time_usec is not None and event.start_epoch_time_usec > 0
    assert event.exception_type is None
    from torchx.util.session import get_session_id_or_create_new

    assert event.session == get_session_id_or_create_new()


def test_log_event_records_and_reraises_errors(captured: Capture) -> None:
    def fail() -> None:
        raise KeyError("missing thing")

    with pytest.raises(KeyError), log_event("describe"):
        fail()
    event = TorchxEvent.deserialize(captured.messages[-1])
    assert event.exception_type == "KeyError"
    assert event.exception_message == "'missing thing'"
    assert event.raw_exception is not None and "missing thing" in event.raw_exception
    location = json.loads(event.exception_source_location or "{}")
    assert location["name"] == "fail" and location["filename"].endswith("test_events.py")


def test_each_destination_has_its_own_logger(capsys: pytest.CaptureFixture[str]) -> None:
    record(TorchxEvent("s", "x", "to-null"))  # a first destination must not capture the others
    record(TorchxEvent("s", "x", "to-console"), destination="console")
    err = capsys.readouterr().err
    assert "to-console" in err and "to-null" not in err
    console = logging.getLogger("torchx-events-console")
    null = logging.getLogger("torchx-events-null")
    assert not console.propagate and not null.propagate
    assert len(console.handlers) == 1
    record(TorchxEvent("s", "x", "again"), destination="console")
    assert len(console.handlers) == 1


def test_handlers() -> None:
    assert isinstance(get_logging_handler("console"), logging.StreamHandler)
    assert isinstance(get_logging_handler(), logging.NullHandler)
    with pytest.raises(ValueError, match="accepted: console, null"):
        get_logging_handler("kafka")


def test_unserializable_event_does_not_break_the_call(
    captured: Capture, caplog: pytest.LogCaptureFixture
) -> None:
    metadata: dict[str, object] = {}
    metadata["self"] = metadata  # circular: json.dumps fails
    event = TorchxEvent("s", "x", "weird", app_metadata=metadata)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="torchx.runner.events"):
        record(event)
    assert "could not serialize torchx event for api weird" in caplog.text
    assert not any("weird" in m for m in captured.messages)


def test_events_reach_filters_and_propagation() -> None:
    # Nothing listens by default (events are not even serialized); a filter or a
    # propagating logger listens, so they get every event.
    record(TorchxEvent("s", "x", "warmup"))
    logger = logging.getLogger("torchx-events-null")
    seen: list[str] = []

    def keep(rec: logging.LogRecord) -> bool:
        seen.append(rec.getMessage())
        return False

    logger.addFilter(keep)
    try:
        record(TorchxEvent("s", "x", "filtered"))
    finally:
        logger.removeFilter(keep)
    assert [json.loads(m)["api"] for m in seen] == ["filtered"]

    root = logging.getLogger()
    below_root = Capture()
    root.addHandler(below_root)
    logger.propagate = True
    try:
        record(TorchxEvent("s", "x", "propagated"))
    finally:
        logger.propagate = False
        root.removeHandler(below_root)
    assert [json.loads(m)["api"] for m in below_root.messages] == ["propagated"]
