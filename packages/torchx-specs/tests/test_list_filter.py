"""`torchx list` filters: durations and dates, states, and what apply keeps."""

from __future__ import annotations

import pytest

from torchx.schedulers.api import ListAppResponse
from torchx.schedulers.list_filter import ListFilter, parse_since, parse_states
from torchx.specs import AppState


def test_since_durations_and_dates() -> None:
    assert parse_since("90m", now=10_000.0) == 10_000.0 - 5400
    assert parse_since("2d", now=200_000.0) == 200_000.0 - 172_800
    assert parse_since("2026-11-24T08:00") > parse_since("2026-11-24")
    with pytest.raises(ValueError, match="neither a duration"):
        parse_since("last week")


def test_states() -> None:
    assert parse_states("running, PENDING") == {AppState.RUNNING, AppState.PENDING}
    with pytest.raises(ValueError, match="unknown app state 'done'"):
        parse_states("done")
    with pytest.raises(ValueError, match="at least one state"):
        parse_states(" , ")


def test_apply_keeps_state_name_and_the_newest() -> None:
    rows = [
        ListAppResponse("1", AppState.SUCCEEDED, name="train"),
        ListAppResponse("2", AppState.FAILED, name="eval"),
        ListAppResponse("3", AppState.SUCCEEDED, name="train-big"),
    ]
    assert [r.app_id for r in ListFilter(states=frozenset({AppState.SUCCEEDED})).apply(rows)] == [
        "1",
        "3",
    ]
    assert [r.app_id for r in ListFilter(name="train*", limit=1).apply(rows)] == ["3"]
    assert ListFilter(limit=0).apply(rows) == []
