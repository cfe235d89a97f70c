"""Sweeps on the real two-node Ray cluster: one Ray job per element under one handle, the
sweep's state and one listing row, each element's values and log, a retry of the failed
elements, and ``max_parallel`` as a gate the elements' drivers share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchx_testsupport.sweep import (
    ARRAY_2X2,
    COMPONENT,
    LOG_2X2,
    most_at_once,
    names_a_failed_element,
)

from torchx.specs import AppState


def test_a_2x2_sweep_is_one_handle_and_retry_failed_resubmits_two(
    runner: Any, workdir: Path
) -> None:
    handle = runner.run_sweep(
        COMPONENT,
        {"fail_batch": 16},
        {"lr": ["0.1", "0.2"], "batch": ["8", "16"]},
        "ray",
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
    rows = [row for row in runner.list("ray") if row.app_handle == handle]
    assert [row.state for row in rows] == [AppState.FAILED]  # the sweep is one row

    retried = runner.retry_failed(handle)
    again = runner.wait(retried, wait_interval=0.5)
    assert again is not None and again.array is not None
    assert [(e.index, e.values, e.state) for e in again.array.elements] == [
        (1, {"lr": "0.1", "batch": "16"}, AppState.FAILED),
        (3, {"lr": "0.2", "batch": "16"}, AppState.FAILED),
    ]


def test_max_parallel_lets_k_elements_run_at_once(runner: Any, workdir: Path) -> None:
    record = workdir / "record.txt"
    handle = runner.run_sweep(
        COMPONENT,
        {"record": str(record), "hold": 1},
        {"lr": ["0.1", "0.2", "0.3"]},
        "ray",
        max_parallel=1,
    )
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.SUCCEEDED, status
    assert most_at_once(record.read_text()) == 1
