"""Waiting reasons and start-up timelines: the phases built from a scheduler's moments, and
the lines ``torchx status`` prints."""

from __future__ import annotations

from torchx.specs import AppState, AppStatus
from torchx.specs.timeline import Phase, Waiting, duration, startup_line, timeline, waiting_line


def test_each_phase_lasts_until_the_next_and_moments_are_moments() -> None:
    phases = timeline(
        [
            ("submitted", 100.0, None),
            ("queued", 100.0, "Resources"),
            ("pulling_image", None, None),  # not known: left out
            ("running", 138.0, None),
            ("finished", 200.0, None),
        ],
        ended=200.0,
    )
    assert [(p.phase, p.start, p.end) for p in phases] == [
        ("submitted", 100.0, 100.0),
        ("queued", 100.0, 138.0),
        ("running", 138.0, 200.0),
        ("finished", 200.0, 200.0),
    ]
    assert phases[1].detail == "Resources"
    still = timeline([("submitted", 1.0, None), ("queued", 1.0, None)])
    assert still[-1].end is None


def test_the_lines_status_prints() -> None:
    assert [duration(s) for s in (0.4, 41, 133, 11100)] == ["0s", "41s", "2m13s", "3h05m"]
    waiting = Waiting(phase="queued", reason="Resources: the requested nodes are busy", since=0)
    assert waiting_line(waiting, 133) == (
        "Waiting 2m13s: queued (Resources: the requested nodes are busy)"
    )
    phases = timeline(
        [
            ("submitted", 0.0, None),
            ("queued", 0.0, None),
            ("pulling_image", 38.0, None),
            ("starting", 40.0, None),
            ("running", 41.0, None),
        ]
    )
    assert startup_line(phases) == "Started after 41s: queued 38s, pulling image 2s, starting 1s"
    assert startup_line(phases[:2]) is None  # not started


def test_status_json_and_text_carry_them() -> None:
    phases = [Phase("submitted", 0.0, 0.0), Phase("queued", 0.0, 5.0), Phase("running", 5.0)]
    status = AppStatus(state=AppState.RUNNING, timeline=phases)
    doc = status.to_json()
    assert doc["waiting"] is None
    assert doc["timeline"][1] == {"phase": "queued", "start": 0.0, "end": 5.0, "detail": None}
    assert "Started after 5s: queued 5s" in status.format()
    waiting = AppStatus(state=AppState.PENDING, waiting=Waiting("queued", "Priority", 0.0, 3))
    assert waiting.to_json()["waiting"] == {
        "phase": "queued",
        "since": 0.0,
        "reason": "Priority",
        "position": 3,
    }
    assert "Waiting " in waiting.format() and ": queued, position 3 (Priority)" in waiting.format()
    assert "timeline" not in repr(AppStatus(state=AppState.RUNNING))  # upstream's layout
