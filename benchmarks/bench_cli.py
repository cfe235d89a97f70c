"""Start-up benchmark of the ``torchx`` command line, ours vs upstream torchx 0.7.0.

Times the console scripts that are installed, ``.venv/bin/torchx`` (this repository,
editable) and the upstream venv's ``torchx`` (created by ``_harness.ensure_upstream_venv``),
each against the floor ``python -c pass`` of its own virtual environment. Our sources are
byte-compiled first and every command runs without ``PYTHONDONTWRITEBYTECODE``, as in a
user's install. Each of our commands runs ``--runs`` times after one warm-up run (which
also fills the entry-point, component and run-option caches), taking turns with the floor
(so that a slow spell of the machine hits both); its median is reported with its ratio to
the median of those floor runs and the speed-up over upstream, and rows missing a target
are flagged. The
targets (``COMMANDS``) hold with every distribution of the repository installed (the
README's ``.venv``); ``import torchx.specs`` is timed as ``python -c``. A report, not a
test: always exits 0.

    .venv/bin/python benchmarks/bench_cli.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from _harness import (
    ROOT,
    bench_env,
    compile_sources,
    ensure_upstream_venv,
    interleaved,
    time_command,
)

OURS = ROOT / ".venv" / "bin"
MIN_SPEEDUP = 4.0

# (program in the venv, arguments, max ratio to the floor): every distribution installed
COMMANDS: list[tuple[str, list[str], float]] = [
    ("python", ["-c", "import torchx.specs"], 2.5),
    ("torchx", ["--help"], 1.3),
    ("torchx", ["builtins"], 2.0),
    ("torchx", ["run", "--dryrun", "-s", "local_cwd", "utils.echo", "--msg", "hi"], 3.5),
    ("torchx", ["run", "--wait", "-s", "local_cwd", "utils.echo", "--msg", "hi"], 4.5),
    ("torchx", ["runopts"], 4.0),
]

# (disk cache, the command it serves): each cache stays only while it pays, i.e. while the
# command without it is measurably slower (torchx/util/startup/__init__.py lists them)
CACHES: list[tuple[str, list[str]]] = [
    ("entrypoints", ["--help"]),
    ("components", ["builtins"]),
    ("runopts", ["runopts"]),
    ("lint", ["run", "--dryrun", "-s", "local_cwd", "utils.echo", "--msg", "hi"]),
]


def _check_exit(cmd: list[str], cwd: str, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        return ""
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
    return f"exit {proc.returncode}: {tail[0][:80]}"


def _isolated_env(tmp: str) -> dict[str, str]:
    """No ``TORCHX*`` settings of the caller; a private ``TORCHX_HOME`` and ``HOME``."""
    env = {k: v for k, v in bench_env().items() if not k.startswith("TORCHX")}
    env.update(
        TORCHX_HOME=os.path.join(tmp, "torchx_home"),
        HOME=os.path.join(tmp, "home"),
        LOGLEVEL="WARNING",
    )
    os.makedirs(env["HOME"])
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command")
    args = parser.parse_args()

    upstream = ensure_upstream_venv() / "bin"
    compile_sources(OURS / "python")
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        cwd = os.path.join(tmp, "cwd")
        os.makedirs(cwd)
        env = _isolated_env(tmp)

        def median(cmd: list[str]) -> float:
            return time_command(cmd, args.runs, env=env, cwd=cwd)

        floor_cmd = [str(OURS / "python"), "-c", "pass"]
        floor_ours = median(floor_cmd)
        floor_up = median([str(upstream / "python"), "-c", "pass"])
        print(
            f"floor (python -c pass): ours {floor_ours * 1e3:.1f} ms,"
            f" upstream venv {floor_up * 1e3:.1f} ms"
        )
        print(f"runs per command: {args.runs} (median)\n")

        header = (
            f"{'command':<58} {'ours ms':>8} {'x floor':>8} {'target':>7}"
            f" {'upstream ms':>12} {'speed-up':>9}  verdict"
        )
        print(header)
        print("-" * len(header))
        misses = 0
        for program, argv, target in COMMANDS:
            label = f"{program} {' '.join(argv)}"
            ours_cmd = [str(OURS / program), *argv]
            problem = _check_exit(ours_cmd, cwd, env)
            paired = interleaved(
                {"floor": floor_cmd, "ours": ours_cmd}, args.runs, env, cwd, ok=lambda p: True
            )
            ours = statistics.median(paired["ours"])
            ratio = ours / statistics.median(paired["floor"])
            theirs = median([str(upstream / program), *argv])
            speedup = theirs / ours
            verdict = []
            if problem:
                verdict.append(f"FAILED ({problem})")
            if ratio > target:
                verdict.append(f"MISS ratio>{target:g}x")
            if program == "torchx" and not speedup >= MIN_SPEEDUP:  # a command's target
                verdict.append(f"MISS speed-up<{MIN_SPEEDUP:g}x")
            misses += bool(verdict)
            print(
                f"{label:<58} {ours * 1e3:>8.1f} {ratio:>7.2f}x {target:>6.1f}x"
                f" {theirs * 1e3:>12.1f} {speedup:>8.1f}x  {'; '.join(verdict) or 'ok'}"
            )
        print(f"\n{misses} of {len(COMMANDS)} commands miss a target\n")
        _report_caches(env, cwd, args.runs)
    sys.exit(0)


def _report_caches(env: dict[str, str], cwd: str, runs: int) -> None:
    """Each disk cache's worth: its command with every cache, then with that one off."""
    print(f"{'disk cache':<12} {'command':<46} {'cached ms':>9} {'without ms':>10}  gain")
    for name, argv in CACHES:
        cmd = [str(OURS / "torchx"), *argv]
        without_env = {**env, "TORCHX_NO_ENTRYPOINT_CACHE": name}
        cached = time_command(cmd, runs, env=env, cwd=cwd)
        without = time_command(cmd, runs, env=without_env, cwd=cwd)
        label = " ".join(argv)[:46]
        print(
            f"{name:<12} {label:<46} {cached * 1e3:>9.1f} {without * 1e3:>10.1f}"
            f"  {without / cached:.2f}x"
        )


if __name__ == "__main__":
    main()
