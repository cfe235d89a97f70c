"""Exactly-once submission and attempts on local_cwd, through the CLI a retrying
automation calls: ``torchx run --idempotency-key KEY``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from torchx_testsupport.processes import concurrent_handles

from torchx.runner import get_runner
from torchx.specs import AppDef, AppState, Role

TORCHX = str(Path(sys.executable).parent / "torchx")


def _env() -> dict[str, str]:
    return {**os.environ, "LOGLEVEL": "WARNING"}


def _run(key: str, *component: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TORCHX, "run", "--idempotency-key", key, "-s", "local_cwd", *component],
        cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _apps(cwd: Path) -> list[dict[str, object]]:
    out = subprocess.run(
        [TORCHX, "list", "-s", "local_cwd", "--json"],
        cwd=cwd, env=_env(), capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    apps: list[dict[str, object]] = json.loads(out)
    return apps


def test_a_second_run_with_the_key_returns_the_first_handle(tmp_path: Path) -> None:
    first = _run("nightly-42", "utils.sh", "sh", "-c", "echo run=$TORCHX_RUN_ID", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    handle = first.stdout.splitlines()[0]
    assert "sh/0 run=nightly-42" in first.stderr  # the key is the run's identity
    again = _run("nightly-42", "utils.sh", "sh", "-c", "echo run=$TORCHX_RUN_ID", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, f"{handle}\n"), again
    # the run follows the found app as it would its own: its log, then its end
    line, *logged, end = again.stderr.splitlines()
    assert logged == ["sh/0 run=nightly-42"]
    assert end == f"torchx: app {handle} finished SUCCEEDED"
    assert line.endswith(
        f"an app with idempotency key 'nightly-42' exists already on local_cwd: {handle}"
        " (SUCCEEDED); nothing was submitted"
    ), line
    assert [a["app_handle"] for a in _apps(tmp_path)] == [handle]
    other = _run("nightly-43", "utils.sh", "true", cwd=tmp_path)
    assert other.returncode == 0 and other.stdout.splitlines()[0] != handle


def test_a_run_killed_after_the_app_started_is_found_by_the_retry(tmp_path: Path) -> None:
    """The launching process dies once the app exists (as a dropped connection would
    leave it): the retried run finds the app instead of starting a second one."""
    proc = subprocess.Popen(
        [TORCHX, "run", "--idempotency-key", "k1", "-s", "local_cwd", "utils.sh",
         "sh", "-c", "echo started; sleep 30"],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    handle = proc.stdout.readline().strip()
    assert proc.stderr.readline() == "sh/0 started\n"  # the app runs (its log: stderr)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    retried = _run("k1", "utils.sh", "sh", "-c", "echo started; sleep 30", cwd=tmp_path)
    assert (retried.returncode, retried.stdout) == (0, f"{handle}\n"), retried
    assert [a["app_handle"] for a in _apps(tmp_path)] == [handle]
    subprocess.run([TORCHX, "cancel", handle], env=_env(), check=True, timeout=60)


def test_concurrent_runs_with_one_key_submit_once(tmp_path: Path) -> None:
    handles = concurrent_handles(
        [
            TORCHX,
            "run",
            "--idempotency-key",
            "together",
            "-s",
            "local_cwd",
            "utils.sh",
            "echo",
            "hi",
        ],
        4,
        cwd=tmp_path,
    )
    assert len(handles) == 1
    assert [a["app_handle"] for a in _apps(tmp_path)] == list(handles)


def test_a_retried_app_shows_both_attempts_with_one_run_id(tmp_path: Path) -> None:
    out = tmp_path / "ids"
    script = f'echo "$TORCHX_ATTEMPT $TORCHX_RUN_ID" >> {out}; [ "$TORCHX_ATTEMPT" = 1 ] || exit 3'
    role = Role("r", image=str(tmp_path), entrypoint="sh", args=["-c", script], max_retries=1)
    with get_runner() as runner:
        handle = runner.run(AppDef("retried", [role]), "local_cwd", idempotency_key="retry-1")
        status = runner.wait(handle, wait_interval=0.1)
        assert status is not None and status.state == AppState.SUCCEEDED, status
        first, last = status.attempts
        assert (first.attempt, first.state, first.cause, first.exit_code) == (
            0, AppState.FAILED, "exit_code", 3
        )  # fmt: skip
        assert (last.attempt, last.state, last.exit_code) == (1, AppState.SUCCEEDED, None)
        assert first.start is not None and first.end is not None
        assert last.start is not None and last.start >= first.end
        assert status.to_json()["attempts"][0]["state"] == "FAILED"
    assert out.read_text().splitlines() == ["0 retry-1", "1 retry-1"]


def test_a_bad_key_is_one_line(tmp_path: Path) -> None:
    proc = _run("two\nlines", "utils.sh", "true", cwd=tmp_path)
    assert proc.returncode != 0 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "torchx: error: the idempotency key holds a control character (a line break?);"
        " give printable text"
    ]
    assert _apps(tmp_path) == []


_HOLD_THE_KEY = """
import sys, time
from torchx.runner._idempotency import _key_lock
with _key_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(300)
"""


def test_a_run_waiting_on_a_held_key_says_who_holds_it_and_gives_up(tmp_path: Path) -> None:
    """The audit's run waited forever without a word: now it says which process holds the
    key's lock, and gives up after ``TORCHX_LOCK_WAIT_S`` with one line, submitting
    nothing."""
    from torchx_testsupport import one_error_line

    env = {**_env(), "TORCHX_HOME": str(tmp_path / "home"), "TORCHX_LOCK_WAIT_S": "1"}
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_THE_KEY, "held-key"], env=env, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        proc = subprocess.run(
            [TORCHX, "run", "--idempotency-key", "held-key", "-s", "local_cwd", "utils.sh", "true"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    line = one_error_line(proc, alone=False, no_stdout=True)
    assert "another run of idempotency key 'held-key' on this host is still submitting" in line
    assert f"pid {holder.pid} (" in line and "TORCHX_LOCK_WAIT_S" in line, line
    waiting = proc.stderr.splitlines()[0]
    assert "waiting for another run of idempotency key 'held-key'" in waiting, proc.stderr
    assert f"pid {holder.pid}" in waiting
    listed = subprocess.run(
        [TORCHX, "list", "-s", "local_cwd", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(listed.stdout) == []  # nothing was submitted


def test_a_locks_directory_that_is_a_link_is_refused(tmp_path: Path) -> None:
    from torchx_testsupport import one_error_line

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (tmp_path / "elsewhere").mkdir()
    (home / "locks").symlink_to(tmp_path / "elsewhere")
    env = {**_env(), "TORCHX_HOME": str(home)}
    proc = subprocess.run(
        [TORCHX, "run", "--idempotency-key", "k", "-s", "local_cwd", "utils.sh", "true"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    line = one_error_line(proc, no_stdout=True)
    assert f"{home / 'locks'} is a link" in line, line
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_found_app_says_its_state_and_a_local_run_exits_as_it_ended(tmp_path: Path) -> None:
    first = _run("failing-1", "utils.sh", "sh", "-c", "exit 3", cwd=tmp_path)
    assert first.returncode == 1
    handle = first.stdout.splitlines()[0]
    again = _run("failing-1", "utils.sh", "sh", "-c", "exit 3", cwd=tmp_path)
    assert again.returncode == 1, again  # as the run would have ended: the app FAILED
    assert again.stdout.splitlines()[0] == handle
    assert f"exists already on local_cwd: {handle} (FAILED); nothing was submitted" in again.stderr


def test_a_found_app_made_from_another_request_is_flagged(tmp_path: Path) -> None:
    first = _run("nightly-7", "utils.sh", "sh", "-c", "exit 3", cwd=tmp_path)
    handle = first.stdout.splitlines()[0]
    again = _run("nightly-7", "utils.echo", cwd=tmp_path)
    assert again.returncode == 1, again  # the found app's end, as before
    assert again.stdout.splitlines()[0] == handle
    assert (
        f"exists already on local_cwd: {handle} (FAILED); it was made by"
        " `utils.sh sh -c 'exit 3'`, this run asks for `utils.echo` (use another key to run"
        " it); nothing was submitted"
    ) in again.stderr, again.stderr
    same = _run("nightly-7", "utils.sh", "sh", "-c", "exit 3", cwd=tmp_path)
    assert f"{handle} (FAILED); nothing was submitted" in same.stderr, same.stderr
    assert [a["app_handle"] for a in _apps(tmp_path)] == [handle]
