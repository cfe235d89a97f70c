"""Why an app failed on local_docker, against a real daemon: the root cause of each
failure Docker can produce here (``status``'s ``failure``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport.docker import IMAGE

from torchx import specs
from torchx.specs import AppState

SCHED = "local_docker"


def _role(script: str, replicas: int = 1, **kwargs: Any) -> specs.Role:
    return specs.Role(
        name="train",
        image=IMAGE,
        entrypoint="sh",
        args=["-c", script],
        env={"REPLICA": "${replica_id}"},
        num_replicas=replicas,
        **kwargs,
    )


def _failed(runner: Any, role: specs.Role) -> Any:
    handle = runner.run(specs.AppDef(name="failing", roles=[role]), SCHED, {})
    status = runner.wait(handle, wait_interval=0.5)
    assert status.state == AppState.FAILED, status
    assert status.failure is not None
    return status.failure


def test_an_exception_is_named_with_its_message_and_log_tail(runner: Any) -> None:
    failure = _failed(runner, _role("echo loading; python -c 'raise RuntimeError(\"boom\")'"))
    assert (failure.role, failure.replica_id, failure.cause) == ("train", 0, "exception")
    assert failure.message == "RuntimeError: boom"
    assert failure.log_tail[0] == "loading" and failure.log_tail[-1] == "RuntimeError: boom"
    assert failure.traceback.startswith("Traceback (most recent call last):")
    assert failure.time is not None


def test_the_replica_that_failed_first_is_the_root_cause(runner: Any) -> None:
    script = 'if [ "$REPLICA" = 1 ]; then echo broke; exit 3; fi; sleep 5; exit 1'
    failure = _failed(runner, _role(script, replicas=2))
    assert (failure.replica_id, failure.cause, failure.exit_code) == (1, "exit_code", 3)
    assert failure.log_tail == ["broke"]


def test_a_replica_killed_by_sigkill(runner: Any) -> None:
    failure = _failed(runner, _role("echo bye; kill -9 $$$$"))
    assert (failure.cause, failure.signal) == ("signal", "SIGKILL")


def test_an_oom_kill_names_the_limit(runner: Any) -> None:
    """A 64 MB container that allocates 512 MB: the kernel kills it, Docker says OOMKilled."""
    grow = "x = bytearray(512 << 20); print(len(x))"
    role = _role(f"echo start; python -c '{grow}'", resource=specs.Resource(cpu=1, gpu=0, memMB=64))
    failure = _failed(runner, role)
    assert failure.cause == "oom", failure
    assert "64 MB" in failure.message and "memMB" in failure.message


def test_rank_1_of_a_ddp_job_is_named(runner: Any, tmp_path: Path) -> None:
    """torchrun in two containers; the worker of global rank 1 raises after rendezvous."""
    pytest.importorskip("torch")
    venv = sys.prefix
    base = os.path.realpath(sys.base_prefix)
    (tmp_path / "train.py").write_text(
        "import os, time, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "if dist.get_rank() == 1:\n"
        "    raise ValueError('rank one broke')\n"
        # rank 0 fails later on its own: torchrun would otherwise wait out its exit barrier
        "time.sleep(5)\n"
        "os._exit(2)\n"
    )
    args = [
        "--script", "/train/train.py", "-j", "2x1", "--image", IMAGE,
        "--env", f"PATH={venv}/bin:/usr/bin:/bin,PYTHONUNBUFFERED=1",
        "--mounts",
        f"type=bind,src={venv},dst={venv},readonly,"
        f"type=bind,src={base},dst={base},readonly,"
        f"type=bind,src={tmp_path},dst=/train,readonly",
    ]  # fmt: skip
    handle = runner.run_component("dist.ddp", args, SCHED, {})
    runner.test_handles.append(handle)
    status = runner.wait(handle, wait_interval=1)
    failure = status.failure
    assert status.state == AppState.FAILED and failure is not None, status
    assert (failure.replica_id, failure.rank) == (1, 1), failure
    assert failure.message == "ValueError: rank one broke", "\n".join(failure.log_tail)


def test_a_succeeded_app_has_no_failure(runner: Any) -> None:
    handle = runner.run(specs.AppDef(name="fine", roles=[_role("echo fine")]), SCHED, {})
    status = runner.wait(handle, wait_interval=0.5)
    assert (status.state, status.failure) == (AppState.SUCCEEDED, None)


def test_the_timeline_has_the_image_pull_and_the_start(runner: Any, docker_client: Any) -> None:
    """An image not on the host is pulled from the local registry first: the timeline
    says so, then the containers starting, running and finished."""
    from torchx_testsupport.docker import REGISTRY

    image = f"{REGISTRY}/torchx-test/python:3.11-r2"
    docker_client.images.get(IMAGE).tag(image)
    docker_client.images.push(image)
    docker_client.images.remove(image)
    role = specs.Role(name="sh", image=image, entrypoint="sh", args=["-c", "sleep 1"])
    app = specs.AppDef(name="pulled", roles=[role])
    handle = runner.run(app, SCHED, {})
    status = runner.wait(handle, wait_interval=0.5)
    assert status.state == AppState.SUCCEEDED, status
    phases = [p.phase for p in status.timeline]
    assert phases == ["submitted", "pulling_image", "starting", "running", "finished"]
    pulling = status.timeline[1]
    assert pulling.detail == image and pulling.end >= pulling.start
    running = status.timeline[3]
    assert running.end - running.start >= 0.5  # it slept a second (Created: whole seconds)
    assert status.format().count("Started after") == 1
