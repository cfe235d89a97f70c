"""Cost of progress: ``Runner.status`` of a running app that reports, with its progress read
(the default) against without (``progress=False``), and ``torchx.progress.report`` in a
loop against an empty call.

(a) A ``local_cwd`` app (and, with ``--slurm``, the same app on the Slurm cluster of
    tools/slurm-up.sh) has written 100 MiB of log, then its reports. Timed round-robin
    (medians), with and without the progress read: a status command (a Python process that
    prints ``Runner.status(handle, progress=...)``, what ``torchx status`` does), and
    ``Runner.status`` in one process (the read's own cost, in microseconds). Target: the
    command with <= 1.2x without: one read of at most 64 KiB, however long the log.
(b) ``report(i, total, loss=...)`` throttled (the default 5 s interval: nothing written)
    against a call of an empty function of the same signature, best of 5 x 100,000 calls.
    Target: < 2 us more per call.

A report, not a test: always exits 0.

    .venv/bin/python benchmarks/bench_progress.py [--runs N] [--slurm]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import interleaved_calls, verdict

BIN = Path(sys.executable).parent
STATUS_TARGET = 1.2
REPORT_TARGET_S = 2e-6

JOB = """\
import sys, time, torchx.progress as p
line = b"step 000000000 loss 0.123456 " + b"x" * 70 + b"\\n"
for _ in range(105):
    sys.stderr.buffer.write(line * 10_000)
sys.stderr.flush()
for i in (1, 2, 3):
    p.report(i, total=4, loss=0.3 + i / 100)
open("reported", "w").close()
time.sleep(600)
"""


def _status_ratio(scheduler: str, cfg: dict[str, str], runs: int, cwd: Path) -> None:
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Resource, Role

    (cwd / "reported").unlink(missing_ok=True)
    script = f"TORCHX_PROGRESS_INTERVAL=0 {shlex.quote(sys.executable)} -c {shlex.quote(JOB)}"
    role = Role(
        "train", image=str(cwd), entrypoint="bash", args=["-c", script],
        resource=Resource(cpu=1, gpu=0, memMB=256),
    )  # fmt: skip
    with get_runner() as runner:
        handle = runner.run(AppDef("bench-progress", [role]), scheduler, cfg=cfg)
        try:
            deadline = time.monotonic() + 120
            while not (cwd / "reported").exists():
                if time.monotonic() > deadline:
                    raise SystemExit(f"{handle} did not report within 120 s")
                time.sleep(0.2)
            status = runner.status(handle)
            assert status is not None and status.progress is not None, status
            shown = f"{status.progress.step}/{status.progress.total}"
            print(f"{scheduler}: {shown} read from the end of 100 MiB of log")

            def timed(progress: bool) -> float:
                start = time.perf_counter()
                runner.status(handle, progress=progress)
                return time.perf_counter() - start

            def command(progress: bool) -> float:
                code = (
                    "import sys; from torchx.runner import get_runner\n"
                    "with get_runner() as r:\n"
                    f"    print(r.status(sys.argv[1], progress={progress}).format())\n"
                )
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c", code, handle], check=True,
                               capture_output=True)  # fmt: skip
                return time.perf_counter() - start

            plain, read = (
                statistics.median(t)
                for t in interleaved_calls(
                    [lambda: command(False), lambda: command(True)], max(11, runs // 20)
                )
            )
            ratio = read / plain
            print(f"  status command without progress: {plain * 1e3:7.1f} ms")
            print(f"  status command with progress:    {read * 1e3:7.1f} ms  {ratio:.2f}x")
            print(f"  with <= {STATUS_TARGET}x without: {verdict(ratio <= STATUS_TARGET)}")
            without, with_ = (
                statistics.median(t)
                for t in interleaved_calls([lambda: timed(False), lambda: timed(True)], runs)
            )
            extra_us = (with_ - without) * 1e6
            print(
                f"  in one process: {without * 1e3:.2f} ms without, {with_ * 1e3:.2f} ms with"
                f" ({extra_us:.0f} us for the read)"
            )
        finally:
            runner.cancel(handle)


REPORT = """\
import time, torchx.progress as p
p.report(0)
def empty(step, total=None, **m): pass
def timed(f):
    best = 1e9
    for _ in range(5):
        t = time.perf_counter()
        for i in range(100000): f(i, 100000, loss=0.5)
        best = min(best, (time.perf_counter() - t) / 100000)
    return best
print(timed(p.report), timed(empty))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=301, help="timed status calls each")
    parser.add_argument("--slurm", action="store_true", help="also on the Slurm test cluster")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-progress-", dir=os.getcwd()) as tmp:
        cwd = Path(tmp)
        os.environ["TORCHX_HOME"] = str(cwd / "home")
        os.chdir(cwd)
        _status_ratio("local_cwd", {}, args.runs, cwd)
        if args.slurm:
            _status_ratio("slurm", {}, args.runs, cwd)
    out = subprocess.run(
        [sys.executable, "-c", REPORT], capture_output=True, text=True, check=True
    ).stdout.split()
    report_s, empty_s = float(out[0]), float(out[1])
    extra = report_s - empty_s
    print(f"report() throttled: {report_s * 1e6:.2f} us, empty call {empty_s * 1e6:.2f} us")
    ok = verdict(extra < REPORT_TARGET_S)
    print(f"  {extra * 1e6:.2f} us more per call, < {REPORT_TARGET_S * 1e6:.0f} us: {ok}")
    sys.exit(0)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
