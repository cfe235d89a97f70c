"""Processes on this machine, for tests that check nothing outlives a job."""

from __future__ import annotations

from pathlib import Path

from torchx_testsupport import wait_until


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a zombie no longer runs: it only waits
    for its parent, perhaps an init that never reaps, to read its status). Read from
    ``/proc`` here, not through the runner: package suites that use it install no runner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    state = stat[stat.rfind(b")") + 2 :][:1]  # the name may hold ")": the state follows the last
    return state not in (b"", b"Z")


def pid_from(path: Path, timeout: float) -> int:
    """The pid a replica wrote to ``path`` (atomically, by rename), once it is there."""
    wait_until(path.exists, f"{path} to appear", timeout)
    return int(path.read_text())


def concurrent_handles(
    argv: list[str], count: int, cwd: Path | None = None, timeout: float = 180
) -> set[str]:
    """Starts ``count`` copies of the command ``argv`` (a ``torchx run``) at once, waits for
    each to exit 0, and returns the handles they printed (the first stdout line that looks
    like one: ``SCHEDULER://...``)."""
    import os
    import subprocess

    procs = [
        subprocess.Popen(
            argv,
            cwd=cwd,
            env={**os.environ},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    handles = set()
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, err
        handles.add(next(line for line in out.splitlines() if "://" in line))
    return handles
