"""The keeper of a replica's command (keeper.py), started as the Ray driver's actors start
it (``python -I -c TEXT ...``, which detaches at once), on real local processes: the
command's output is copied, stamped, to the log files whatever becomes of the process
that started the keeper (the actor); the command's whole group ends when the command
exits or that process lets go; the exit status is reported once the output is copied."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from torchx_testsupport import wait_until
from torchx_testsupport.processes import pid_from, running

from torchx.schedulers._ray import keeper

KEEPER_TEXT = Path(keeper.__file__).read_text()
STAMPED = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z (.*\n?)")


class Kept:
    """A command (a shell line, or an argv) started through the keeper; ``logs/out`` and
    ``logs/err`` stand for the actor's log files, ``hold`` for the actor's end of the hold
    pipe."""

    def __init__(self, command: str | list[str], logs: Path, grace: float = 10.0) -> None:
        self.logs = logs
        hold_read, self.hold = os.pipe()
        report_read, report_write = os.pipe()
        argv = [str(grace), str(report_write)]
        argv += ["sh", "-c", command] if isinstance(command, str) else command
        with open(logs / "out", "ab") as out, open(logs / "err", "ab") as err:
            subprocess.run(
                [sys.executable, "-I", "-c", KEEPER_TEXT, *argv],
                stdin=hold_read,
                stdout=out,
                stderr=err,
                pass_fds=(report_write,),
                start_new_session=True,
                check=True,
            )
        os.close(hold_read)
        os.close(report_write)
        self.report = open(report_read)  # noqa: SIM115 (read by exit_status)

    def let_go(self) -> None:
        """What the actor's death (or its stop) does."""
        os.close(self.hold)

    def exit_status(self) -> int:
        """The status the keeper reports (it reports once the output is copied)."""
        with self.report:
            kind, _, value = self.report.read().partition(" ")
        assert kind == "exit", f"the keeper reported {kind!r}"
        return int(value)

    def lines(self, name: str) -> list[bytes]:
        found = []
        for line in (self.logs / name).read_bytes().splitlines(keepends=True):
            match = STAMPED.fullmatch(line)
            assert match, f"an unstamped line in {name}: {line!r}"
            found.append(match.group(1))
        return found


def leave_running(pid_file: Path) -> str:
    """A shell line that starts a process in the background and writes its pid."""
    return f"sleep 300 & echo $! > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}"


def test_output_is_copied_stamped_and_the_status_reported_after_it(tmp_path: Path) -> None:
    kept = Kept("echo one; echo two >&2; printf 'no newline'; exit 3", tmp_path)
    assert kept.exit_status() == 3
    assert kept.lines("out") == [b"one\n", b"no newline"]
    assert kept.lines("err") == [b"two\n"]
    kept.let_go()


def test_what_the_command_leaves_running_ends_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "left.pid"
    kept = Kept(f"{leave_running(pid_file)}; echo done", tmp_path)
    left = pid_from(pid_file, 30)
    assert kept.exit_status() == 0  # reported although `sleep` held the output pipes
    wait_until(lambda: not running(left), f"pid {left} to end with its command", 30)
    assert kept.lines("out") == [b"done\n"]
    kept.let_go()


def test_every_line_is_kept_and_the_group_ends_when_the_actor_lets_go(tmp_path: Path) -> None:
    pid_file = tmp_path / "left.pid"
    many = "; ".join(f"echo line{i}" for i in range(200))
    kept = Kept(f"{many}; {leave_running(pid_file)}; exec sleep 300", tmp_path)
    left = pid_from(pid_file, 30)
    kept.let_go()  # as the actor's death does: nothing of it read the command's output
    assert kept.exit_status() == -signal.SIGTERM
    wait_until(lambda: not running(left), f"pid {left} to end with the replica", 30)
    assert kept.lines("out") == [f"line{i}\n".encode() for i in range(200)]


def test_a_group_deaf_to_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    kept = Kept("trap '' TERM; echo ready; while :; do sleep 0.05; done", tmp_path, 0.5)
    wait_until(lambda: kept.lines("out") == [b"ready\n"], "the command to start")
    kept.let_go()
    assert kept.exit_status() == -signal.SIGKILL


def test_a_process_escaping_the_group_does_not_hold_the_replica(tmp_path: Path) -> None:
    """It keeps the output pipes open, out of the group's reach: the status is reported
    once the grace is over (the escaped process is the user's to end)."""
    pid_file = tmp_path / "escaped.pid"
    tmp = f"{pid_file}.tmp"
    escape = f"setsid sh -c 'echo $$ > {tmp} && mv {tmp} {pid_file}; exec sleep 300'"
    started = f"until [ -e {pid_file} ]; do sleep 0.01; done; echo started"
    kept = Kept(f"{escape} & {started}", tmp_path, 0.5)
    escaped = pid_from(pid_file, 30)
    try:
        assert kept.exit_status() == 0
        assert kept.lines("out") == [b"started\n"]
    finally:
        os.kill(escaped, signal.SIGKILL)
    kept.let_go()


def test_a_command_that_cannot_start_is_one_stamped_line_and_127(tmp_path: Path) -> None:
    kept = Kept(["/no/such/command"], tmp_path, 1.0)
    assert kept.exit_status() == 127
    (line,) = (tmp_path / "err").read_bytes().splitlines()
    assert STAMPED.fullmatch(line) and b"cannot start '/no/such/command'" in line
    kept.let_go()
