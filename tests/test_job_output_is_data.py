"""A job's own output is data in every view (the fourth hostile-input audit): escape
sequences in an exception's message, its log and a metric's name reach no terminal from
``torchx status``, ``log``, ``log --failed``, ``describe`` or ``list``; and progress lines
with a 400-digit step, a NaN or a metric named ``constructor`` break none of them, nor
``cancel`` or the JSON a script reads.

Real local_cwd apps through the CLI; the check is on the bytes each command writes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TORCHX = str(Path(sys.executable).parent / "torchx")

# the audit's probes: cursor up and erase (a forged "State:" line), an OSC title with BEL,
# an 8-bit CSI, a bidi override, a carriage return
FORGED = "\x1b[1A\x1b[2K\rState: SUCCEEDED\x1b]0;owned\x07 \u009b2J \u202edeliaf"
CONTROL_BYTES = (b"\x1b", b"\x07", b"\xc2\x9b", "\u202e".encode())

HOSTILE_JOB = f"""
import sys
forged = {FORGED!r}
print("plain line")
print("log says " + forged)
sys.stdout.flush()
raise RuntimeError("boom " + forged)
"""


def _torchx(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "TORCHX_HOME": str(home), "LOGLEVEL": "WARNING"}
    return subprocess.run(
        [TORCHX, *args], cwd=cwd, env=env, capture_output=True, timeout=120, check=False
    )


def _no_control(proc: subprocess.CompletedProcess[bytes], what: str) -> bytes:
    out = proc.stdout + proc.stderr
    for control in CONTROL_BYTES:
        assert control not in out, f"{what} wrote {control!r}: {out!r}"
    return out


def test_a_jobs_escape_sequences_are_shown_escaped_in_every_view(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "job.py").write_text(HOSTILE_JOB)
    run = _torchx(
        "run", "--wait", "utils.sh", "sh", "-c", f"{shlex.quote(sys.executable)} job.py",
        cwd=tmp_path, home=home,
    )  # fmt: skip
    assert run.returncode != 0
    handle = run.stdout.decode().split()[0]
    assert handle.startswith("local_cwd://"), run.stdout
    _no_control(run, "run --wait")

    status = _torchx("status", handle, cwd=tmp_path, home=home)
    out = _no_control(status, "status")
    assert b"State: FAILED" in out
    # the log tail splits at the carriage return: its second half is a line of the tail
    assert b"RuntimeError: boom \\x1b[1A\\x1b[2K\n" in out, out
    assert b"| State: SUCCEEDED\\x1b]0;owned\\x07 \\x9b2J \\u202edeliaf\n" in out, out

    failed = _torchx("log", "--failed", handle, cwd=tmp_path, home=home)
    out = _no_control(failed, "log --failed")
    assert b"torchx: root cause:" in out and b"\\x1b[1A" in out, out

    log = _torchx("log", handle, cwd=tmp_path, home=home)
    out = _no_control(log, "log")
    assert b"log says \\x1b[1A\\x1b[2K\rsh/0 State" in out  # a CR redraws its own line only
    raw = _torchx("log", "--raw", handle, cwd=tmp_path, home=home)
    for sequence in (b"\x1b[1A\x1b[2K", b"\x1b]0;owned\x07", "\u202edeliaf".encode()):
        assert sequence in raw.stdout  # as the job wrote it

    _no_control(_torchx("describe", handle, cwd=tmp_path, home=home), "describe")
    _no_control(_torchx("list", cwd=tmp_path, home=home), "list")
    as_json = _torchx("status", "--json", handle, cwd=tmp_path, home=home)
    # JSON keeps the data as it is
    assert json.loads(as_json.stdout)["failure"]["message"] == "RuntimeError: boom \x1b[1A\x1b[2K"


HOSTILE_REPORTS = [
    '{"step": 1, "total": 4, "metrics": {"loss": 0.5}}',
    '{"step": 2, "total": 4, "metrics": {"loss": NaN, "gnorm": Infinity, "constructor": 0.25,'
    ' "__proto__": 1.5, "huge": 1' + "0" * 400 + ', "\\u001b[31mred": 2}}',
    '{"step": 1' + "0" * 400 + ', "total": 4}',  # a 400-digit step
    '{"step": 3, "total": 1' + "0" * 400 + "}",  # a 400-digit total
]


def _reporting_job(tmp_path: Path) -> str:
    lines = "".join(f"print({('TORCHX_PROGRESS ' + r)!r}, flush=True)\n" for r in HOSTILE_REPORTS)
    (tmp_path / "reports.py").write_text(lines + "import time\ntime.sleep(600)\n")
    return f"{shlex.quote(sys.executable)} reports.py"


def _strict_json(text: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"not JSON: {name} in {text[:300]!r}")

    return json.loads(text, parse_constant=refuse)


def test_hostile_progress_lines_break_no_command(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run = subprocess.Popen(
        [TORCHX, "run", "utils.sh", "sh", "-c", _reporting_job(tmp_path)],
        cwd=tmp_path, env={**os.environ, "TORCHX_HOME": str(home), "LOGLEVEL": "WARNING"},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.stdout is not None
    handle = run.stdout.readline().decode().strip()
    assert handle.startswith("local_cwd://"), handle
    try:
        deadline = time.monotonic() + 60
        while True:
            status = _torchx("status", "--json", handle, cwd=tmp_path, home=home)
            assert status.returncode == 0, status.stderr
            found = _strict_json(status.stdout)["progress"]
            if (found is not None and found["step"] == 3) or time.monotonic() > deadline:
                break
        # the 400-digit step's report is dropped; the last good one has a total dropped
        assert found is not None and found["step"] == 3 and found["total"] is None, found
        text = _torchx("status", handle, cwd=tmp_path, home=home)
        assert text.returncode == 0, text.stderr
        warnings = [w for w in text.stderr.decode().splitlines() if "progress" in w]
        assert any("not an integer" in w for w in warnings), text.stderr
        assert len(warnings) == len(set(warnings)), warnings  # each said once

        listed = _torchx("list", "--progress", cwd=tmp_path, home=home)
        assert listed.returncode == 0 and handle.encode() in listed.stdout, listed.stderr
        rows = _strict_json(_torchx("list", "--json", "--progress", cwd=tmp_path, home=home).stdout)
        assert any(r["app_handle"] == handle for r in rows)
    finally:
        cancel = _torchx("cancel", handle, cwd=tmp_path, home=home)
        run.communicate(timeout=60)
    assert cancel.returncode == 0, cancel.stderr


def test_nan_and_odd_metric_names_are_kept_as_data(tmp_path: Path) -> None:
    """Step 2's metrics: NaN and infinity kept and written as JSON strings, names that
    are object keys in JavaScript kept, a value no float holds dropped, an escape in a
    name shown escaped."""
    from torchx.specs.progress import from_log_tail, metrics_text

    tail = "".join(f"TORCHX_PROGRESS {r}\n" for r in HOSTILE_REPORTS[:2])
    progress = from_log_tail(tail, "train", 0, running=True, now=time.time())
    assert progress is not None and progress.step == 2
    metrics = progress.to_json()["metrics"]
    assert metrics == {
        "loss": "NaN",
        "gnorm": "Infinity",
        "constructor": 0.25,
        "__proto__": 1.5,
        "\x1b[31mred": 2.0,
    }, metrics
    json.dumps(progress.to_json(), allow_nan=False)  # valid JSON
    assert metrics_text(progress).startswith("loss=nan, gnorm=inf, constructor=0.25")
    assert "\\x1b[31mred=2" in metrics_text(progress)


_PEAK_OF = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True)
assert done.returncode == 0, done.stderr[-2000:]
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""


def _peak_mb(*args: str, cwd: Path, home: Path) -> int:
    """The peak memory (MiB) of ``torchx ARGS``, measured by a process of its own."""
    env = {**os.environ, "TORCHX_HOME": str(home), "LOGLEVEL": "WARNING"}
    out = subprocess.run(
        [sys.executable, "-c", _PEAK_OF, TORCHX, *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    return int(out.strip())


GIANT_MB = 96


def test_log_regex_and_progress_do_not_hold_a_giant_line(tmp_path: Path) -> None:
    """The audit's 300 MB line cost ``torchx log --regex`` 650 MB: now a line is read in
    pieces of at most 1 MiB. Measured against the same command on a small log (the
    floor): the giant line adds a small part of itself."""
    home = tmp_path / "home"
    giant = (
        f'{shlex.quote(sys.executable)} -c \'import sys; sys.stdout.write("x" * {GIANT_MB << 20}'
        ' + "\\n"); print("TORCHX_PROGRESS {\\"step\\": 1}"); print("needle")\''
    )
    handles = {}
    for name, script in (("small", "echo x; echo needle"), ("giant", giant)):
        run = _torchx("run", "--wait", "utils.sh", "sh", "-c", script, cwd=tmp_path, home=home)
        assert run.returncode == 0, run.stderr
        handles[name] = run.stdout.decode().split()[0]
    floor = _peak_mb("log", "--regex", "needle", handles["small"], cwd=tmp_path, home=home)
    peak = _peak_mb("log", "--regex", "needle", handles["giant"], cwd=tmp_path, home=home)
    assert peak - floor < GIANT_MB / 4, (floor, peak)
    found = _torchx("log", "--regex", "needle", handles["giant"], cwd=tmp_path, home=home)
    assert found.stdout.decode().splitlines() == ["sh/0 needle"]
    status = _torchx("status", "--json", handles["giant"], cwd=tmp_path, home=home)
    assert json.loads(status.stdout)["progress"]["step"] == 1
