"""Long jobs on a real Slurm cluster: requeues, the time-limit warning and lost nodes.

Each attempt of a requeued job sees ``$TORCHX_ATTEMPT`` (0, 1, ...), appends to the logs
of the earlier ones under an ``=== torchx: attempt N ===`` line, and ``status`` says while
it waits how the last attempt ended. Slurm holds a requeued job about two minutes
(``cred_expire``) before it may start again; the tests move that start to ``now+2`` (not
``now``: slurmd refuses a credential issued in the second the requeue revoked the old one).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from torchx.schedulers.api import Stream
from torchx.specs import AppDef, AppState, Resource, Role

SMALL = Resource(cpu=1, gpu=0, memMB=256)


def _app(script: str, max_retries: int = 0) -> AppDef:
    role = Role(
        name="train",
        image=os.getcwd(),
        entrypoint="bash",
        args=["-c", script],
        resource=SMALL,
        max_retries=max_retries,
    )
    return AppDef(name="long", roles=[role])


def _until(what: str, check: Callable[[], Any], timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout} s")


def _started(workdir: Path, job_id: str) -> bool:
    log = workdir / f"slurm-{job_id}-train-0.out"
    return log.exists() and "attempt 0" in log.read_text()


def _pending_again(runner: Any, handle: str) -> Any:
    def waiting() -> Any:
        status = runner.status(handle)
        assert status is not None and not status.is_terminal(), status
        # slurmdbd records how the last attempt ended a moment after the requeue: until
        # then status says "pending again (attempt N)" without the reason
        known = status.msg.startswith("pending again") and "the last one ended: " in status.msg
        return status if known else None

    status = _until(f"{handle} pending again, the reason known", waiting)
    subprocess.run(
        ["scontrol", "update", f"jobid={handle.rsplit('/', 1)[1]}", "starttime=now+2"],
        check=True,
    )
    return status


def _finish(runner: Any, handle: str, timeout: float = 90) -> Any:
    def ended() -> Any:
        status = runner.status(handle)
        return status if status is not None and status.is_terminal() else None

    return _until(f"{handle} ended", ended, timeout)


def _log(runner: Any, handle: str) -> str:
    return "".join(runner.log_lines(handle, "train", 0, streams=Stream.STDOUT))


RESUMABLE = (
    'echo "attempt $TORCHX_ATTEMPT on $SLURMD_NODENAME"; '
    'if [ "$TORCHX_ATTEMPT" = 0 ]; then sleep 300; fi'
)


def test_requeued_job_keeps_every_attempts_output(runner: Any, workdir: Path) -> None:
    handle = runner.run(_app(RESUMABLE), "slurm")
    job_id = handle.rsplit("/", 1)[1]
    _until("attempt 0 running", lambda: _started(workdir, job_id))
    subprocess.run(["scontrol", "requeue", job_id], check=True)
    waiting = _pending_again(runner, handle)
    assert waiting.state == AppState.PENDING and waiting.num_restarts == 1
    assert "attempt 1; the last one ended: REQUEUED" in waiting.msg
    final = _finish(runner, handle)
    assert (final.state, final.num_restarts) == (AppState.SUCCEEDED, 1), final
    # each attempt on record (sacct --duplicates), the requeued one with its times
    first, last = final.attempts
    assert (first.attempt, first.state, first.cause) == (0, AppState.FAILED, None), first
    assert first.start is not None and first.end is not None and first.start <= first.end
    assert (last.attempt, last.state) == (1, AppState.SUCCEEDED), last
    assert last.start is not None and last.start >= first.end, final.attempts
    lines = _log(runner, handle).splitlines()
    assert [line.split(" on ")[0] for line in lines] == [
        "attempt 0",
        "=== torchx: attempt 1 ===",
        "attempt 1",
    ], lines


def test_warning_signal_reaches_the_replica_and_the_job_resumes(runner: Any, workdir: Path) -> None:
    script = (
        'if [ "$TORCHX_ATTEMPT" = 0 ]; then '
        "  trap 'echo \"checkpoint saved on attempt $TORCHX_ATTEMPT\"; exit 1' USR1; "
        '  echo "attempt 0 trains"; for i in $(seq 110); do sleep 1; done; '
        '  echo "no warning came"; exit 0; '
        "fi; "
        'echo "attempt $TORCHX_ATTEMPT resumes from the checkpoint"'
    )
    # a 1-minute limit, warned 55 s before it (Slurm sends it up to a minute early)
    handle = runner.run(_app(script), "slurm", {"time": "1", "signal": "USR1@55"})
    waiting = _pending_again(runner, handle)
    assert "the last one ended: TIMEOUT" in waiting.msg, waiting
    final = _finish(runner, handle)
    assert (final.state, final.num_restarts) == (AppState.SUCCEEDED, 1), final
    assert _log(runner, handle).splitlines() == [
        "attempt 0 trains",
        "checkpoint saved on attempt 0",
        "=== torchx: attempt 1 ===",
        "attempt 1 resumes from the checkpoint",
    ]


def _node_state(node: str) -> str:
    return subprocess.run(
        ["sinfo", "-h", "-N", "-n", node, "-o", "%t"], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.faults
def test_a_node_lost_under_a_running_job_gets_it_requeued_elsewhere(
    runner: Any, workdir: Path
) -> None:
    handle = runner.run(_app(RESUMABLE), "slurm", {"requeue": True})
    job_id = handle.rsplit("/", 1)[1]
    _until("attempt 0 running", lambda: _started(workdir, job_id))
    node = subprocess.run(
        ["squeue", "-h", "-j", job_id, "-o", "%N"], capture_output=True, text=True, check=True
    ).stdout.strip()
    # the node fails (DOWN kills its jobs) and stays out of service (DRAIN) until resumed
    for state in ("down", "drain"):
        subprocess.run(
            ["scontrol", "update", f"nodename={node}", f"state={state}", "reason=torchx-test"],
            check=True,
        )
    try:
        waiting = _pending_again(runner, handle)
        assert "the last one ended: NODE_FAIL" in waiting.msg, waiting
        final = _finish(runner, handle)
    finally:
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], check=True)
        _until(f"{node} back in service", lambda: _node_state(node) == "idle", 60)
    assert (final.state, final.num_restarts) == (AppState.SUCCEEDED, 1), final
    first, marker, second = _log(runner, handle).splitlines()
    assert (first, marker) == (f"attempt 0 on {node}", "=== torchx: attempt 1 ===")
    assert second.startswith("attempt 1 on n") and second != f"attempt 1 on {node}"


@pytest.mark.faults
def test_a_preempted_job_is_requeued_and_says_so(runner: Any, workdir: Path) -> None:
    """A job of QOS `urgent` (tools/slurm-up.sh: it preempts `normal` by requeueing) needs
    the whole node the app runs on."""
    handle = runner.run(_app(RESUMABLE), "slurm")
    job_id = handle.rsplit("/", 1)[1]
    _until("attempt 0 running", lambda: _started(workdir, job_id))
    node = subprocess.run(
        ["squeue", "-h", "-j", job_id, "-o", "%N"], capture_output=True, text=True, check=True
    ).stdout.strip()
    urgent = subprocess.run(
        ["sbatch", "--parsable", "--qos=urgent", f"--nodelist={node}", "--exclusive",
         "--mem=100", "--output=/dev/null", "--wrap", "true"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    try:
        waiting = _pending_again(runner, handle)
        assert "the last one ended: PREEMPTED" in waiting.msg, waiting
        final = _finish(runner, handle)
    finally:
        subprocess.run(["scancel", urgent], check=False)
    assert (final.state, final.num_restarts) == (AppState.SUCCEEDED, 1), final
    first, marker, second = _log(runner, handle).splitlines()
    assert (first, marker) == (f"attempt 0 on {node}", "=== torchx: attempt 1 ===")
    assert second.startswith("attempt 1 on n")


def test_own_failure_is_not_retried(runner: Any, workdir: Path) -> None:
    handle = runner.run(_app('echo "attempt $TORCHX_ATTEMPT"; exit 3'), "slurm")
    final = _finish(runner, handle)
    assert (final.state, final.num_restarts) == (AppState.FAILED, 0), final
    assert final.failure is not None and final.failure.exit_code == 3, final.failure
    assert _log(runner, handle) == "attempt 0\n"
    batch_log = (workdir / f"slurm-{handle.rsplit('/', 1)[1]}.out").read_text()
    assert "requeued" not in batch_log and "attempt 1" not in batch_log


def test_a_retry_whose_requeue_is_refused_ends_the_job_failed(runner: Any, workdir: Path) -> None:
    """``scontrol requeue`` refuses a job submitted with ``--no-requeue``: the job ends
    FAILED (the root cause: the replica's exit code; the job's own: scontrol's, as
    upstream's script had it), says the requeue was refused, and no line claims a requeue
    that did not happen."""
    handle = runner.run(
        _app('echo "attempt $TORCHX_ATTEMPT"; exit 3', max_retries=2), "slurm",
        cfg={"requeue": False},
    )  # fmt: skip
    final = _finish(runner, handle)
    assert (final.state, final.num_restarts) == (AppState.FAILED, 0), final
    assert final.failure is not None and final.failure.exit_code == 3, final.failure
    batch_log = (workdir / f"slurm-{handle.rsplit('/', 1)[1]}.out").read_text()
    assert "torchx: the requeue was refused (scontrol requeue exited 1)" in batch_log
    assert "torchx: requeued:" not in batch_log, batch_log
    assert _log(runner, handle) == "attempt 0\n"
    # the batch script ends with scontrol's exit code, as upstream's (under `set -e`) did:
    # that is what sacct shows of the job
    import subprocess

    from torchx_testsupport import wait_until

    def job_exit_code() -> str:
        return subprocess.run(
            ["sacct", "-n", "-X", "--parsable2", "-o", "ExitCode", "-j", handle.rsplit("/", 1)[1]],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip

    wait_until(lambda: job_exit_code(), "the job in accounting", 60, 0.5)
    assert job_exit_code() == "1:0"


# a 1-minute limit, warned 55 s before it (Slurm sends it up to a minute early)
WARNED = {"time": "1", "signal": "USR1@55"}


def test_a_command_that_saves_and_exits_0_on_the_warning_succeeds(
    runner: Any, workdir: Path
) -> None:
    """utils.sh's shell no longer dies of the warning (it is the command itself now):
    the command's own exit 0 ends the job SUCCEEDED, with no requeue."""
    script = "trap 'echo saved; exit 0' USR1; echo trains; for i in $(seq 110); do sleep 1; done"
    handle = runner.run_component("utils.sh", ["sh", "-c", script], "slurm", WARNED)
    final = _finish(runner, handle, timeout=150)
    assert (final.state, final.num_restarts) == (AppState.SUCCEEDED, 0), final
    out = "".join(runner.log_lines(handle, "sh", 0, streams=Stream.STDOUT))
    assert out.splitlines() == ["trains", "saved"]


def test_a_ddp_trainer_that_saves_on_the_warning_succeeds(runner: Any, workdir: Path) -> None:
    """torchrun outlives the warning its worker handles, and exits as the worker does."""
    (workdir / "train.py").write_text(
        "import signal, sys, time\n"
        "def saved(*_):\n"
        "    print('saved', flush=True)\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGUSR1, saved)\n"
        "print('trains', flush=True)\n"
        "time.sleep(110)\n"
    )
    handle = runner.run_component(
        "dist.ddp", ["--script", "train.py", "-j", "1x1"], "slurm", WARNED
    )
    final = _finish(runner, handle, timeout=150)
    assert (final.state, final.num_restarts) == (AppState.SUCCEEDED, 0), final
    out = "".join(runner.log_lines(handle, "train", 0))
    assert "trains" in out and "saved" in out, out


def test_a_job_that_keeps_meeting_its_limit_stops_after_max_requeues(
    runner: Any, workdir: Path
) -> None:
    """Each attempt stops after the warning (exit 1): requeued once (max_requeues=1),
    then FAILED with cause time_limit."""
    script = (
        "trap 'echo \"stopped on attempt $TORCHX_ATTEMPT\"; exit 1' USR1; "
        "for i in $(seq 110); do sleep 1; done"
    )
    handle = runner.run(_app(script), "slurm", {**WARNED, "max_requeues": 1})
    waiting = _pending_again(runner, handle)
    assert "the last one ended: TIMEOUT" in waiting.msg, waiting
    final = _finish(runner, handle, timeout=150)
    assert (final.state, final.num_restarts) == (AppState.FAILED, 1), final
    assert final.failure is not None and final.failure.cause == "time_limit", final
    assert [(a.attempt, a.state, a.cause) for a in final.attempts] == [
        (0, AppState.FAILED, "time_limit"),  # requeued after the warning
        (1, AppState.FAILED, "time_limit"),  # not requeued: max_requeues spent
    ], final.attempts
    assert final.failure.message == (
        "stopped at the time limit's warning with every requeue spent (max_requeues=1):"
        " raise the `time` run option, or max_requeues"
    ), final.failure.message
    assert _log(runner, handle).splitlines() == [
        "stopped on attempt 0",
        "=== torchx: attempt 1 ===",
        "stopped on attempt 1",
    ]
