"""The helper apps behind utils.copy / utils.booth and the result tracker they use,
run for real through the local_cwd scheduler."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx.apps.utils import booth_main, copy_main
from torchx.runner import Runner, get_runner
from torchx.runtime.tracking import FsspecResultTracker
from torchx.specs import AppState


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runner]:
    """A runner whose jobs find this interpreter as ``python``."""
    for key in list(os.environ):
        if key.startswith("TORCHX"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "torchx_home"))
    bin_dir = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.chdir(tmp_path)
    with get_runner() as r:
        yield r


def test_result_tracker_roundtrip(tmp_path: Path) -> None:
    tracker = FsspecResultTracker(str(tmp_path / "results"))
    assert tracker[0] == {}
    tracker[0] = {"loss": 0.25}
    tracker.put("best", loss=0.1, epoch=3)
    again = FsspecResultTracker(str(tmp_path / "results"))
    assert again[0] == {"loss": 0.25}
    assert again.get("best") == {"loss": 0.1, "epoch": 3}
    tracker[0] = {"loss": 0.2}
    assert again[0] == {"loss": 0.2}


def test_booth_function() -> None:
    assert booth_main.booth(1, 3) == 0
    assert booth_main.booth(0, 0) == 74


def test_copy_within_and_across_filesystems(tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 1000)
    copy_main.main(["--src", str(src), "--dst", str(tmp_path / "a" / "b" / "dst.bin")])
    assert (tmp_path / "a" / "b" / "dst.bin").read_bytes() == src.read_bytes()
    copy_main.copy(str(src), "memory://copied/dst.bin", bufsize=1000)
    copy_main.copy("memory://copied/dst.bin", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()
    with pytest.raises(FileNotFoundError, match="is not a file"):
        copy_main.copy(str(tmp_path), str(tmp_path / "x"))


def test_utils_copy_runs_on_local_cwd(runner: Runner, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("payload\n")
    handle = runner.run_component(
        "utils.copy",
        ["--src", str(tmp_path / "in.txt"), "--dst", str(tmp_path / "out" / "copy.txt")],
        "local_cwd",
    )
    status = runner.wait(handle, wait_interval=5)
    assert status is not None and status.state == AppState.SUCCEEDED, status
    assert (tmp_path / "out" / "copy.txt").read_text() == "payload\n"


def test_utils_booth_runs_on_local_cwd(runner: Runner, tmp_path: Path) -> None:
    base = str(tmp_path / "booth")
    handle = runner.run_component(
        "utils.booth",
        ["--x1", "1", "--x2", "2", "--trial_idx", "7", "--tracker_base", base],
        "local_cwd",
    )
    status = runner.wait(handle, wait_interval=5)
    assert status is not None and status.state == AppState.SUCCEEDED, status
    assert FsspecResultTracker(base)[7] == {"booth_eval": 5.0}
    assert "".join(runner.log_lines(handle, "torchx-utils-booth")) == "booth(1.0, 2.0) = 5.0\n"
