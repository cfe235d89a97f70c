"""Why an app failed on a real two-node Ray cluster (tools/ray-up.sh): the root cause each
failure there gets (``status``'s ``failure``)."""

from __future__ import annotations

from typing import Any

from torchx.specs import AppDef, AppState, Resource, Role, macros

WAIT_S = 150


def _sh(script: str, replicas: int = 1, cpu: int = 1) -> AppDef:
    role = Role(
        name="train",
        image="unused",
        entrypoint="sh",
        args=["-c", script],
        env={"REPLICA": macros.replica_id},
        num_replicas=replicas,
        resource=Resource(cpu=cpu, gpu=0, memMB=128),
    )
    return AppDef("failing", [role])


def _failure(runner: Any, app: AppDef, **cfg: Any) -> Any:
    handle = runner.run(app, "ray", cfg=cfg)
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.FAILED, status
    assert status.failure is not None, status
    return status.failure


def test_an_exception_is_named_with_its_message_and_log_tail(runner: Any) -> None:
    script = "echo loading; exec python3 -c 'raise RuntimeError(\"boom\")'"
    failure = _failure(runner, _sh(script))
    assert (failure.role, failure.replica_id, failure.cause) == ("train", 0, "exception")
    assert failure.message == "RuntimeError: boom"
    assert failure.log_tail[-1] == "RuntimeError: boom"
    assert failure.time is not None


def test_the_replica_that_failed_first_is_the_root_cause(runner: Any) -> None:
    script = 'if [ "$REPLICA" = 1 ]; then echo broke >&2; exit 3; fi; sleep 5; exit 1'
    failure = _failure(runner, _sh(script, replicas=2))
    assert (failure.replica_id, failure.cause, failure.exit_code) == (1, "exit_code", 3)
    assert failure.log_tail == ["broke"]


def test_a_replica_killed_by_sigkill(runner: Any) -> None:
    kill = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    failure = _failure(runner, _sh(f"exec python3 -c '{kill}'"))
    assert (failure.cause, failure.signal) == ("signal", "SIGKILL"), failure


def test_resources_that_never_free_are_a_rejection(runner: Any) -> None:
    failure = _failure(runner, _sh("true", cpu=64), placement_timeout_s=3)
    assert failure.cause == "rejected", failure
    assert failure.message.startswith("resources never became free")


def test_a_succeeded_app_has_no_failure(runner: Any) -> None:
    handle = runner.run(_sh("echo fine"), "ray")
    status = runner.wait(handle, wait_interval=0.5)
    assert (status.state, status.failure) == (AppState.SUCCEEDED, None)


def test_waiting_says_what_it_waits_for_and_the_timeline_is_in_order(runner: Any) -> None:
    """An app that asks for more CPUs than the cluster has waits (queued, with what it
    needs) until its placement times out; an app that runs goes submitted, starting,
    queued (its placement group), running, finished."""
    handle = runner.run(_sh("true", cpu=64), "ray", cfg={"placement_timeout_s": 20})

    def queued() -> Any:
        status = runner.status(handle)
        return status if status.waiting is not None and status.waiting.phase == "queued" else None

    import time

    deadline = time.monotonic() + WAIT_S
    while (waiting := queued()) is None:
        assert time.monotonic() < deadline, runner.status(handle)
        time.sleep(0.5)
    assert "64" in waiting.waiting.reason, waiting.waiting
    runner.cancel(handle)
    ran = runner.wait(runner.run(_sh("echo ran"), "ray"), wait_interval=0.5)
    phases = [p.phase for p in ran.timeline]
    assert phases == ["submitted", "starting", "queued", "running", "finished"], ran.timeline
    starts = [p.start for p in ran.timeline]
    assert starts == sorted(starts)
    assert ran.waiting is None
