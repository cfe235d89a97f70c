"""Why a job failed on aws_batch, through moto's emulator (real boto3, the job's container
in a real Docker daemon): the root cause ``status --json`` names.

moto runs a job's container and records its exit code and log; it does not emulate an
OOM kill, an image pull failure or a lost host (it reports none of Batch's reasons for
them): those are checked on AWS-shaped answers in
packages/torchx-sched-batch/tests/test_batch_failure.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from torchx_testsupport.docker import IMAGE

TORCHX = str(Path(sys.executable).parent / "torchx")


def _status_after_run(queue: str, script: str, cwd: Path) -> dict[str, Any]:
    def torchx(*args: str) -> Any:
        return subprocess.run(
            [TORCHX, *args], cwd=cwd, env=dict(os.environ), capture_output=True, text=True,
            timeout=180,
        )  # fmt: skip

    run = torchx(
        "run", "--wait", "-s", "aws_batch", "-cfg", f"queue={queue}", "--workspace", "",
        "utils.sh", "--image", IMAGE, "--memMB", "128", "sh", "-c", script,
    )  # fmt: skip
    (handle,) = [line for line in run.stdout.splitlines() if line.startswith("aws_batch://")]
    status = json.loads(torchx("status", "--json", handle).stdout)
    return dict(status)


def test_an_exception_is_named_with_its_message_and_log_tail(
    batch_queue: str, tmp_path: Path
) -> None:
    script = "echo loading; python -c 'raise RuntimeError(\"boom\")'"
    status = _status_after_run(batch_queue, script, tmp_path)
    failure = status["failure"]
    assert status["state"] == "FAILED" and failure is not None, status
    assert (failure["replica_id"], failure["cause"]) == (0, "exception")
    assert failure["message"] == "RuntimeError: boom"
    assert failure["log_tail"][0] == "loading" and failure["log_tail"][-1] == "RuntimeError: boom"


def test_an_exit_code_and_a_signal(batch_queue: str, tmp_path: Path) -> None:
    exited = _status_after_run(batch_queue, "echo bye; exit 3", tmp_path)["failure"]
    assert (exited["cause"], exited["exit_code"], exited["log_tail"]) == ("exit_code", 3, ["bye"])
    kill = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    killed = _status_after_run(batch_queue, f"python -c '{kill}'; exit $?", tmp_path)["failure"]
    assert (killed["cause"], killed["signal"]) == ("signal", "SIGKILL"), killed


def test_a_succeeded_job_has_no_failure(batch_queue: str, tmp_path: Path) -> None:
    status = _status_after_run(batch_queue, "echo fine", tmp_path)
    assert (status["state"], status["failure"]) == ("SUCCEEDED", None)
    # moto records createdAt, startedAt and stoppedAt as Batch does: the timeline's ends
    phases = [p["phase"] for p in status["timeline"]]
    assert phases[0] == "submitted" and phases[-2:] == ["running", "finished"], phases
    assert status["waiting"] is None
