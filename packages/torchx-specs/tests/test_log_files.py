"""The shared log-file follower: whole lines, follows while the app runs, stops after."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from torchx_testsupport import StandInApp

from torchx.schedulers.shared.log_files import LogIterator, follow_files, follow_lines, read_lines


def test_follows_a_growing_file_until_the_app_ends(tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    app = StandInApp()
    written = threading.Event()

    def writer() -> None:
        with open(log, "w") as f:
            f.write("one\ntw")
            f.flush()
            written.wait(5)
            f.write("o\nthree")
        app.finish()

    lines = follow_lines(app, "app", str(log))
    thread = threading.Thread(target=writer)
    thread.start()
    assert next(lines) == "one\n"  # the partial "tw" is held back while the app runs
    written.set()
    assert list(lines) == ["two\n", "three"]
    thread.join()


def test_log_iterator_without_tail_reads_what_is_there(tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    app = StandInApp()
    assert list(LogIterator("app", str(log), app, should_tail=False)) == []
    log.write_text("a\nb\n")
    assert list(LogIterator("app", str(log), app, should_tail=False)) == ["a\n", "b\n"]
    assert list(read_lines(str(log), regex="b")) == ["b\n"]


def test_a_finished_app_without_its_file_is_an_error(tmp_path: Path) -> None:
    app = StandInApp()
    app.finish()
    with pytest.raises(RuntimeError, match="without writing its log file"):
        list(LogIterator("app", str(tmp_path / "never.log"), app))


def test_follow_files_reads_both_streams_until_the_app_ends(tmp_path: Path) -> None:
    out, err = tmp_path / "r.out", tmp_path / "r.err"
    app = StandInApp()
    got: list[str] = []
    reader = threading.Thread(
        target=lambda: got.extend(follow_files(app, "a", [str(out), str(err)], True))
    )
    reader.start()
    out.write_text("first\npart")  # err does not exist yet: it counts as empty
    err.write_text("oops\n")
    with out.open("a") as f:
        f.write("ial\nlast without newline")
    app.finish()
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert sorted(got) == ["first\n", "last without newline", "oops\n", "partial\n"]
    # not tailing: what is there now, at once
    assert sorted(follow_files(app, "a", [str(out), str(err)], False)) == sorted(got)


def test_an_endless_line_is_split_not_held(tmp_path: Path) -> None:
    """A program printing 5 MiB without a newline: every reader hands it on in 1 MiB pieces
    ending in the split mark (the CLI held 1.58 GB for a 400 MB line)."""
    from torchx.schedulers.api import LINE_SPLIT_MARK, MAX_LINE_BYTES, whole_lines
    from torchx.schedulers.shared.log_files import read_chunks

    log = tmp_path / "out.log"
    log.write_bytes(b"x" * (5 * MAX_LINE_BYTES + 10) + b"\nnext\n")
    chunks = list(read_chunks(str(log)))
    assert max(map(len, chunks)) <= MAX_LINE_BYTES + len(LINE_SPLIT_MARK) + (1 << 16)
    assert b"".join(chunks).count(LINE_SPLIT_MARK) == 5
    assert b"".join(chunks).replace(LINE_SPLIT_MARK, b"") == log.read_bytes()
    streamed = list(whole_lines(iter([b"y" * 3_000_000, b"y\nz\n"])))
    assert [len(line) for line in streamed] == [
        MAX_LINE_BYTES + len(LINE_SPLIT_MARK),
        MAX_LINE_BYTES + len(LINE_SPLIT_MARK),
        3_000_001 - 2 * MAX_LINE_BYTES + 1,
        2,
    ]
