"""Log streaming speed of the ``torchx`` CLI on ``local_cwd``, against plain Python floors.

Measured side by side in one run (commands called round-robin, medians):

(a) floor: ``python -c "for line in open(log): pass"`` over the app's 200 MiB log;
(b) ours: ``torchx log HANDLE`` of that finished app (stdout to /dev/null, prefixes included);
(c) ours: ``torchx log --tail HANDLE`` of the same app;
(d) floor: the producer writing the same bytes straight to a file, plus (a) over that file;
(e) ours: ``torchx run --log`` of the producer (its lines streamed to stderr, /dev/null).

Targets: (b) and (c) <= 2x (a); (e) <= 2x (d). Before timing, every mode is run once
into a file and checked line by line: nothing lost, split or reordered, each line behind
its ``role/replica`` prefix. A report, not a test: always exits 0.

    .venv/bin/python benchmarks/bench_logs.py [--runs N] [--mib M]

Runs the ``torchx`` and ``python`` next to the interpreter that runs this script.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from _harness import bench_env, compile_sources, interleaved_calls, verdict

BIN = Path(sys.executable).parent
# The producer copies a prepared file of numbered lines to stdout in 1 MiB blocks: about
# as fast as a program can print, so the floor leaves no slack for slow streaming.
PRODUCER = """\
import shutil, sys
with open("lines.txt", "rb") as f:
    shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)
"""


def write_lines_file(path: Path, mib: int) -> int:
    """``mib`` MiB of numbered 105-byte lines (10,000 per MiB); their number."""
    tail = b" " + b"x" * 94 + b"\n"
    with open(path, "wb") as f:
        for block in range(mib):
            start = block * 10_000
            f.write(b"".join(b"%09d%s" % (i, tail) for i in range(start, start + 10_000)))
    return mib * 10_000


def _timed(argv: Sequence[str], env: dict[str, str], cwd: Path, **kw: object) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, **kw)  # type: ignore[call-overload]
    return time.perf_counter() - start


def check_lines(text_file: Path, prefix: str, count: int) -> str:
    """'' if ``text_file`` holds exactly the producer's ``count`` lines behind ``prefix``."""
    expected_tail = b" " + b"x" * 94 + b"\n"
    with open(text_file, "rb") as f:
        lines = [line for line in f if line.startswith(prefix.encode())]
    if len(lines) != count:
        return f"{len(lines)} lines, expected {count}"
    p = len(prefix)
    for i, line in enumerate(lines):
        if line[p : p + 9] != b"%09d" % i or line[p + 9 :] != expected_tail:
            return f"line {i} is wrong: {line[:60]!r}"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mib", type=int, default=200)
    args = parser.parse_args()
    torchx, python = str(BIN / "torchx"), str(BIN / "python")
    compile_sources(python)

    work = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    env = {k: v for k, v in bench_env().items() if not k.startswith("TORCHX")}
    env["TORCHX_HOME"] = str(work / "home")
    apps = work / "home" / "local_cwd"
    (work / "producer.py").write_text(PRODUCER)
    lines = write_lines_file(work / "lines.txt", args.mib)
    produce = [python, "producer.py"]
    run_log = [torchx, "run", "--log", "-s", "local_cwd", "utils.binary", "--entrypoint"]
    run_log += [python, "--", "producer.py"]
    devnull = subprocess.DEVNULL
    try:
        # the finished app that (a)-(c) read, and the correctness checks
        out = work / "run.out"
        with open(out, "wb") as f:
            proc = subprocess.run(
                run_log, env=env, cwd=work, stdout=subprocess.PIPE, stderr=f, check=True
            )
        handle = proc.stdout.decode().strip()
        log = next(apps.glob("*/binary/0/combined.log"))
        problems = {"run --log": check_lines(out, "binary/0 ", lines)}
        for mode in ([], ["--tail"]):
            with open(out, "wb") as f:
                subprocess.run(
                    [torchx, "log", *mode, handle], env=env, cwd=work, stdout=f, check=True
                )
            problems[" ".join(["log", *mode])] = check_lines(out, "binary/0 ", lines)
        out.unlink()

        def floor_iter(path: Path = log) -> float:
            code = f"for _ in open({str(path)!r}): pass"
            return _timed([python, "-c", code], env, work)

        def ours_log(*mode: str) -> Callable[[], float]:
            return lambda: _timed([torchx, "log", *mode, handle], env, work, stdout=devnull)

        def floor_produce() -> float:
            target = work / "produced.log"
            with open(target, "wb") as f:
                took = _timed(produce, env, work, stdout=f)
            took += floor_iter(target)
            target.unlink()
            return took

        def ours_run_log() -> float:
            before = set(apps.iterdir())
            took = _timed(run_log, env, work, stdout=devnull, stderr=devnull)
            for app_dir in set(apps.iterdir()) - before:
                shutil.rmtree(app_dir)
            return took

        samples = interleaved_calls(
            [floor_iter, ours_log(), ours_log("--tail"), floor_produce, ours_run_log], args.runs
        )
        t_floor, t_log, t_tail, t_produce, t_run = map(statistics.median, samples)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"log streaming benchmark: {args.mib} MiB, {lines} lines (medians of {args.runs})")
    for what, problem in problems.items():
        row(f"lines of `torchx {what}`", problem or "all there, whole, in order", "", not problem)
    row("(a) floor: python line iteration", f"{t_floor:.3f} s")
    for label, took in (("(b) ours: torchx log", t_log), ("(c) ours: torchx log --tail", t_tail)):
        r = took / t_floor
        row(label, f"{took:.3f} s", f"{r:.2f}x (a)", r <= 2)
    row("(d) floor: producer > file + (a)", f"{t_produce:.3f} s")
    r = t_run / t_produce
    row("(e) ours: torchx run --log", f"{t_run:.3f} s", f"{r:.2f}x (d)", r <= 2)


def row(label: str, value: str, ratio: str = "", target_met: bool | None = None) -> None:
    mark = "" if target_met is None else f"  {verdict(target_met)}"
    print(f"{label:<36} {value:<28} {ratio}{mark}")


if __name__ == "__main__":
    main()
