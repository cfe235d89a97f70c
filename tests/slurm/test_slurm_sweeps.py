"""Sweeps on the real Slurm cluster: one job array per sweep (``sacct`` shows its tasks),
``%K`` for ``--max-parallel``, a split past ``MaxArraySize``, a retry of the failed
elements, and each element's state, values and labelled log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from torchx_testsupport import terminal_status
from torchx_testsupport.sweep import ARRAY_2X2, COMPONENT, FAILED_2X2, most_at_once

from torchx.specs import AppState

TORCHX = str(Path(sys.executable).parent / "torchx")


def _torchx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TORCHX, *args], env={**os.environ, "LOGLEVEL": "WARNING"},
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


def _array_tasks(job_id: str) -> list[str]:
    """The tasks of array ``job_id`` (``ID_N``), as the queue (which keeps ended tasks a
    while) and accounting (which lags a few seconds) list them."""
    queue = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", job_id, "-O", "ArrayJobID:|,ArrayTaskID:|"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    found = {f"{a}_{t}" for a, t, _ in (line.split("|", 2) for line in queue.splitlines())}
    accounting = subprocess.run(
        ["sacct", "-n", "-X", "--parsable2", "--format=JobID", "-j", job_id],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    found |= set(accounting.split())
    return sorted(task for task in found if task.startswith(f"{job_id}_"))


def _queued_arrays(job_ids: str) -> dict[str, tuple[str, str]]:
    """``{array job id: (task ids as squeue prints them, job name)}`` of the arrays."""
    out = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", job_ids, "-O", "ArrayJobID:|,ArrayTaskID:|,Name:|"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    found: dict[str, tuple[str, str]] = {}
    for line in out.splitlines():
        array_id, tasks, name = line.split("|")[:3]
        if "-" in tasks or array_id not in found:  # the pending range is the whole array
            found[array_id] = (tasks, name)
    return found


def _status_json(handle: str) -> dict[str, Any]:
    out = _torchx("status", "--json", handle)
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def test_a_2x2_sweep_is_one_job_array_and_retry_failed_resubmits_two(
    runner: Any, workdir: Path
) -> None:
    run = _torchx(
        "run", "-s", "slurm", "--sweep", "lr=0.1,0.2", "--sweep", "batch=8,16",
        COMPONENT, "--fail_batch", "16",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.splitlines()[-1]
    job_id = handle.rsplit("/", 1)[1]
    assert job_id.isdigit()  # one array, one sbatch
    status = terminal_status(runner, handle, 120)
    assert status.state == AppState.FAILED
    assert status.array is not None
    assert status.array.to_json() == ARRAY_2X2
    assert _array_tasks(job_id) == [f"{job_id}_{i}" for i in range(4)]
    text = _torchx("status", handle).stdout
    assert "Sweep: 4 elements: 2 succeeded, 2 failed (1, 3)" in text
    assert any(words in text for words in FAILED_2X2.values())  # the first failed element
    log = _torchx("log", handle).stdout.splitlines()
    assert sorted(log) == [
        "train/0 lr=0.1 batch=8 index=0 size=4",
        "train/1 lr=0.1 batch=16 index=1 size=4",
        "train/2 lr=0.2 batch=8 index=2 size=4",
        "train/3 lr=0.2 batch=16 index=3 size=4",
    ]
    listed = json.loads(_torchx("list", "-s", "slurm", "--json").stdout)
    assert [a["app_handle"] for a in listed].count(handle) == 1  # one row

    retry = _torchx("run", "--retry-failed", handle)
    assert retry.returncode == 0, retry.stderr
    new = retry.stdout.splitlines()[-1]
    new_id = new.rsplit("/", 1)[1]
    again = terminal_status(runner, new, 120)
    assert again.array is not None
    assert [(e.index, e.values, e.state) for e in again.array.elements] == [
        (1, {"lr": "0.1", "batch": "16"}, AppState.FAILED),
        (3, {"lr": "0.2", "batch": "16"}, AppState.FAILED),
    ]
    assert _array_tasks(new_id) == [f"{new_id}_0", f"{new_id}_1"]  # only the two
    element = _torchx("log", f"{new}/train/3")  # asked for by its index in the sweep
    assert element.stdout == "train/3 lr=0.2 batch=16 index=3 size=4\n", element


def test_max_parallel_is_the_arrays_throttle(runner: Any, workdir: Path) -> None:
    record = workdir / "record.txt"
    run = _torchx(
        "run", "-s", "slurm", "--sweep", "lr=0.1,0.2,0.3", "--max-parallel", "1",
        COMPONENT, "--record", str(record), "--hold", "1",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.splitlines()[-1]
    job_id = handle.rsplit("/", 1)[1]
    arrays = _queued_arrays(job_id)
    tasks, _ = arrays[job_id]
    assert tasks.endswith("%1"), arrays  # Slurm holds the rest back itself
    assert terminal_status(runner, handle, 120).state == AppState.SUCCEEDED
    assert most_at_once(record.read_text()) == 1


def test_a_sweep_past_max_array_size_is_split_and_one_of_1000_is_one_array(
    runner: Any, workdir: Path
) -> None:
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True)
    fields = (line.partition("=") for line in config.stdout.splitlines())
    limit = int(next(value for key, _, value in fields if key.strip() == "MaxArraySize"))
    values = ",".join(str(n) for n in range(limit + 1))
    run = _torchx(
        "run", "-s", "slurm", "--sweep", f"batch={values}", "--max-parallel", "2",
        COMPONENT, "--hold", "30",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.splitlines()[-1]
    first, second = handle.rsplit("/", 1)[1].split(",")
    arrays = _queued_arrays(f"{first},{second}")
    assert arrays[first][1] == "sweep:train-array-0"
    assert arrays[second] == ("0%2", f"sweep:train-array-{limit}")  # the element past it
    status = runner.status(handle)
    assert status.array is not None and status.array.size == limit + 1
    assert len(status.array.elements) == limit + 1
    runner.cancel(handle)

    thousand = ",".join(str(n) for n in range(1000))
    one = _torchx(
        "run", "-s", "slurm", "--sweep", f"batch={thousand}", "--max-parallel", "2",
        COMPONENT, "--hold", "30",
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    handle = one.stdout.splitlines()[-1]
    job_id = handle.rsplit("/", 1)[1]
    assert job_id.isdigit()  # one sbatch call
    tasks, _ = _queued_arrays(job_id)[job_id]
    assert tasks.endswith("-999%2"), tasks
    status = runner.status(handle)
    assert status.array is not None and len(status.array.elements) == 1000
    runner.cancel(handle)
