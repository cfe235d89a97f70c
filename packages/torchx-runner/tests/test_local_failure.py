"""Why a local_cwd app failed: the root cause named from real processes (issue: "Why did
it fail"). The exit code or signal, the last Python traceback of the log, torchrun's root
cause block (the failed rank), the first observed failure among replicas."""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchx.runner import get_runner
from torchx.specs import AppDef, AppState, Role


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key in list(os.environ):
        if key.startswith("TORCHX"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    with get_runner() as r:
        yield r


def _sh(name: str, script: str, replicas: int = 1) -> Role:
    return Role(name, image=".", entrypoint="sh", args=["-c", script], num_replicas=replicas)


def _wait(runner: Any, app: AppDef) -> Any:
    handle = runner.run(app, "local_cwd")
    status = runner.wait(handle, wait_interval=30)
    assert status is not None
    return status


def test_a_python_exception_is_named_with_its_message_and_log_tail(runner: Any) -> None:
    script = "print('step 1'); raise RuntimeError('boom')"
    role = Role("train", image=".", entrypoint=sys.executable, args=["-c", script])
    status = _wait(runner, AppDef("exc", [role]))
    assert status.state == AppState.FAILED
    failure = status.failure.to_json()
    assert (failure["role"], failure["replica_id"], failure["rank"]) == ("train", 0, None)
    assert (failure["cause"], failure["exit_code"], failure["signal"]) == ("exception", 1, None)
    assert failure["message"] == "RuntimeError: boom"
    assert failure["traceback"].startswith("Traceback (most recent call last):")
    assert failure["log_tail"][0] == "step 1" and failure["log_tail"][-1] == "RuntimeError: boom"
    assert isinstance(failure["time"], float)
    text = status.format()
    assert "\n    Root cause: train[0]: a Python exception\n        RuntimeError: boom\n" in text, (
        text
    )


def test_the_replica_that_failed_first_is_the_root_cause(runner: Any) -> None:
    """Replica 1 fails at once; replica 0 fails a moment later (as a replica the first
    failure took down would)."""
    from torchx.specs import macros

    script = 'if [ "$WHO" = 1 ]; then echo first; exit 3; fi; sleep 1; echo later; exit 4'
    role = _sh("w", script, replicas=2)
    role.env = {"WHO": macros.replica_id}
    status = _wait(runner, AppDef("two", [role]))
    failure = status.failure.to_json()
    assert (failure["replica_id"], failure["cause"], failure["exit_code"]) == (1, "exit_code", 3)
    assert failure["message"] == "exited with code 3"
    assert failure["log_tail"] == ["first"]


def test_a_kill_9_is_a_signal(runner: Any) -> None:
    code = "import os, signal; print('going', flush=True); os.kill(os.getpid(), signal.SIGKILL)"
    role = Role("w", image=".", entrypoint=sys.executable, args=["-c", code])
    status = _wait(runner, AppDef("killed", [role]))
    failure = status.failure.to_json()
    assert (failure["cause"], failure["signal"], failure["exit_code"]) == (
        "signal",
        "SIGKILL",
        None,
    )
    assert failure["message"] == "killed by SIGKILL"
    block = status.format().split("Root cause:", 1)[1]
    assert block.count("SIGKILL") == 1, block  # said once, with what usually sends it
    assert block.startswith(" w[0]: killed by SIGKILL (often the out-of-memory killer)\n")


def test_a_succeeded_app_has_no_failure(runner: Any) -> None:
    status = _wait(runner, AppDef("ok", [_sh("w", "echo fine")]))
    assert status.state == AppState.SUCCEEDED
    assert status.failure is None and status.to_json()["failure"] is None
    assert "Root cause" not in status.format() and "failure" not in repr(status)


@pytest.mark.slow
def test_the_failed_rank_of_torchrun_is_named(runner: Any, tmp_path: Path) -> None:
    assert importlib.util.find_spec("torch"), "this test needs torch: pip install torch (CPU)"
    (tmp_path / "train.py").write_text(
        textwrap.dedent(
            """\
            import os, time
            if os.environ["RANK"] == "1":
                raise ValueError("rank one broke")
            time.sleep(30)
            """
        )
    )
    handle = runner.run_component("dist.ddp", ["-j", "1x2", "--script", "train.py"], "local_cwd")
    status = runner.wait(handle, wait_interval=30)
    assert status is not None and status.state == AppState.FAILED
    failure = status.failure.to_json()
    assert failure["rank"] == 1, failure
    assert failure["message"] == "ValueError: rank one broke", failure


def test_the_timeline_of_an_app_in_order(runner: Any) -> None:
    """local_cwd queues nothing: submitted, starting (the supervisor starts the replicas),
    running from the first replica's start, finished when the last ended."""
    status = _wait(runner, AppDef("timed", [_sh("a", "sleep 0.3", replicas=2)]))
    assert status.state == AppState.SUCCEEDED
    phases = status.timeline
    assert [p.phase for p in phases] == ["submitted", "starting", "running", "finished"]
    for before, after in itertools.pairwise(phases):
        assert before.end is not None and before.end <= after.start + 1e-6
    assert phases[2].end - phases[2].start >= 0.3
    assert status.waiting is None
    assert "Started after 0s: starting 0s" in status.format()
