"""Start-up benchmark of the ``torchx`` command line, ours vs upstream torchx 0.7.0.

Builds nothing: it times the console scripts that are already installed,
``.venv/bin/torchx`` (this repository) and ``.bench/upstream/bin/torchx`` (upstream), each
against the floor ``python -c pass`` of its own virtual environment. Each command runs
``--runs`` times after one warm-up run (which also fills the entry-point cache); the
median is reported with its ratio to the floor and the speed-up over upstream, and rows
missing a target are flagged. A report, not a test: always exits 0.

    .venv/bin/python benchmarks/bench_cli.py [--runs N]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = ROOT / ".venv" / "bin"
UPSTREAM = ROOT / ".bench" / "upstream" / "bin"
MIN_SPEEDUP = 4.0

# (arguments, max ratio to the floor)
COMMANDS: list[tuple[list[str], float]] = [
    (["--help"], 3.0),
    (["builtins"], 5.0),
    (["run", "--dryrun", "-s", "local_cwd", "utils.echo", "--msg", "hi"], 5.0),
    (["run", "--wait", "-s", "local_cwd", "utils.echo", "--msg", "hi"], 6.0),
]


def _time_once(cmd: list[str], cwd: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - start


def _median(cmd: list[str], runs: int, cwd: str, env: dict[str, str]) -> float:
    _time_once(cmd, cwd, env)  # warm-up: page cache, .pyc files, entry-point cache
    return statistics.median(_time_once(cmd, cwd, env) for _ in range(runs))


def _check_exit(cmd: list[str], cwd: str, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        return ""
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
    return f"exit {proc.returncode}: {tail[0][:80]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command")
    args = parser.parse_args()

    have_upstream = (UPSTREAM / "torchx").exists()
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        cwd = os.path.join(tmp, "cwd")
        os.makedirs(cwd)
        # Real installs have .pyc files: let the warm-up runs write them.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("TORCHX") and k != "PYTHONDONTWRITEBYTECODE"
        }
        env.update(
            TORCHX_HOME=os.path.join(tmp, "torchx_home"),
            HOME=os.path.join(tmp, "home"),
            LOGLEVEL="WARNING",
        )
        os.makedirs(env["HOME"])

        floor_ours = _median([str(OURS / "python"), "-c", "pass"], args.runs, cwd, env)
        floor_up = (
            _median([str(UPSTREAM / "python"), "-c", "pass"], args.runs, cwd, env)
            if have_upstream
            else float("nan")
        )
        print(f"floor (python -c pass): ours {floor_ours * 1e3:.1f} ms", end="")
        print(f", upstream venv {floor_up * 1e3:.1f} ms" if have_upstream else "")
        print(f"runs per command: {args.runs} (median)\n")

        header = (
            f"{'command':<58} {'ours ms':>8} {'x floor':>8} {'target':>7}"
            f" {'upstream ms':>12} {'speed-up':>9}  verdict"
        )
        print(header)
        print("-" * len(header))
        misses = 0
        for argv, target in COMMANDS:
            label = "torchx " + " ".join(argv)
            ours_cmd = [str(OURS / "torchx"), *argv]
            problem = _check_exit(ours_cmd, cwd, env)
            ours = _median(ours_cmd, args.runs, cwd, env)
            ratio = ours / floor_ours
            upstream = float("nan")
            if have_upstream:
                upstream = _median([str(UPSTREAM / "torchx"), *argv], args.runs, cwd, env)
            speedup = upstream / ours
            verdict = []
            if problem:
                verdict.append(f"FAILED ({problem})")
            if ratio > target:
                verdict.append(f"MISS ratio>{target:g}x")
            if have_upstream and not speedup >= MIN_SPEEDUP:
                verdict.append(f"MISS speed-up<{MIN_SPEEDUP:g}x")
            misses += bool(verdict)
            print(
                f"{label:<58} {ours * 1e3:>8.1f} {ratio:>7.2f}x {target:>6.1f}x"
                f" {upstream * 1e3:>12.1f} {speedup:>8.1f}x  {'; '.join(verdict) or 'ok'}"
            )
        if not have_upstream:
            print(f"\n(upstream torchx not found at {UPSTREAM}; speed-ups not measured)")
        print(f"\n{misses} of {len(COMMANDS)} commands miss a target")
    sys.exit(0)


if __name__ == "__main__":
    main()
