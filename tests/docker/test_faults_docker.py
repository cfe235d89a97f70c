"""local_docker under faults: dockerd restarts (``--live-restore``: the containers run on)
while the Runner waits on an app and while `torchx log --tail` follows one. Both must
reach the app's real end with no log line lost or repeated."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from torchx_testsupport.docker import IMAGE, app_containers
from torchx_testsupport.faults import (
    count_lines,
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


RESTARTS = 10
FOLLOW_LINES, FOLLOW_DELAY_S = 40, 0.2  # 8 s of output: each restart falls inside it


@pytest.mark.parametrize("attempt", range(1, RESTARTS + 1))
def test_log_follow_rides_through_a_dockerd_restart(
    runner: Any, docker_client: Any, attempt: int
) -> None:
    """`torchx log --tail` through a dockerd restart gives exactly the daemon's own record
    of the log, every time. Docker itself (20.10, live-restore) can drop a line that was in
    flight when it stopped; that is counted in the table as the daemon's, not torchx's."""
    _live_restore(docker_client)
    script = numbered_script(FOLLOW_LINES, FOLLOW_DELAY_S)
    role = specs.Role(name="sh", image=IMAGE, entrypoint="sh", args=["-c", script])
    handle = runner.run(specs.AppDef(name="faults", roles=[role]), "local_docker", {})
    _running(runner, handle)
    followed = follow_through_restart(f"{handle}/sh/0", "dockerd", FOLLOW_LINES, lead_s=1)
    final = runner.status(handle)
    container = app_containers(docker_client, handle.rsplit("/", 1)[-1])[0]["Id"]
    record = docker_client.api.logs(container, stdout=True, stderr=True).decode()
    printed = "".join(line.split(" ", 1)[1] + "\n" for line in followed.out.splitlines())
    daemon_lost, _ = count_lines(record, FOLLOW_LINES)
    survived = followed.returncode == 0 and printed == record
    record_fault(
        "local_docker", f"dockerd restart during `log --tail` ({attempt} of {RESTARTS})",
        survived=survived, lost=max(0, followed.lost - daemon_lost), repeated=followed.repeated,
        outcome=("followed to the end" if survived else followed.err.strip()[-200:])
        + (f"; dockerd itself dropped {daemon_lost} line(s)" if daemon_lost else ""),
    )  # fmt: skip
    assert followed.returncode == 0, followed.why()
    assert printed == record, followed.why()
    assert final is not None and final.state == AppState.SUCCEEDED, final
