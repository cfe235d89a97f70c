"""Speed of the ``ray`` scheduler against a real Ray cluster (``tools/ray-up.sh``).

Measured in one run, commands interleaved so that machine noise hits all alike:

(a) floor of a status: a Python start plus one stdlib HTTP GET of ``/api/jobs/<id>``;
(b) ``torchx status ray://torchx/<id>`` of a finished job (CLI, runner, scheduler: the job
    and its driver's events, two GETs made side by side);
(c) Ray's own ``ray job submit -- echo hi`` (imports Ray; waits for the job and prints its
    log) from the cluster's venv;
(d) ``torchx run --wait -s ray utils.echo --msg hi`` (no workspace: ``--workspace ''``).

Targets (issue 22): (b) <= 1.8x (a); (d) <= 1.0x (c). Also shows that the submitting
side imports no ``ray``. A report, not a test: always exits 0.

    python benchmarks/bench_ray.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from _harness import bench_env, compile_sources, interleaved, print_medians, verdict

from torchx.schedulers._ray.client import split_app_id

OURS = Path(sys.executable).parent
RAY_BIN = Path(os.environ.get("TORCHX_CI_STATE", "/tmp/torchx-ci")) / "ray" / "venv" / "bin"
DASHBOARD = os.environ.get("RAY_ADDRESS") or "http://127.0.0.1:8265"
MAX_STATUS_RATIO = 1.8
MAX_RUN_RATIO = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--run-runs", type=int, default=3)
    args = parser.parse_args()
    env = bench_env({**os.environ, "RAY_ADDRESS": DASHBOARD, "RAY_USAGE_STATS_ENABLED": "0"})
    compile_sources(sys.executable)
    torchx = str(OURS / "torchx")
    submitted = subprocess.run(
        [torchx, "run", "-s", "ray", "--workspace", "", "--wait", "utils.echo", "--msg", "x"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    handle = submitted.stdout.strip()
    _, job_id = split_app_id(handle.rsplit("/", 1)[1])  # the id: `ADDRESS-JOB` -> JOB
    get = f"import urllib.request\nurllib.request.urlopen('{DASHBOARD}/api/jobs/{job_id}').read()\n"
    status = interleaved(
        {
            "(a) python + one GET": [sys.executable, "-c", get],
            "(b) torchx status": [torchx, "status", handle],
        },
        args.runs,
        env,
    )
    print(f"status of {handle} ({args.runs} runs)")
    medians = print_medians(status, "(a) python + one GET", "of (a)")
    ratio = medians["(b) torchx status"] / medians["(a) python + one GET"]
    ok = verdict(ratio <= MAX_STATUS_RATIO)
    print(f"  (b)/(a) = {ratio:.2f} (target <= {MAX_STATUS_RATIO}) {ok}")

    runs = interleaved(
        {
            "(c) ray job submit": [
                str(RAY_BIN / "ray"), "job", "submit", "--address", DASHBOARD, "--", "echo", "hi",
            ],
            "(d) torchx run --wait": [
                torchx, "run", "-s", "ray", "--workspace", "", "--wait",
                "utils.echo", "--msg", "hi",
            ],
        },
        args.run_runs,
        {**env, "PATH": f"{RAY_BIN}:{env['PATH']}"},
    )  # fmt: skip
    print(f"a whole job, submit to end ({args.run_runs} runs)")
    medians = print_medians(runs, "(c) ray job submit", "of (c)")
    ratio = medians["(d) torchx run --wait"] / medians["(c) ray job submit"]
    print(f"  (d)/(c) = {ratio:.2f} (target <= {MAX_RUN_RATIO}) {verdict(ratio <= MAX_RUN_RATIO)}")

    probe = subprocess.run(
        [sys.executable, "-c", "import sys, torchx.schedulers.ray_scheduler as m;"
         " m.create_scheduler('t').run_opts(); print('ray' in sys.modules)"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    print(f"ray imported on the submitting side: {probe.stdout.strip()}")


if __name__ == "__main__":
    main()
