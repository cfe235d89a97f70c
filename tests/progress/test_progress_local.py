"""How far an app is on local_cwd, through the CLI a user types: ``torchx status`` (text
and ``--json``) and ``torchx list --progress`` while it runs, and the last report once it
ended (written by the exit flush)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from torchx_testsupport.progress import python_reporter

TORCHX = str(Path(sys.executable).parent / "torchx")


def _torchx(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TORCHX_HOME": str(home)}
    return subprocess.run(
        [TORCHX, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def test_status_and_list_show_a_running_apps_progress(tmp_path: Path) -> None:
    home = tmp_path / "home"
    # on local_cwd `torchx run` stays with the app (its log) until it ends
    run = subprocess.Popen(
        [TORCHX, "run", "utils.sh", "sh", "-c", python_reporter(sys.executable)],
        cwd=tmp_path, env={**os.environ, "TORCHX_HOME": str(home)},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert run.stdout is not None
    handle = run.stdout.readline().strip()
    assert handle.startswith("local_cwd://"), handle
    try:
        deadline = time.monotonic() + 60
        progress = None
        while time.monotonic() < deadline:
            status = _torchx("status", "--json", handle, cwd=tmp_path, home=home)
            progress = json.loads(status.stdout)["progress"]
            if progress is not None and progress["step"] == 3:
                break
            time.sleep(0.25)
        assert progress is not None and progress["step"] == 3, progress
        assert (progress["total"], progress["fraction"]) == (4, 0.75)
        assert progress["metrics"] == {"loss": 0.33}
        assert (progress["role"], progress["replica_id"]) == ("sh", 0)
        assert progress["eta_s"] is not None and progress["eta_s"] >= 0

        text = _torchx("status", handle, cwd=tmp_path, home=home).stdout
        line = next(line.strip() for line in text.splitlines() if "Progress:" in line)
        assert line.startswith("Progress: 75% (3/4), ETA ") and "loss=0.33" in line, line

        listed = _torchx("list", "--progress", cwd=tmp_path, home=home).stdout
        assert "PROGRESS" in listed.splitlines()[0], listed
        row = next(r for r in listed.splitlines() if r.startswith(handle))
        assert "75% (3/4)" in row, listed
        rows = json.loads(_torchx("list", "--json", "--progress", cwd=tmp_path, home=home).stdout)
        (mine,) = [r for r in rows if r["app_handle"] == handle]
        assert mine["progress"]["step"] == 3
        assert "PROGRESS" not in _torchx("list", cwd=tmp_path, home=home).stdout  # not asked
    finally:
        _torchx("cancel", handle, cwd=tmp_path, home=home)
        run.communicate(timeout=60)


def test_the_exit_writes_the_last_report(tmp_path: Path) -> None:
    """The default throttle (5 s) holds steps 2..100 back; the exit writes step 100."""
    code = "import torchx.progress as p\nfor i in range(1, 101):\n    p.report(i, total=100)\n"
    script = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    home = tmp_path / "home"
    run = _torchx("run", "--wait", "utils.sh", "sh", "-c", script, cwd=tmp_path, home=home)
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[0]
    status = json.loads(_torchx("status", "--json", handle, cwd=tmp_path, home=home).stdout)
    assert status["state"] == "SUCCEEDED"
    assert (status["progress"]["step"], status["progress"]["fraction"]) == (100, 1.0)
    assert status["progress"]["eta_s"] is None  # it ended
