"""aws_batch under faults: the emulator (moto) restarts while a script polls `torchx status`.
Polls made while it is down wait for it (botocore's retries, then torchx's budget); once it
is back it has forgotten every job, as a real outage of AWS would not: the answer must be a
clear one-line "not found", never a crash or a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from torchx_testsupport.docker import IMAGE
from torchx_testsupport.faults import record_fault, restart

pytestmark = pytest.mark.faults

TORCHX = str(Path(sys.executable).parent / "torchx")


def _torchx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TORCHX_RETRY_S": "60"}  # what a user gets by default, and more
    return subprocess.run(
        [TORCHX, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180,
        check=False,
    )  # fmt: skip


def test_status_loop_rides_through_a_moto_restart(batch_queue: str, tmp_path: Path) -> None:
    submitted = _torchx(
        "run", "-s", "aws_batch", "-cfg", f"queue={batch_queue}", "--workspace", "",
        "utils.sh", "--image", IMAGE, "--memMB", "128", "sleep", "60", cwd=tmp_path,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    handle = submitted.stdout.strip().splitlines()[-1]
    polls: list[subprocess.CompletedProcess[str]] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            polls.append(_torchx("status", "--json", handle, cwd=tmp_path))

    poller = threading.Thread(target=poll)
    poller.start()
    try:  # a failure stops the poller too: a thread left polling would keep pytest alive
        started = time.monotonic()
        while not polls:  # one answer from the emulator before it goes away
            assert time.monotonic() - started < 60, "no status answered"
            time.sleep(0.1)
        started = time.monotonic()
        restart("moto", down_s=3)
        while not any(p.returncode != 0 for p in polls):  # the first poll after the restart
            assert time.monotonic() - started < 120, [p.stderr for p in polls]
            time.sleep(0.2)
    finally:
        stop.set()
        poller.join()
    answered = [json.loads(p.stdout)["state"] for p in polls if p.returncode == 0]
    refused = [p for p in polls if p.returncode != 0]
    errors = [p.stderr.strip().splitlines()[-1] for p in refused]
    clear = all(
        "Traceback" not in p.stderr and "not found" in line.lower()
        for p, line in zip(refused, errors, strict=True)
    )
    record_fault(
        "aws_batch", "moto restart during a `status` loop", survived=clear and bool(answered),
        outcome=f"{len(answered)} answers, then: {errors[0] if errors else '-'}",
    )  # fmt: skip
    assert answered and set(answered) <= {"PENDING", "SUBMITTED", "RUNNING"}, answered
    assert clear, [p.stderr for p in refused]
