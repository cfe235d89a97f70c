"""local_docker's timeline from the daemon's container list (no extra call)."""

from __future__ import annotations

import time

import pytest

from torchx.schedulers._docker.status import _seconds_ago, timeline_of, waiting_of
from torchx.specs import AppState


@pytest.mark.parametrize(
    ("status", "seconds"),
    [
        ("Exited (0) Less than a second ago", 1.0),
        ("Exited (0) 5 seconds ago", 5.0),
        ("Exited (137) About a minute ago", 60.0),
        ("Exited (1) 3 hours ago", 10800.0),
        ("Up 3 seconds", None),
    ],
)
def test_how_long_ago_a_container_exited(status: str, seconds: float | None) -> None:
    assert _seconds_ago(status) == seconds


def test_phases_from_labels_created_and_status() -> None:
    now = time.time()
    summary = {
        "Created": int(now) - 8,
        "Status": "Exited (0) 2 seconds ago",
        "Labels": {
            "torchx.pytorch.org/submitted": f"{now - 10:.3f}",
            "torchx.pytorch.org/pulled": f"{now - 9:.3f} reg/img:1",
        },
    }
    phases = timeline_of([summary], AppState.SUCCEEDED)
    assert [p.phase for p in phases] == [
        "submitted",
        "pulling_image",
        "starting",
        "running",
        "finished",
    ]
    assert phases[1].detail == "reg/img:1"
    assert phases[3].end == pytest.approx(now - 2, abs=1)


def test_an_app_whose_containers_are_created_but_not_started_waits() -> None:
    created = {"State": "created", "Created": 1700000000, "Status": "Created"}
    running = {"State": "running", "Created": 1700000001, "Status": "Up 1 second"}
    waiting = waiting_of([running, created])
    assert waiting is not None and waiting.phase == "starting"
    assert waiting.reason == "1 of 2 containers created, not started yet"
    assert waiting.since == 1700000000
    assert waiting_of([running]) is None
