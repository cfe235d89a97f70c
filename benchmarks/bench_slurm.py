"""Speed of the ``slurm`` scheduler, side by side with ``squeue`` and upstream torchx 0.7.0.

Measures, in one run (medians; floor and ours interleaved so machine noise hits both),
against the Slurm cluster of ``tools/slurm-up.sh`` with one finished job submitted here:

(a) floor: a bare ``squeue --json`` (Slurm 22.05 prints every job it holds);
(b) ours: ``torchx status slurm://torchx/<job>`` (a Python start, the CLI, one squeue);
(c) upstream 0.7.0 doing (b) in its own venv (``.bench/upstream``);
(d) ``Runner.dryrun`` of a 10,000-replica role on ``slurm``, ours vs upstream (off the
    submit path: nothing is queued).

For reference it also times (e) the floor of any Python ``torchx status`` built on the
TorchX contract: a Python start that imports only the standard-library modules that
``torchx status`` still loads (``re``, which pip's console script imports, ``enum`` and
``typing``, which the data model's classes and annotations need, ``select``) and then runs
the same ``squeue`` call the same way (``posix_spawnp`` and ``poll``). (b) - (e) is
TorchX's own share: the CLI, runner, scheduler, parsing and the job record.

Targets: (b) <= 4x (a) and >= 8x faster than (c); (d) >= 5x faster than upstream.
Ours is the ``torchx`` next to the interpreter running this script (every distribution
installed, e.g. the hatch default env). A report, not a test: always exits 0.

    python benchmarks/bench_slurm.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from _harness import (
    bench_env,
    compile_sources,
    dryrun_median,
    ensure_upstream_venv,
    interleaved,
    verdict,
)

from torchx.schedulers._slurm.parse import SQUEUE_FORMAT

OURS = Path(sys.executable).parent
MAX_STATUS_RATIO = 4.0
MIN_STATUS_SPEEDUP = 8.0
MIN_DRYRUN_SPEEDUP = 5.0

STDLIB_FLOOR = textwrap.dedent(
    """
    import re, enum, os, select, sys, typing
    argv = ["squeue", "-h", "-t", "all", "-j", sys.argv[1], "-O", sys.argv[2]]
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)]
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
    os.close(out_w)
    os.close(err_w)
    poller = select.poll()
    for fd in (out_r, err_r):
        poller.register(fd, select.POLLIN)
    left = 2
    while left:
        for fd, _ in poller.poll():
            if not os.read(fd, 1 << 16):
                poller.unregister(fd)
                left -= 1
    sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """
)


def submit_job(env: dict[str, str], cwd: str) -> str:
    """A finished job (kept by the controller for MinJobAge) to ask about."""
    proc = subprocess.run(
        [str(OURS / "torchx"), "run", "-s", "slurm", "--wait", "utils.sh", "true"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return next(line for line in proc.stdout.splitlines() if line.startswith("slurm://"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command")
    args = parser.parse_args()

    upstream = ensure_upstream_venv() / "bin"
    compile_sources(OURS / "python")
    with tempfile.TemporaryDirectory(prefix="bench-slurm-") as tmp:
        env = {k: v for k, v in bench_env().items() if not k.startswith("TORCHX")}
        env["TORCHX_HOME"] = os.path.join(tmp, "torchx_home")
        env["PATH"] = f"{OURS}:{env.get('PATH', '')}"
        handle = submit_job(env, tmp)
        print(f"job: {handle}; runs per command: {args.runs} (median, interleaved)\n")

        job_id = handle.rsplit("/", 1)[1]
        samples = interleaved(
            {
                "floor": ["squeue", "--json"],
                "ours": [str(OURS / "torchx"), "status", handle],
                "upstream": [str(upstream / "torchx"), "status", handle],
                "stdlib": [str(OURS / "python"), "-c", STDLIB_FLOOR, job_id, SQUEUE_FORMAT],
            },
            args.runs,
            env,
            tmp,
        )
        floor, ours, theirs, stdlib = (statistics.median(s) for s in samples.values())
        ratio, speedup = ours / floor, theirs / ours
        print(f"(a) squeue --json                       {floor * 1e3:8.1f} ms")
        print(
            f"(b) torchx status (ours)                {ours * 1e3:8.1f} ms  {ratio:5.2f}x (a)"
            f"  target <= {MAX_STATUS_RATIO:g}x: {verdict(ratio <= MAX_STATUS_RATIO)}"
        )
        print(
            f"(c) torchx status (upstream 0.7.0)      {theirs * 1e3:8.1f} ms"
            f"  ours {speedup:5.1f}x faster, target >= {MIN_STATUS_SPEEDUP:g}x:"
            f" {verdict(speedup >= MIN_STATUS_SPEEDUP)}"
        )

        print(
            f"(e) python + re/enum/typing + squeue     {stdlib * 1e3:8.1f} ms"
            f"  {stdlib / floor:5.2f}x (a)"
            f"  (TorchX's own share of (b): {(ours - stdlib) * 1e3:.1f} ms)"
        )

        dry_runs = max(3, args.runs // 3)
        role_args = ["-m", "train", "${replica_id}"]
        ours_dry, up_dry = (
            dryrun_median(python, "slurm", {}, dry_runs, env, cwd=tmp, image="/tmp", args=role_args)
            for python in (OURS / "python", upstream / "python")
        )
        if ours_dry is not None and up_dry is not None:
            dry_speedup = up_dry.dryrun / ours_dry.dryrun
            print(
                f"(d) dryrun 10,000 replicas: ours {ours_dry.dryrun * 1e3:.1f} ms, upstream"
                f" {up_dry.dryrun * 1e3:.1f} ms, {dry_speedup:.1f}x faster, target >="
                f" {MIN_DRYRUN_SPEEDUP:g}x: {verdict(dry_speedup >= MIN_DRYRUN_SPEEDUP)}"
            )
        subprocess.run(
            [str(OURS / "torchx"), "delete", handle],
            env=env,
            cwd=tmp,
            capture_output=True,
            check=False,
        )
    sys.exit(0)


if __name__ == "__main__":
    main()
