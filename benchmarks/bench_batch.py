"""Speed of ``torchx status aws_batch://...`` against moto's emulator, side by side with its
physical floor and with upstream torchx 0.7.0.

Measures, in one run (medians over interleaved runs, so machine noise hits all alike),
against the emulator of ``tools/moto-up.sh`` (with Docker up, which runs the job):

(a) floor: a bare Python script that imports boto3, makes a Batch client from the
    environment and makes exactly the API calls ``torchx status`` makes (ListJobs by name,
    DescribeJobs of the job, DescribeJobs of its node job) and prints the state;
(b) ours: ``torchx status aws_batch://torchx/<queue>:<job>`` from the README's ``.venv``;
(c) upstream 0.7.0 doing (b) in ``.bench/upstream`` (boto3 added to it when missing).

Targets: (b) <= 1.3x (a) and faster than (c). A report, not a test: always exits 0.

    .venv/bin/pip install ./packages/torchx-sched-batch   # once, after changes
    bash tools/docker-up.sh && bash tools/moto-up.sh
    .venv/bin/python benchmarks/bench_batch.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap

from _harness import (
    ROOT,
    bench_env,
    compile_sources,
    ensure_module,
    ensure_upstream_venv,
    interleaved,
    print_medians,
    verdict,
)
from torchx_testsupport.batch import AWS_ENV, create_queue, emulator_answers  # tools/testsupport

OURS = ROOT / ".venv" / "bin"
IMAGE = os.environ.get("TORCHX_TEST_IMAGE", "torchx-test/python:3.11-r2")
QUEUE = "torchx-bench"

FLOOR = textwrap.dedent(
    """
    import sys
    import boto3

    queue, name = sys.argv[1].rsplit("/", 1)[1].split(":", 1)
    batch = boto3.session.Session().client("batch")
    (summary,) = batch.list_jobs(
        jobQueue=queue, filters=[{"name": "JOB_NAME", "values": [name]}]
    )["jobSummaryList"]
    job = batch.describe_jobs(jobs=[summary["jobId"]])["jobs"][0]
    batch.describe_jobs(jobs=[summary["jobId"] + "#0"])
    print(job["status"])
    """
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command")
    args = parser.parse_args()
    if not emulator_answers():
        raise SystemExit("no AWS emulator answers; run tools/docker-up.sh and tools/moto-up.sh")

    import boto3

    upstream = ensure_upstream_venv() / "bin"
    ensure_module(upstream, "boto3", f"boto3=={boto3.__version__}")
    compile_sources(OURS / "python")
    env = {k: v for k, v in bench_env().items() if not k.startswith(("TORCHX", "AWS_"))}
    env.update(AWS_ENV, LOGLEVEL="WARNING")
    os.environ.update(AWS_ENV)
    create_queue(QUEUE)
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        env["TORCHX_HOME"] = os.path.join(tmp, "home")
        launched = subprocess.run(
            [str(OURS / "torchx"), "run", "--wait", "-s", "aws_batch", "-cfg", f"queue={QUEUE}",
             "--workspace", "", "utils.sh", "--image", IMAGE, "--memMB", "128", "true"],
            env=env, cwd=tmp, capture_output=True, text=True, check=True,
        )  # fmt: skip
        handle = launched.stdout.strip().splitlines()[-1]
        floor_path = os.path.join(tmp, "floor.py")
        with open(floor_path, "w") as f:
            f.write(FLOOR)
        commands = {
            "bare boto3 script": [str(OURS / "python"), floor_path, handle],
            "ours": [str(OURS / "torchx"), "status", handle],
            "upstream 0.7.0": [str(upstream / "torchx"), "status", handle],
        }
        samples = interleaved(
            commands, args.runs, env, ok=lambda p: p.returncode == 0 and "SUCCEEDED" in p.stdout
        )
    print(f"app {handle}; runs per command: {args.runs} (median; fastest in brackets)\n")
    med = print_medians(samples, "bare boto3 script", "floor")
    floor = med["bare boto3 script"]
    ok_ratio = med["ours"] <= 1.3 * floor
    ok_upstream = med["ours"] < med["upstream 0.7.0"]
    print(f"\nours / floor = {med['ours'] / floor:.2f}x (target <= 1.3x): {verdict(ok_ratio)}")
    print(
        f"upstream / ours = {med['upstream 0.7.0'] / med['ours']:.2f}x (target > 1x):"
        f" {verdict(ok_upstream)}"
    )
    sys.exit(0)


if __name__ == "__main__":
    main()
