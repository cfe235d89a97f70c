"""The keeper of one replica's command on Ray. The replica's actor starts it, and it
detaches at once and starts the command itself, so that nothing about the command hangs
on the actor, which Ray may kill at any moment (``ray.kill``, its worker lost, its
node's memory monitor):

* it copies the command's stdout and stderr into the actor's log files, each line
  prefixed by its UTC time (what ``torchx log --since/--until`` filters on); no line the
  command wrote is lost with its actor, even one written the instant before;
* the command runs in a process group of its own, which the keeper ends (SIGTERM, up to
  ``grace`` seconds, SIGKILL) when the command exits (what it left in the background
  goes with it) and when the actor lets go of the ``hold`` pipe (the replica is stopped,
  the actor is gone). Nothing the replica started outlives it;
* once the output is copied, it reports the command's exit status to the actor.

The driver ships this file's text with every job (TorchX is not installed in the cluster)
and the actor runs it as ``python -I -c TEXT GRACE REPORT_FD ARGV...`` in the command's
environment: stdin is the read end of the hold pipe, stdout and stderr are the actor's
log files, ``REPORT_FD`` the write end of the pipe on which it writes ``exit CODE``.
Standard library only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone

NOT_STARTED = 127  # a shell's status for a command it cannot run


def stamp() -> bytes:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ ").encode()


def _write_all(fd: int, data: bytes) -> bool:
    while data:
        try:
            data = data[os.write(fd, data) :]
        except OSError:  # the log file is gone or full: the pipe is still drained
            return False
    return True


def copy(source: int, sink: int) -> None:
    """Copies the pipe ``source`` to ``sink`` to its end, line by line, each line stamped."""
    writable = True
    with open(source, "rb") as lines:
        for line in iter(lines.readline, b""):
            writable = writable and _write_all(sink, stamp() + line)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except OSError:
        return False
    return True


def end_group(pgid: int, grace: float) -> None:
    """SIGTERM to the group, up to ``grace`` seconds for all of it to go, then SIGKILL."""
    deadline = time.monotonic() + grace
    alive = _signal_group(pgid, signal.SIGTERM)
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = _signal_group(pgid, 0)
    if alive:
        _signal_group(pgid, signal.SIGKILL)


def _start(argv: list[str]) -> subprocess.Popen[bytes] | None:
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own group, which end_group ends whole
        )
    except OSError as e:
        _write_all(sys.stderr.fileno(), stamp() + f"cannot start {argv[0]!r}: {e}\n".encode())
        return None


def keep(argv: list[str], grace: float, hold: int) -> int:
    """Runs ``argv`` as described above; returns its exit status once its output is copied.

    A process that left the group (``setsid``) and still holds the command's output is
    not waited for beyond ``grace`` once the group has ended: the replica ends."""
    proc = _start(argv)
    if proc is None:
        return NOT_STARTED
    assert proc.stdout is not None and proc.stderr is not None
    copiers = [
        threading.Thread(target=copy, args=(proc.stdout.fileno(), 1), daemon=True),
        threading.Thread(target=copy, args=(proc.stderr.fileno(), 2), daemon=True),
    ]

    def on_release() -> None:
        while os.read(hold, 4096):
            pass
        end_group(proc.pid, grace)

    for thread in [*copiers, threading.Thread(target=on_release, daemon=True)]:
        thread.start()
    code = proc.wait()
    end_group(proc.pid, grace)  # what it left in the background
    deadline = time.monotonic() + grace
    for copier in copiers:
        copier.join(max(0.0, deadline - time.monotonic()))
    return code


def main(argv: list[str]) -> None:
    grace, report_fd, command = float(argv[1]), int(argv[2]), argv[3:]
    os.set_inheritable(report_fd, False)
    if os.fork():  # the actor waits for this first process only: the keeper detaches
        os._exit(0)
    code = keep(command, grace, sys.stdin.fileno())
    os.write(report_fd, f"exit {code}\n".encode())
    os._exit(0)  # not waiting for a copier stuck on a pipe held outside the group


if __name__ == "__main__":
    main(sys.argv)
