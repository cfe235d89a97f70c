"""The attempts of an app: the scheduler's history completed with the current attempt."""

from __future__ import annotations

import json
import time

import pytest

from torchx.specs import AppState, AppStatus
from torchx.specs.attempts import Attempt, with_current
from torchx.specs.failure import Failure


def test_one_attempt_is_the_app_itself() -> None:
    failure = Failure(role="r", replica_id=0, cause="exit_code", exit_code=3)
    [only] = with_current(None, 0, state=AppState.FAILED, failure=failure, start=10.0, end=12.5)
    assert only.to_json() == {
        "attempt": 0,
        "start": 10.0,
        "end": 12.5,
        "state": "FAILED",
        "cause": "exit_code",
        "exit_code": 3,
        "signal": None,
    }


def test_a_running_attempt_has_no_end_yet() -> None:
    [only] = with_current(None, 0, state=AppState.RUNNING, failure=None, start=10.0, end=None)
    assert (only.state, only.end) == (AppState.RUNNING, None)


def test_earlier_attempts_the_scheduler_keeps_no_record_of_are_listed_by_number() -> None:
    attempts = with_current(None, 2, state=AppState.SUCCEEDED, failure=None, start=30.0, end=40.0)
    assert [a.to_json()["state"] for a in attempts] == ["UNKNOWN", "UNKNOWN", "SUCCEEDED"]
    assert [a.attempt for a in attempts] == [0, 1, 2]


def test_the_schedulers_history_is_kept_and_the_last_is_current() -> None:
    known = [
        Attempt(0, 1.0, 2.0, AppState.FAILED, "exit_code", 1),
        Attempt(1, 3.0, None, None, None, None),
    ]
    attempts = with_current(known, 1, state=AppState.SUCCEEDED, failure=None, start=9.0, end=5.0)
    assert [a.to_json() for a in attempts] == [
        {"attempt": 0, "start": 1.0, "end": 2.0, "state": "FAILED", "cause": "exit_code",
         "exit_code": 1, "signal": None},
        {"attempt": 1, "start": 3.0, "end": 5.0, "state": "SUCCEEDED", "cause": None,
         "exit_code": None, "signal": None},
    ]  # fmt: skip
    status = AppStatus(AppState.SUCCEEDED, num_restarts=1, attempts=attempts)
    assert "Attempts: 0 FAILED (exit code 1), 1 SUCCEEDED" in status.format()


def test_status_shows_attempts_in_json_text_and_repr() -> None:
    status = AppStatus(
        AppState.RUNNING,
        num_restarts=1,
        attempts=[
            Attempt(0, 1.0, 2.0, AppState.FAILED, "preempted", None),
            Attempt(1, 3.0, None, AppState.RUNNING),
        ],
    )
    assert json.loads(json.dumps(status.to_json()))["attempts"][0]["cause"] == "preempted"
    assert "Attempts: 0 FAILED (preempted), 1 RUNNING" in status.format()
    assert "attempts" in repr(status)
    single = AppStatus(AppState.RUNNING, attempts=[Attempt(0, 1.0, None, AppState.RUNNING)])
    assert "Attempts" not in single.format() and "attempts" not in repr(single)


def test_an_attempt_says_when_it_ran_in_local_time_and_how_it_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # +05:30: a local time, not UTC's
    time.tzset()
    try:
        start = 1_764_650_000.0  # 2025-12-02 04:33:20 UTC
        preempted = Attempt(0, start, start + 28, AppState.FAILED, "preempted", signal="SIGTERM")
        assert preempted.line() == (
            "0  FAILED     2025-12-02 10:03:20 → 10:03:48 (28s)  preempted by SIGTERM"
        )
        long = Attempt(1, start, start + 86_400 + 60, AppState.SUCCEEDED)
        assert long.line() == ("1  SUCCEEDED  2025-12-02 10:03:20 → 2025-12-03 10:04:20 (24h01m)")
        assert Attempt(2).line() == "2  UNKNOWN    not started"
        killed = Attempt(0, start, start + 1, AppState.FAILED, "signal", signal="SIGKILL")
        assert killed.why() == "killed by SIGKILL (often the out-of-memory killer)"
        assert Attempt(0, cause="signal").why() == "killed by a signal"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
