"""A followed local_docker log whose stream is cut, again and again, at every kind of place:
inside a burst of lines read at once, inside the pieces of a line longer than the daemon's
16 KiB entries (the pieces share one stamp), inside a run of identical lines, inside lines
written to stdout and stderr in turn (stamped by two readers, so not always in order). What torchx
gives out must be exactly the daemon's own record of the log: no line lost, none repeated,
none split or joined.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from torchx_testsupport import runner_that_cleans_up
from torchx_testsupport.docker import IMAGE, LogStreamCutter, app_containers

from torchx import specs
from torchx.specs import AppState

SCRIPT = r"""
import os, sys, time
def burst(tag, n):
    sys.stdout.write("".join(f"{tag}-{i}\n" for i in range(n)))
    sys.stdout.flush()
burst("first", 400)
sys.stdout.write("x" * 40000 + "\n"); sys.stdout.flush()
sys.stdout.write("same\n" * 30); sys.stdout.flush()
for i in range(3000):  # two readers stamp stdout and stderr: stamps come out of order
    sys.stdout.write(f"out-{i}\n"); sys.stdout.flush()
    sys.stderr.write(f"err-{i}\n"); sys.stderr.flush()
while not os.path.exists("/tmp/go"):
    time.sleep(0.02)
burst("second", 300)
sys.stdout.write("y" * 20000 + "\n" + "same\n" * 10)
"""

# where each followed stream is cut, in bytes of the daemon's answer; each new stream starts
# again a little before the last line given out, so the cuts fall all over the backlog
CUTS = [1_500, 7_000, 19_000, 33_000, 36_500, 45_000, 52_000, 57_500, 64_500, 66_000, 80_000]
CUTS += [110_000, 150_000, 230_000, 290_000]
FIRST = 400 + 1 + 30 + 6000  # lines written before the go


@pytest.fixture
def cutter(docker_client: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    import os

    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        pytest.skip(f"the cutting proxy fronts a unix socket, not {host}")
    proxy = LogStreamCutter(CUTS, socket_path=host[len("unix://") :])
    monkeypatch.setenv("DOCKER_HOST", proxy.address)
    yield proxy
    proxy.close()


def test_followed_log_cut_anywhere_is_the_daemons_log_exactly(
    cutter: LogStreamCutter, docker_client: Any
) -> None:
    role = specs.Role(name="w", image=IMAGE, entrypoint="python3", args=["-c", SCRIPT])
    with runner_that_cleans_up(lambda r, handle: r.delete(handle)) as runner:
        handle = runner.run(specs.AppDef(name="cuts", roles=[role]), "local_docker", {})
        container = app_containers(docker_client, handle.rsplit("/", 1)[-1])[0]["Id"]
        followed: list[str] = []

        def go_once_cut_everywhere() -> None:
            while not (cutter.all_cut.is_set() and len(followed) >= FIRST):
                if done.wait(0.02):
                    return
            exec_id = docker_client.api.exec_create(container, ["touch", "/tmp/go"])
            docker_client.api.exec_start(exec_id)

        done = threading.Event()
        trigger = threading.Thread(target=go_once_cut_everywhere, daemon=True)
        trigger.start()
        try:
            followed.extend(runner.log_lines(handle, "w", 0, should_tail=True))
        finally:
            done.set()
            trigger.join()
        assert cutter.cut == len(CUTS), f"only {cutter.cut} streams were cut"
        assert runner.wait(handle, wait_interval=0.2).state == AppState.SUCCEEDED
        record = docker_client.api.logs(container, stdout=True, stderr=True).decode()
    assert len(followed) == FIRST + 300 + 1 + 10
    assert "".join(followed) == record
