"""Why a job failed on a real Slurm cluster: the root cause of each failure Slurm can produce
here, as ``status`` reports it (``AppStatus.failure``, ``--json``'s ``"failure"``).

Out of memory is not among them: the test cluster has no cgroup plugin (``TaskPlugin=
task/none``), so Slurm enforces no memory limit; parsing ``OUT_OF_MEMORY`` is unit-tested
(packages/torchx-sched-slurm/tests/test_slurm_failure.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import submitted_as_status_says

from torchx.specs import AppDef, AppState, Resource, Role

SMALL = Resource(cpu=1, gpu=0, memMB=256)


def _app(script: str, replicas: int = 1) -> AppDef:
    role = Role(
        name="train",
        image=os.getcwd(),
        entrypoint="bash",
        args=["-c", script],
        env={"REPLICA": "${replica_id}"},
        resource=SMALL,
        num_replicas=replicas,
    )
    return AppDef(name="failing", roles=[role])


def _until(what: str, check: Callable[[], Any], timeout: float = 150) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout} s")


def _final(runner: Any, handle: str, timeout: float = 150) -> Any:
    def ended() -> Any:
        status = runner.status(handle)
        return status if status is not None and status.is_terminal() else None

    return _until(f"{handle} ended", ended, timeout)


def test_an_exception_is_named_with_its_message_and_log_tail(runner: Any) -> None:
    script = "echo 'loading data'; python3 -c 'raise RuntimeError(\"boom\")'"
    status = _final(runner, runner.run(_app(script), "slurm"))
    assert status.state == AppState.FAILED
    failure = status.failure
    assert (failure.role, failure.replica_id, failure.cause) == ("train", 0, "exception")
    assert failure.message == "RuntimeError: boom"
    assert failure.traceback.startswith("Traceback (most recent call last):")
    assert failure.log_tail[-1] == "RuntimeError: boom"
    assert failure.time is not None


def test_the_replica_that_failed_first_is_blamed_not_the_ones_srun_stopped(runner: Any) -> None:
    script = 'if [ "$REPLICA" = 1 ]; then sleep 1; echo broke >&2; exit 3; fi; sleep 120'
    status = _final(runner, runner.run(_app(script, replicas=2), "slurm"))
    assert status.state == AppState.FAILED
    failure = status.failure
    assert (failure.replica_id, failure.cause, failure.exit_code) == (1, "exit_code", 3)
    assert failure.log_tail == ["broke"]


def test_a_replica_killed_by_sigkill(runner: Any) -> None:
    status = _final(runner, runner.run(_app("echo bye; kill -9 $$$$"), "slurm"))
    failure = status.failure
    assert (failure.cause, failure.signal, failure.message) == (
        "signal",
        "SIGKILL",
        "killed by SIGKILL",
    )


def test_a_job_over_its_time_limit(runner: Any) -> None:
    """Slurm's smallest limit is a minute; KillWait (5 s) then ends the step."""
    handle = runner.run(_app("echo started; sleep 300"), "slurm", {"time": "1"})
    status = _final(runner, handle, timeout=180)
    assert status.state == AppState.FAILED
    failure = status.failure
    assert failure.cause == "time_limit", failure
    assert "time limit" in failure.message
    assert any("DUE TO TIME LIMIT" in line for line in failure.log_tail), failure.log_tail


def _node_state(node: str) -> str:
    return subprocess.run(
        ["sinfo", "-h", "-N", "-n", node, "-o", "%t"], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.faults
def test_a_node_set_down_under_a_job_is_its_replicas_node_failure(
    runner: Any, workdir: Path
) -> None:
    script = 'echo "replica $REPLICA up"; sleep 300'
    handle = runner.run(_app(script, replicas=2), "slurm", {"requeue": False})
    job_id = handle.rsplit("/", 1)[1]
    logs = [workdir / f"slurm-{job_id}-train-{i}.out" for i in range(2)]
    _until("both replicas running", lambda: all(p.exists() and p.read_text() for p in logs))
    nodes = subprocess.run(
        ["squeue", "-h", "-j", job_id, "-o", "%N"], capture_output=True, text=True, check=True
    ).stdout.split()
    node = nodes[-1]  # replica 1's
    for state in ("down", "drain"):
        subprocess.run(
            ["scontrol", "update", f"nodename={node}", f"state={state}", "reason=torchx-test"],
            check=True,
        )
    try:
        status = _final(runner, handle)
    finally:
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], check=True)
        _until(f"{node} back in service", lambda: _node_state(node) == "idle", 60)
    assert status.state == AppState.FAILED
    failure = status.failure
    assert (failure.replica_id, failure.cause) == (1, "node_failure"), failure
    assert node in failure.message


