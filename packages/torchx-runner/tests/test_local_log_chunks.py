"""local_cwd logs as raw blocks of whole lines (``LogLines.raw_chunks``), real processes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from torchx.schedulers.local_scheduler import LocalScheduler, create_scheduler
from torchx.schedulers.shared.log_files import LogLines
from torchx.specs.api import AppDef, AppState, Role


@pytest.fixture
def sched(home: Path) -> LocalScheduler:
    return create_scheduler("chunks")


def _wait(sched: LocalScheduler, app_id: str) -> None:
    while (desc := sched.describe(app_id)) is not None and not desc.state.name.endswith("ED"):
        sched.wait_for_change(app_id, 30)


def _sh(script: str) -> AppDef:
    return AppDef("c", [Role("sh", image="x", entrypoint="sh", args=["-c", script])])


def test_lines_and_raw_chunks_hold_the_same_log(sched: LocalScheduler) -> None:
    # 600 lines of up to 300 KB each: many lines span several 64 KiB read blocks
    script = (
        "i=0; while [ $i -lt 600 ]; do head -c $((i * 500)) /dev/zero | tr '\\0' y; echo;"
        " i=$((i+1)); done; printf end"
    )
    app_id = sched.submit(_sh(script), {})
    _wait(sched, app_id)
    lines = sched.log_iter(app_id, "sh")
    assert isinstance(lines, LogLines)
    chunks = list(lines.raw_chunks())
    assert all(chunk.endswith(b"\n") for chunk in chunks[:-1])
    assert b"".join(chunks).decode() == "".join(lines)
    followed = sched.log_iter(app_id, "sh", should_tail=True)
    assert b"".join(followed.raw_chunks()) == b"".join(chunks)  # type: ignore[attr-defined]


def test_followed_chunks_hold_back_a_partial_line_until_it_ends(sched: LocalScheduler) -> None:
    script = "printf 'one\\ntw'; while [ ! -e go ]; do sleep 0.01; done; printf 'o\\nthree'"
    app_id = sched.submit(_sh(script), {})
    chunks = sched.log_iter(app_id, "sh", should_tail=True).raw_chunks()  # type: ignore[attr-defined]
    assert next(chunks) == b"one\n"
    Path("go").touch()
    assert list(chunks) == [b"two\n", b"three"]
    assert sched.describe(app_id).state == AppState.SUCCEEDED  # type: ignore[union-attr]


def test_regex_filtered_logs_are_plain_lines(sched: LocalScheduler) -> None:
    app_id = sched.submit(_sh("printf 'a1\\nb2\\na3\\n'"), {})
    _wait(sched, app_id)
    lines = sched.log_iter(app_id, "sh", regex="^a")
    assert not hasattr(lines, "raw_chunks")
    assert list(lines) == ["a1\n", "a3\n"]


def test_a_fast_printer_gets_a_bigger_pipe(sched: LocalScheduler) -> None:
    """The supervisor grows a pipe it finds full, so it wakes once per MiB, not per 64 KiB."""
    code = (
        "import fcntl, sys, time\n"
        "sys.stdout.buffer.write((b'x' * 99 + b'\\n') * 3000)\n"
        "sys.stdout.flush()\n"
        "deadline = time.monotonic() + 60\n"
        "while fcntl.fcntl(1, fcntl.F_GETPIPE_SZ) < 1 << 20 and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "print('pipe', fcntl.fcntl(1, fcntl.F_GETPIPE_SZ))\n"
    )
    role = Role("py", image="x", entrypoint=sys.executable, args=["-c", code])
    app_id = sched.submit(AppDef("big", [role]), {})
    _wait(sched, app_id)
    assert list(sched.log_iter(app_id, "py"))[-1] == f"pipe {1 << 20}\n"
