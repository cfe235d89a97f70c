"""Whether a process on this machine is gone: for tests that check nothing outlives a job."""

from __future__ import annotations

import time
from pathlib import Path


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a zombie no longer runs: it only waits
    for its parent, perhaps an init that never reaps, to read its status)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone_within(pid: int, seconds: float) -> bool:
    """Waits up to ``seconds`` for ``pid`` to stop running; True if it did."""
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def pid_from(path: Path, seconds: float) -> int:
    """The pid a replica wrote to ``path`` (atomically, by rename), waiting up to
    ``seconds`` for it to appear."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)
    return int(path.read_text())