def test_a_succeeded_job_has_no_failure(runner: Any) -> None:
    status = _final(runner, runner.run(_app("echo fine"), "slurm"))
    assert (status.state, status.failure) == (AppState.SUCCEEDED, None)


def test_the_cli_names_the_root_cause(runner: Any) -> None:
    """``status --json`` has the documented keys; text status and ``log --failed`` put the
    root cause first."""
    fail = """python3 -c "raise ValueError('bad shard')"; exit 1"""
    script = f'if [ "$REPLICA" = 1 ]; then {fail}; fi; sleep 300'
    handle = runner.run(_app(script, replicas=2), "slurm")
    _final(runner, handle)
    cli = [sys.executable, "-m", "torchx.cli.main"]
    shown = subprocess.run([*cli, "status", "--json", handle], capture_output=True, text=True)
    failure = json.loads(shown.stdout)["failure"]
    assert failure is not None, shown.stdout
    assert set(failure) == {
        "role", "replica_id", "rank", "cause", "exit_code", "signal", "message",
        "traceback", "log_tail", "time",
    }  # fmt: skip
    assert (failure["replica_id"], failure["message"]) == (1, "ValueError: bad shard")
    text = subprocess.run([*cli, "status", handle], capture_output=True, text=True).stdout
    assert "Root cause: train[1]" in text and "ValueError: bad shard" in text
    log = subprocess.run([*cli, "log", "--failed", handle], capture_output=True, text=True)
    assert log.stderr.splitlines()[0].startswith("torchx: root cause: train[1]"), log.stderr
    assert "ValueError: bad shard" in log.stdout


def test_a_job_behind_a_full_cluster_says_why_it_waits_then_where_its_time_went(
    runner: Any,
) -> None:
    """Every node held by another job: the app waits (Resources, or Priority behind an
    older one); once the holder is cancelled it runs, and its timeline has queued ending
    where running starts."""
    nodes = subprocess.run(
        ["sinfo", "-h", "-o", "%D"], capture_output=True, text=True, check=True
    ).stdout.split()
    holder = subprocess.run(
        ["sbatch", "--parsable", "--exclusive", f"--nodes={sum(map(int, nodes))}",
         "--output=/dev/null", "--wrap", "sleep 300"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    try:
        _until(
            "the holder running",
            lambda: (
                subprocess.run(
                    ["squeue", "-h", "-j", holder, "-o", "%T"], capture_output=True, text=True
                ).stdout.strip()
                == "RUNNING"
            ),
        )
        handle = runner.run(_app("echo ran"), "slurm")

        def waiting() -> Any:
            """Waiting with its reason, for two seconds at least (Slurm's times are whole
            seconds: the queued phase is then measurable)."""
            status = runner.status(handle)
            reason = status.waiting.reason if status.waiting is not None else ""
            long = status.waiting is not None and time.time() - status.waiting.since >= 2
            return status if reason.startswith(("Resources", "Priority")) and long else None

        status = _until(f"{handle} waiting with its reason", waiting, 60)
        assert status.waiting.phase == "queued" and status.waiting.since is not None
        assert "Waiting " in status.format()
        rows = {r.app_handle: r for r in runner.list("slurm")}
        assert rows[handle].waiting.startswith(("Resources", "Priority"))
        submitted_as_status_says(rows[handle], status)
    finally:
        subprocess.run(["scancel", holder], check=False)
    final = _final(runner, handle)
    assert final.state == AppState.SUCCEEDED
    phases = {p.phase: p for p in final.timeline}
    assert list(phases) == ["submitted", "queued", "running", "finished"], final.timeline
    assert phases["queued"].end == phases["running"].start
    assert phases["queued"].end - phases["queued"].start >= 1
    assert final.waiting is None and "Started after" in final.format()
