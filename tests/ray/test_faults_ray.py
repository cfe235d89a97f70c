"""Ray under faults: the dashboard (the Jobs API server) restarts while the Runner waits on
a job and `torchx log --tail` follows it. The job lives on in the cluster; both must reach
its real end, with no log line lost or repeated."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from torchx_testsupport.faults import follow_through_restart, numbered_script, record_fault

from torchx.specs import AppDef, AppState, Resource, Role

pytestmark = pytest.mark.faults

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
    final: list[Any] = []
    waiter = threading.Thread(target=lambda: final.append(runner.wait(handle, wait_interval=1)))
    waiter.start()
    followed = follow_through_restart(f"{handle}/n/0", "ray-dashboard", LINES, lead_s=2)
    waiter.join(timeout=180)
    state = final[0].state if final and final[0] else None
    waited = state == AppState.FAILED
    record_fault(
        "ray", "dashboard restart during `Runner.wait`", survived=waited,
        outcome=f"{state.name} (the job's exit 3)" if waited else repr(final),
    )  # fmt: skip
    followed.record("ray", "dashboard restart during `log --tail`")
    assert waited, final
    assert followed.survived, followed.why()
