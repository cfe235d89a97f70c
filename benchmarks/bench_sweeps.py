"""Cost of a sweep: ``torchx status`` of a finished 1,000-element sweep against
``torchx status`` of a finished single job on the same scheduler, timed round-robin
(medians), and how long submitting the sweep took.

Schedulers: ``local_cwd`` (always) and, with ``--slurm``, the Slurm cluster of
tools/slurm-up.sh (its elements run for real; the sweep's status then reads the queue and,
once the queue has let the tasks go, accounting). Each element runs ``true``; at most 50
run at once (``max_parallel``).

Target (issue 60): the sweep's status <= 2x the single job's. A report, not a test:
always exits 0.

    .venv/bin/python benchmarks/bench_sweeps.py [--runs N] [--slurm] [--size N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _harness import bench_env, interleaved, verdict

TORCHX = str(Path(sys.executable).parent / "torchx")
TARGET = 2.0
COMPONENT = """
import torchx.specs as specs


def one(n: int = 0) -> specs.AppDef:
    role = specs.Role("e", image="/tmp", entrypoint="true", args=[str(n)])
    role.resource = specs.Resource(cpu=1, gpu=0, memMB=64)
    return specs.AppDef("bench", roles=[role])
"""


def _measure(scheduler: str, size: int, runs: int, work: Path) -> None:
    from torchx.runner import get_runner

    component = str(work / "comp.py")
    Path(component).write_text(COMPONENT)
    with get_runner() as runner:
        single = runner.run_component(f"{component}:one", ["--n", "0"], scheduler)
        start = time.perf_counter()
        sweep = runner.run_sweep(
            f"{component}:one",
            {},
            {"n": [str(n) for n in range(size)]},
            scheduler,
            max_parallel=50,
        )
        submitted = time.perf_counter() - start
        for handle in (single, sweep):
            status = runner.wait(handle, wait_interval=1)
            assert status is not None and status.state.name == "SUCCEEDED", status
    env = bench_env(dict(os.environ))
    samples = interleaved(
        {
            "single job": [TORCHX, "status", single],
            f"{size}-element sweep": [TORCHX, "status", sweep],
        },
        runs,
        env,
        cwd=str(work),
    )
    medians = {name: statistics.median(values) for name, values in samples.items()}
    one, many = medians["single job"], medians[f"{size}-element sweep"]
    print(f"{scheduler}: submitted {size} elements in {submitted:.2f} s")
    print(
        f"{scheduler}: torchx status: single job {one * 1e3:.1f} ms,"
        f" {size}-element sweep {many * 1e3:.1f} ms ({many / one:.2f}x,"
        f" target <= {TARGET:g}x): {verdict(many <= TARGET * one)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--slurm", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["TORCHX_HOME"] = str(work / "home")
        os.chdir(work)
        _measure("local_cwd", args.size, args.runs, work)
        if args.slurm:
            _measure("slurm", args.size, args.runs, work)


if __name__ == "__main__":
    main()
