"""Logs as raw blocks of whole lines (``raw_chunks``): same bytes as the lines, never split.

The app is a stand-in that only answers ``describe``; real local_cwd apps are covered in
torchx-runner's tests.
"""

from __future__ import annotations

import threading
from pathlib import Path

from torchx_testsupport import StandInApp

from torchx.schedulers.shared.log_files import LogIterator, follow_chunks, read_chunks


def test_read_chunks_end_at_line_ends(tmp_path: Path) -> None:
    path = tmp_path / "log"
    # lines longer than a read block, and a last line without its newline
    path.write_bytes(b"x" * 100_000 + b"\n" + b"y\n" * 50_000 + b"tail")
    chunks = list(read_chunks(str(path)))
    assert all(chunk.endswith(b"\n") for chunk in chunks[:-1])
    assert chunks[-1] == b"tail"
    assert b"".join(chunks) == path.read_bytes()


def test_follow_chunks_hold_back_a_partial_line_while_the_app_runs(tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    app = StandInApp()
    written = threading.Event()

    def writer() -> None:
        with open(log, "wb") as f:
            f.write(b"one\ntw")
            f.flush()
            written.wait(5)
            f.write(b"o\nthree")
        app.finish()

    chunks = follow_chunks(app, "app", str(log))
    thread = threading.Thread(target=writer)
    thread.start()
    assert next(chunks) == b"one\n"
    written.set()
    assert list(chunks) == [b"two\n", b"three"]
    thread.join()


def test_log_iterator_offers_raw_chunks(tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    app = StandInApp()
    assert list(LogIterator("app", str(log), app, should_tail=False).raw_chunks()) == []
    log.write_bytes(b"a\xff\nb\n")
    assert list(LogIterator("app", str(log), app, should_tail=False).raw_chunks()) == [
        b"a\xff\nb\n"
    ]
    app.finish()
    assert list(LogIterator("app", str(log), app).raw_chunks()) == [b"a\xff\nb\n"]
