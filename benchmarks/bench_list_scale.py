"""``torchx list -s slurm`` as the accounting grows, side by side with Slurm's own cost.

Submits jobs with ``sbatch`` (TorchX-style names, ``--wrap true``) until the cluster of
``tools/slurm-up.sh`` holds N/4 and then N finished jobs of this run, and at each size
times, interleaved (medians):

(a) the cheapest Python list: an interpreter start that runs ``sacct`` and ``squeue`` in
    their text forms side by side (the same arguments ``torchx list`` uses);
(b) ``torchx list -s slurm --since START`` (ours; START = this run's first submission);
(c) upstream torchx 0.7.0's ``torchx list -s slurm`` (its own window).

Targets (issue 26): (b) <= 2x (a) at N; (b) >= 5x faster than (c); from N/4 to N, (b)
grows at most 2x as fast per job as (a). A report, not a test: always exits 0.

    python benchmarks/bench_list_scale.py [--jobs 2000] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _harness import bench_env, compile_sources, ensure_upstream_venv, interleaved, verdict

from torchx.schedulers._slurm.parse import SQUEUE_LIST_FORMAT

OURS = Path(sys.executable).parent

CHEAPEST = textwrap.dedent(
    """
    import subprocess, sys
    sacct = subprocess.Popen(["sacct", "--parsable2", "--allocations",
        "--format=JobID,JobName%256,State,Submit", "--starttime=" + sys.argv[1]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    squeue = subprocess.Popen(["squeue", "-h", "-t", "all", "-O", sys.argv[2]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sacct.communicate(); squeue.communicate()
    """
)


def submit(count: int, start: int) -> None:
    for i in range(start, start + count):
        subprocess.run(
            ["sbatch", "--parsable", "-J", f"bench:bench-{i}", "-o", "/dev/null", "--wrap", "true"],
            check=True,
            capture_output=True,
        )


def drain(deadline_s: float = 1800) -> None:
    """Waits until none of this user's jobs is queued or running."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        out = subprocess.run(
            ["squeue", "-h", "-t", "pending,running", "-o", "%i"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        if not out.strip():
            return
        time.sleep(2)


def measure(env: dict[str, str], since: str, runs: int, upstream: Path) -> dict[str, float]:
    samples = interleaved(
        {
            "cheapest": [str(OURS / "python"), "-c", CHEAPEST, since, SQUEUE_LIST_FORMAT],
            "ours": [str(OURS / "torchx"), "list", "-s", "slurm", "--since", since],
            "upstream": [str(upstream / "torchx"), "list", "-s", "slurm"],
        },
        runs,
        env,
    )
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    upstream = ensure_upstream_venv() / "bin"
    compile_sources(OURS / "python")
    with tempfile.TemporaryDirectory(prefix="bench-list-") as tmp:
        env = {k: v for k, v in bench_env().items() if not k.startswith("TORCHX")}
        env["TORCHX_HOME"] = os.path.join(tmp, "home")
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 1))
        quarter = args.jobs // 4
        results = {}
        done = 0
        for size in (quarter, args.jobs):
            submit(size - done, done)
            done = size
            drain()
            results[size] = measure(env, since, args.runs, upstream)
            r = results[size]
            print(
                f"N={size:5d}: cheapest {r['cheapest'] * 1e3:7.1f} ms  ours {r['ours'] * 1e3:7.1f}"
                f" ms ({r['ours'] / r['cheapest']:.2f}x)  upstream {r['upstream'] * 1e3:7.1f} ms"
                f" ({r['upstream'] / r['ours']:.1f}x slower)"
            )
        small, big = results[quarter], results[args.jobs]
        ratio = big["ours"] / big["cheapest"]
        speedup = big["upstream"] / big["ours"]
        per_job_ours = (big["ours"] - small["ours"]) / (args.jobs - quarter)
        per_job_floor = (big["cheapest"] - small["cheapest"]) / (args.jobs - quarter)
        growth = per_job_ours / per_job_floor if per_job_floor > 0 else float("inf")
        print(f"(b)/(a) at N: {ratio:.2f} (<= 2) {verdict(ratio <= 2)}")
        print(f"upstream/ours at N: {speedup:.1f} (>= 5) {verdict(speedup >= 5)}")
        print(
            f"growth per job: ours {per_job_ours * 1e6:.0f} us, cheapest {per_job_floor * 1e6:.0f}"
            f" us ({growth:.2f}x, <= 2) {verdict(growth <= 2)}"
        )


if __name__ == "__main__":
    main()
