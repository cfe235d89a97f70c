"""Ray under faults: the dashboard (the Jobs API server) restarts while the Runner waits on
a job and `torchx log --tail` follows it. The job lives on in the cluster; both must reach
its real end, with no log line lost or repeated."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from torchx_fault_testsupport import (
    count_lines,
    numbered_script,
    record_fault,
    restart_in_background,
)

from torchx.specs import AppDef, AppState, Resource, Role

pytestmark = pytest.mark.faults

TORCHX = str(Path(sys.executable).parent / "torchx")
LINES, DELAY_S = 60, 0.3  # 18 s of output: the restart (about 8 s) falls inside it


def test_wait_and_follow_ride_through_a_dashboard_restart(runner: Any) -> None:
    script = f"{numbered_script(LINES, DELAY_S)}; exit 3"
    role = Role("n", image="unused", entrypoint="sh", args=["-c", script],
                resource=Resource(cpu=1, gpu=0, memMB=128))  # fmt: skip
    handle = runner.run(AppDef("faults", [role]), "ray")
    deadline = time.monotonic() + 120
    while (status := runner.status(handle)) is None or status.state != AppState.RUNNING:
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    follower = subprocess.Popen(
        [TORCHX, "log", "--tail", f"{handle}/n/0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    final: list[Any] = []
    waiter = threading.Thread(target=lambda: final.append(runner.wait(handle, wait_interval=1)))
    waiter.start()
    time.sleep(2)
    restart_in_background("ray-dashboard", down_s=3).join()
    out, err = follower.communicate(timeout=180)
    waiter.join(timeout=180)
    lost, repeated = count_lines(out, LINES)
    state = final[0].state if final and final[0] else None
    waited = state == AppState.FAILED
    record_fault(
        "ray", "dashboard restart during `Runner.wait`", survived=waited,
        outcome=f"{state.name} (the job's exit 3)" if waited else repr(final),
    )  # fmt: skip
    followed = follower.returncode == 0 and not lost and not repeated
    record_fault(
        "ray", "dashboard restart during `log --tail`", survived=followed, lost=lost,
        repeated=repeated, outcome="followed to the job's end" if followed else err[-200:],
    )  # fmt: skip
    assert waited, final
    assert followed, (follower.returncode, lost, repeated, out[-300:], err)
