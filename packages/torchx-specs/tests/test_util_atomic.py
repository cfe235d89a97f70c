"""Private atomic writes: other users never read torchx state, readers never see a torn file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from torchx.util.support.atomic import try_write_private, write_private


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_creates_private_parents_and_file(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "state.json"
    write_private(str(target), b"{}")
    assert target.read_bytes() == b"{}"
    assert _mode(target) == 0o600
    assert _mode(tmp_path / "a") == 0o700
    assert _mode(tmp_path / "a" / "b") == 0o700


def test_replaces_whole_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "cache"
    write_private(str(target), b"x" * 100_000)
    write_private(str(target), b"short")
    assert target.read_bytes() == b"short"
    assert os.listdir(tmp_path) == ["cache"]


def test_try_write_reports_failure_when_parent_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    assert try_write_private(str(blocker / "cache"), b"data") is False
    assert try_write_private(str(tmp_path / "ok"), b"data") is True
