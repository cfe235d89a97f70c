"""Log streaming through raw blocks of whole lines (the fast path): nothing lost or split.

``torchx log``, ``torchx log --tail`` and ``torchx run --log`` copy a local_cwd log in blocks
and insert the ``role/replica`` prefix with ``bytes.replace``; these tests hold that path to
the line-by-line result: every line whole, in order per replica, progress bars (``\\r``)
prefixed as before, lines longer than a read block intact, and a followed log still
printed as it is written.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchx.cli._logstream import prefix_chunk, prefix_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from conftest import Cli

# Each replica prints numbered lines, a \r progress bar, lines longer than a 64 KiB read
# block and a last line without a newline.
PRODUCER = r"""
import sys
rid = int(sys.argv[1])
out = sys.stdout.buffer
for i in range(30000):
    out.write(b"r%d line %d %s\n" % (rid, i, b"y" * (i % 97)))
    if i % 5000 == 0:
        out.write(b"r%d long %d %s\n" % (rid, i, b"z" * 150000))
        out.write(b"\rr%d bar 10%%\rr%d bar 100%%\n" % (rid, rid))
out.write(b"r%d last" % rid)
"""


def _expected(rid: int, prefix: str) -> list[str]:
    lines = []
    for i in range(30000):
        lines.append(f"{prefix}r{rid} line {i} {'y' * (i % 97)}")
        if i % 5000 == 0:
            lines.append(f"{prefix}r{rid} long {i} {'z' * 150000}")
            lines.append(f"\r{prefix}r{rid} bar 10%\r{prefix}r{rid} bar 100%")
    lines.append(f"{prefix}r{rid} last")
    return lines


def _run(cli: Cli, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``torchx ARGS`` with its output as bytes: text mode would turn each \\r into \\n."""
    (cli.cwd / "producer.py").write_text(PRODUCER)
    return subprocess.run(
        [*cli.command, *args], env=cli.env, cwd=cli.cwd, capture_output=True, check=False
    )


def _replica_lines(text: str, rid: int) -> list[str]:
    prefix = f"py/{rid} "
    return [
        line
        for line in text.split("\n")
        if line.startswith(prefix) or line.startswith("\r" + prefix)
    ]


def _check(text: str, replicas: int = 3) -> None:
    for rid in range(replicas):
        assert _replica_lines(text, rid) == _expected(rid, f"py/{rid} "), f"replica {rid}"


@pytest.fixture
def finished_app(cli: Cli) -> tuple[str, str]:
    """A finished 3-replica app; (handle, what `torchx run --log` printed to stderr)."""
    run = _run(
        cli,
        "run", "--log", "-s", "local_cwd", "utils.binary", "--name", "py",
        "--num_replicas", "3", "--entrypoint", sys.executable, "--",
        "producer.py", "${replica_id}",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.decode().strip(), run.stderr.decode()


def test_run_log_streams_every_line_whole_and_in_order(finished_app: tuple[str, str]) -> None:
    _check(finished_app[1].replace("binary/", "py/"))


@pytest.mark.parametrize("mode", [[], ["--tail"], ["-f"]])
def test_log_of_finished_app_prints_every_line_whole(
    cli: Cli, finished_app: tuple[str, str], mode: list[str]
) -> None:
    log = _run(cli, "log", *mode, finished_app[0])
    assert log.returncode == 0, log.stderr
    _check(log.stdout.decode().replace("binary/", "py/"))


def test_log_passes_undecodable_bytes_through(cli: Cli) -> None:
    run = _run(cli, "run", "-s", "local_cwd", "utils.sh", "printf", r"a\377b\nok\n")
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith(b"sh/0 a\xffb\nsh/0 ok\n")
    log = _run(cli, "log", run.stdout.decode().strip())
    assert log.returncode == 0, log.stderr
    assert log.stdout == b"sh/0 a\xffb\nsh/0 ok\n"


def test_tail_prints_lines_while_the_app_runs(cli: Cli, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    script = f"echo first; while [ ! -e {gate} ]; do sleep 0.05; done; echo second"
    launched = cli.popen("run", "-s", "local_cwd", "utils.sh", "sh", "-c", script)
    assert launched.stdout is not None and launched.stderr is not None
    handle = launched.stdout.readline().strip()
    tail = cli.popen("log", "--tail", handle)
    assert tail.stdout is not None
    try:
        # the first line arrives while the app still waits for the gate
        assert tail.stdout.readline() == "sh/0 first\n"
        gate.touch()
        assert tail.stdout.readline() == "sh/0 second\n"
        assert tail.wait(timeout=60) == 0
        assert launched.wait(timeout=60) == 0
    finally:
        gate.touch()
        for proc in (tail, launched):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


@pytest.mark.parametrize(
    "text",
    [
        "a\nb\n",
        "\rbar 1\rbar 2\ndone\n",
        "x\ry\n\r\n\n",
        "\r\r\n",
        "no newline at the end",
        "mid\rline\n\rstart\rtwo\nend\r",
        "",
    ],
)
@pytest.mark.parametrize("prefix", ["r/0 ", "\033[32mr/0\033[0m "])
def test_prefix_chunk_matches_prefix_line(text: str, prefix: str) -> None:
    lines = re.findall(r"[^\n]*\n|[^\n]+$", text)
    expected = "".join(
        prefix_line(prefix, line if line.endswith("\n") else line + "\n") for line in lines
    )
    if text:
        assert prefix_chunk(prefix.encode(), text.encode()).decode() == expected
