"""A one-off command whose service is not running answers soon, in one warning and one
error line: the retries that ride out a restart are for services that answered before."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

TORCHX = str(Path(sys.executable).parent / "torchx")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens


def test_status_with_no_dashboard_running_answers_within_seconds(tmp_path: Path) -> None:
    port = _closed_port()
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHX_RETRY_S", "RAY_ADDRESS")}
    env["TORCHX_HOME"] = str(tmp_path / "home")
    started = time.monotonic()
    proc = subprocess.run(
        [TORCHX, "status", f"ray://torchx/127.0.0.1:{port}-echo-x1"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0
    warnings = [line for line in lines if "WARNING" in line]
    assert len(warnings) <= 1 and "retrying for up to 4 s" in warnings[0], lines
    assert lines[-1].startswith("torchx: error: cannot reach the Ray dashboard")
    assert f"127.0.0.1:{port} (from the app id: connection refused)" in lines[-1]
    assert "over 4 s" in lines[-1] and "Traceback" not in proc.stderr
    assert elapsed < 12, elapsed  # was 15 s of retries before the first answer
