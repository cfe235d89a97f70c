"""From the driver's event lines (as the driver prints them) to TorchX states."""

from __future__ import annotations

import json

from torchx.schedulers._ray.status import app_state, events, replicas
from torchx.specs import AppState


def _log(*items: dict[str, object]) -> str:
    ray_lines = "2026-11-25 16:23:47,783\tINFO job_manager.py:581 -- Runtime env is setting up.\n"
    return ray_lines + "".join(f"[torchx] {json.dumps(e)}\n" for e in items)


def test_waiting_for_resources_is_pending_with_what_it_waits_for() -> None:
    found = events(
        _log(
            {"event": "started"},
            {"event": "waiting", "bundles": [{"CPU": 64}]},
            {
                "event": "pending",
                "bundles": [{"CPU": 64}],
                "cluster": {"CPU": 4.0, "memory": 2**34, "node:1.2.3.4": 1},
            },
        )
    )
    state, message = app_state({"status": "RUNNING"}, found)
    assert state == AppState.PENDING
    assert message == (
        "waiting for resources: 1 replica bundle(s) (1 x {CPU 64}); the cluster has CPU 4,"
        " memory 16384 MB in all"
    )


def test_replica_states_exit_codes_and_retries() -> None:
    found = events(
        _log(
            {"event": "running", "role": "t", "replica": 0, "actor_id": "a0", "host": "h1"},
            {"event": "running", "role": "t", "replica": 1, "actor_id": "a1", "host": "h2"},
            {"event": "exited", "role": "t", "replica": 1, "code": 3},
            {"event": "restarted", "role": "t", "replicas": [1]},
            {"event": "running", "role": "t", "replica": 1, "actor_id": "a2", "host": "h2"},
            {"event": "exited", "role": "t", "replica": 0, "code": 0},
        )
    )
    info = replicas({"t": 2}, AppState.RUNNING, found)
    assert info[("t", 0)].state == AppState.SUCCEEDED
    assert info[("t", 1)].state == AppState.RUNNING and info[("t", 1)].actor_ids == ["a1", "a2"]
    assert info[("t", 1)].host == "h2"
    failed = events(
        _log(
            {"event": "running", "role": "t", "replica": 0},
            {"event": "exited", "role": "t", "replica": 0, "code": 7},
        )
    )
    state, message = app_state({"status": "FAILED"}, failed)
    assert (state, message) == (AppState.FAILED, "replica t/0 exited with code 7")


def test_a_stopped_job_cancels_what_still_ran() -> None:
    found = events(_log({"event": "running", "role": "t", "replica": 0, "actor_id": "a"}))
    info = replicas({"t": 2}, AppState.CANCELLED, found)
    assert {i.state for i in info.values()} == {AppState.CANCELLED}
    state, _ = app_state({"status": "STOPPED"}, found)
    assert state == AppState.CANCELLED


def test_a_placement_timeout_fails_with_the_reason() -> None:
    found = events(_log({"event": "unplaceable", "bundles": [{"GPU": 8}], "cluster": {"CPU": 4}}))
    state, message = app_state({"status": "FAILED"}, found)
    assert state == AppState.FAILED
    assert message.startswith("resources never became free: 1 replica bundle(s) (1 x {GPU 8})")
