"""Root causes as a user reads them, on every backend (the ``backend`` fixture)."""

from __future__ import annotations

import json

import pytest
from torchx_testsupport.backends import Backend


def test_the_log_under_a_root_cause_holds_both_streams(backend: Backend) -> None:
    script = "echo step 1; python3 -c 'raise ValueError(\"bad batch\")'"
    run = backend.run("--wait", "utils.sh", *backend.image_args, "--", "sh", "-c", script)
    assert run.returncode != 0
    handle = run.stdout.split()[0]
    failure = json.loads(backend.torchx("status", "--json", handle).stdout)["failure"]
    tail = [line.split("Z ", 1)[-1] for line in failure["log_tail"]]  # k8s: timestamps
    assert "step 1" in tail, failure  # stdout's line, beside stderr's traceback
    assert tail[-1] == "ValueError: bad batch", failure
    assert (failure["cause"], failure["message"]) == ("exception", "ValueError: bad batch")


def test_sigkill_is_said_once_with_its_usual_sender(backend: Backend) -> None:
    if backend.name in ("kubernetes", "aws_batch"):
        pytest.skip(
            "a container's PID 1 cannot be SIGKILLed from inside it; on Kubernetes the"
            " kernel's OOM killer (outside) sends it (tests/k8s/test_k8s_failure.py), on"
            " Batch a child's exit 137 is read as SIGKILL (tests/batch/test_batch_failure.py)"
        )
    run = backend.run("--wait", "utils.sh", *backend.image_args, "--", "sh", "-c", "kill -9 $$$$")
    assert run.returncode != 0
    handle = run.stdout.split()[0]
    block = backend.torchx("status", handle).stdout.split("Root cause:", 1)[1]
    assert block.count("SIGKILL") == 1, block
    assert "killed by SIGKILL (often the out-of-memory killer)" in block, block
