"""local_docker under faults: dockerd restarts (``--live-restore``: the containers run on)
while the Runner waits on an app and while `torchx log --tail` follows one. Both must
reach the app's real end with no log line lost or repeated."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from torchx_docker_testsupport import IMAGE
from torchx_fault_testsupport import (
    follow_through_restart,
    numbered_script,
    record_fault,
    restart_in_background,
)

from torchx import specs
from torchx.specs import AppState

pytestmark = pytest.mark.faults

LINES, DELAY_S = 60, 0.25  # 15 s of output: the restart (about 8 s) falls inside it


def _numbered_app(exit_code: int = 0) -> specs.AppDef:
    script = f"{numbered_script(LINES, DELAY_S)}; exit {exit_code}"
    role = specs.Role(name="sh", image=IMAGE, entrypoint="sh", args=["-c", script])
    return specs.AppDef(name="faults", roles=[role])


def _running(runner: Any, handle: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while (status := runner.status(handle)) is None or status.state != AppState.RUNNING:
        assert time.monotonic() < deadline, f"{handle} never ran: {status}"
        time.sleep(0.1)


def _live_restore(docker_client: Any) -> None:
    if not docker_client.info().get("LiveRestoreEnabled"):
        pytest.fail("dockerd runs without --live-restore; restart it with tools/docker-up.sh")


def test_wait_rides_through_a_dockerd_restart(runner: Any, docker_client: Any) -> None:
    _live_restore(docker_client)
    handle = runner.run(_numbered_app(exit_code=3), "local_docker", {})
    _running(runner, handle)
    final: list[Any] = []
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            final.append(runner.wait(handle, wait_interval=1))
        except BaseException as e:
            errors.append(e)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(1)
    restart_in_background("dockerd", down_s=3).join()
    waiter.join(timeout=180)
    state = final[0].state if final and final[0] else None
    survived = not errors and state == AppState.FAILED and final[0].roles[0].replicas[0]
    record_fault(
        "local_docker", "dockerd restart during `Runner.wait`", survived=bool(survived),
        outcome=f"{state.name} (the app's exit 3)" if survived else repr(errors or final),
    )  # fmt: skip
    assert not errors, errors
    assert state == AppState.FAILED, final


def test_log_follow_rides_through_a_dockerd_restart(runner: Any, docker_client: Any) -> None:
    _live_restore(docker_client)
    handle = runner.run(_numbered_app(), "local_docker", {})
    _running(runner, handle)
    followed = follow_through_restart(f"{handle}/sh/0", "dockerd", LINES, lead_s=1.5)
    final = runner.status(handle)
    followed.record("local_docker", "dockerd restart during `log --tail`")
    assert followed.survived, followed.why()
    assert final is not None and final.state == AppState.SUCCEEDED, final
