"""Sweeps on local_docker (a real daemon): one app, a container per element, at most
``max_parallel`` running (the rest started in turn by a detached starter), each element's
state, values and log, a retry of the failed elements, a cancel that leaves none to start."""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import Any

from torchx_testsupport.docker import IMAGE
from torchx_testsupport.sweep import ARRAY_2X2, COMPONENT, LOG_2X2, names_a_failed_element

from torchx.specs import AppState


def test_a_2x2_sweep_is_one_app_and_retry_failed_resubmits_two(runner: Any) -> None:
    handle = runner.run_sweep(
        COMPONENT,
        {"image": IMAGE, "fail_batch": 16},
        {"lr": ["0.1", "0.2"], "batch": ["8", "16"]},
        "local_docker",
    )
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.FAILED
    assert status.array is not None
    assert status.array.to_json() == ARRAY_2X2
    assert status.failure is not None
    assert names_a_failed_element(status.failure.replica_id, status.failure.message)
    for i, printed in enumerate(LOG_2X2):
        lines = list(runner.log_lines(handle, "train", i))
        assert lines == [f"{printed}\n"], lines

    retried = runner.retry_failed(handle)
    again = runner.wait(retried, wait_interval=0.5)
    assert again is not None and again.array is not None
    assert [(e.index, e.values, e.state) for e in again.array.elements] == [
        (1, {"lr": "0.1", "batch": "16"}, AppState.FAILED),
        (3, {"lr": "0.2", "batch": "16"}, AppState.FAILED),
    ]


def _spans(docker_client: Any, app_id: str) -> list[tuple[datetime, datetime]]:
    spans = []
    for container in docker_client.containers.list(
        all=True, filters={"label": f"torchx.pytorch.org/app-id={app_id}"}
    ):
        state = container.attrs["State"]
        spans.append(
            (
                datetime.fromisoformat(state["StartedAt"][:26]),
                datetime.fromisoformat(state["FinishedAt"][:26]),
            )
        )
    return sorted(spans)


def test_max_parallel_starts_the_elements_in_turn(runner: Any, docker_client: Any) -> None:
    handle = runner.run_sweep(
        COMPONENT, {"image": IMAGE, "hold": 2}, {"lr": ["0.1", "0.2", "0.3"]}, "local_docker",
        max_parallel=1,
    )  # fmt: skip
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.SUCCEEDED, status
    spans = _spans(docker_client, handle.rsplit("/", 1)[1])
    assert len(spans) == 3
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, spans  # one after another


def test_a_cancelled_sweep_starts_no_more_elements(runner: Any, docker_client: Any) -> None:
    handle = runner.run_sweep(
        COMPONENT, {"image": IMAGE, "hold": 60}, {"lr": ["0.1", "0.2", "0.3"]}, "local_docker",
        max_parallel=1,
    )  # fmt: skip
    runner.cancel(handle)
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.CANCELLED
    assert status.array is not None and status.array.states() == {"CANCELLED": 3}
    app_id = handle.rsplit("/", 1)[1]
    started = [
        c
        for c in docker_client.containers.list(
            all=True, filters={"label": f"torchx.pytorch.org/app-id={app_id}"}
        )
        if c.attrs["State"]["StartedAt"] != "0001-01-01T00:00:00Z"
    ]
    assert len(started) == 1  # the other two never ran
