"""Cost of naming a failure: ``torchx status`` of a failed ``local_cwd`` app whose log is
1 GiB, against the same app succeeded.

Two apps write the same 1 GiB of log lines; one then raises (its status names the
exception, from the end of that log), the other exits 0. ``torchx status HANDLE`` of each
is timed round-robin (medians). Target: failed <= 1.5x succeeded: at most 64 KiB of a
failed replica's log is read, however long the log. A report, not a test: always exits 0.

    .venv/bin/python benchmarks/bench_failure.py [--runs N] [--mib M]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import bench_env, compile_sources, interleaved_calls, verdict

BIN = Path(sys.executable).parent
TARGET = 1.5

WRITER = """\
import sys
line = b"step 000000000 loss 0.123456 " + b"x" * 70 + b"\\n"
block = line * 10_000
for _ in range({blocks}):
    sys.stdout.buffer.write(block)
sys.stdout.flush()
{end}
"""


def _run(code: str, cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [str(BIN / "torchx"), "run", "-s", "local_cwd", "--wait", "utils.python", "-c", code],
        cwd=cwd, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    handles = [line for line in proc.stdout.splitlines() if line.startswith("local_cwd://")]
    if not handles:
        raise SystemExit(f"the app did not start: {proc.stderr.strip()[-300:]}")
    return handles[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="timed runs per command")
    parser.add_argument("--mib", type=int, default=1024, help="MiB of log per app")
    args = parser.parse_args()
    compile_sources(BIN / "python")
    env = bench_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    blocks = max(1, args.mib * (1 << 20) // (100 * 10_000))
    with tempfile.TemporaryDirectory(prefix="bench-failure-") as tmp:
        cwd = Path(tmp)
        env["TORCHX_HOME"] = str(cwd / "home")
        failed = _run(WRITER.format(blocks=blocks, end="raise RuntimeError('boom')"), cwd, env)
        succeeded = _run(WRITER.format(blocks=blocks, end="pass"), cwd, env)
        shown = subprocess.run(
            [str(BIN / "torchx"), "status", "--json", failed],
            cwd=cwd, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        failure = json.loads(shown.stdout)["failure"]
        print(f"log per app: {blocks * 10_000 * 100 / (1 << 20):.0f} MiB")
        print(f"failed app's root cause: {failure['cause']}: {failure['message']}")

        def status_of(handle: str) -> float:
            start = time.perf_counter()
            subprocess.run(
                [str(BIN / "torchx"), "status", handle],
                cwd=cwd, env=env, capture_output=True, check=True,
            )  # fmt: skip
            return time.perf_counter() - start

        times = interleaved_calls(
            [lambda: status_of(failed), lambda: status_of(succeeded)], args.runs
        )
        fail_s, ok_s = (statistics.median(t) for t in times)
        ratio = fail_s / ok_s
        print(f"torchx status, succeeded: {ok_s * 1e3:7.1f} ms")
        print(f"torchx status, failed:    {fail_s * 1e3:7.1f} ms  {ratio:.2f}x")
        print(f"failed <= {TARGET}x succeeded: {verdict(ratio <= TARGET)}")
        for handle in (failed, succeeded):
            subprocess.run(
                [str(BIN / "torchx"), "delete", handle],
                cwd=cwd, env=env, capture_output=True, check=False,
            )  # fmt: skip
    sys.exit(0)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
