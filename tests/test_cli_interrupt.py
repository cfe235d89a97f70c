"""Ctrl-C on a waiting ``torchx run`` of a local app cancels the app (upstream behaviour)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from torchx.runner import get_runner
from torchx.specs import AppState


def _torchx() -> str:
    return str(Path(sys.executable).parent / "torchx")


def test_sigint_cancels_the_local_app(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [_torchx(), "run", "-s", "local_cwd", "utils.sh", "sleep", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=os.environ.copy(),
    )
    assert proc.stdout is not None
    handle = proc.stdout.readline().strip()  # printed once the app is submitted
    assert handle.startswith("local_cwd://"), handle
    with get_runner() as runner:
        status = runner.status(handle)
        assert status is not None and status.state == AppState.RUNNING
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert f"cancelled {handle}" in err
        assert "Traceback" not in err
        final = runner.wait(handle, wait_interval=1)
    assert final is not None and final.state == AppState.CANCELLED
