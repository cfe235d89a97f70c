"""Speed of ``local_docker``, side by side with ``docker run`` and upstream torchx 0.7.0.

Measures, in one run (medians; the floor and ours are interleaved so machine noise hits
both), against a running Docker daemon with the test image of ``tools/docker-up.sh``:

(a) floor: ``docker run --rm <image> echo hi``;
(b) ours: ``torchx run --wait -s local_docker --workspace '' utils.echo --image <image>``;
(c) upstream 0.7.0 doing (b) (it always waits on local schedulers) in ``.bench/upstream``;
(d) ours as a user types it from a small project directory, i.e. with the default
    workspace (the directory), unchanged since the first run: the build is skipped;
(e) ``Runner.dryrun`` of a 10,000-replica role on ``local_docker``, ours vs upstream;
(f) which commands import the docker SDK: none of ``--help``, ``builtins``, ``runopts``,
    ``run --dryrun -s local_docker --workspace ''`` may.

Targets: (b) <= 1.5x (a) and faster than (c); (e) >= 5x faster than upstream; (f) none.
A report, not a test: always exits 0. Containers it starts are deleted at the end.

    .venv/bin/python benchmarks/bench_docker.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

from _harness import (
    ROOT,
    bench_env,
    compile_sources,
    dryrun_median,
    ensure_upstream_venv,
    interleaved,
    print_medians,
    sdk_import_report,
    verdict,
)

OURS = ROOT / ".venv" / "bin"
IMAGE = os.environ.get("TORCHX_TEST_IMAGE", "torchx-test/python:3.11-r2")
LABEL = "torchx.pytorch.org/app-id"


def _cleanup() -> None:
    ids = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={LABEL}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    if ids:
        subprocess.run(["docker", "rm", "-f", *ids], capture_output=True, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="timed runs per command")
    args = parser.parse_args()

    upstream = ensure_upstream_venv() / "bin"
    compile_sources(OURS / "python")
    env = {k: v for k, v in bench_env().items() if not k.startswith("TORCHX")}
    with tempfile.TemporaryDirectory(prefix="bench-docker-") as tmp:
        env.update(TORCHX_HOME=os.path.join(tmp, "home"), LOGLEVEL="WARNING")
        project = os.path.join(tmp, "project")
        os.makedirs(project)
        for name in ("train.py", "model.py", "data.py"):
            with open(os.path.join(project, name), "w") as f:
                f.write("# a small project\n" * 200)
        echo = ["utils.echo", "--image", IMAGE, "--msg", "hi"]
        run = ["run", "--wait", "-s", "local_docker"]
        commands = {
            "docker run --rm": ["docker", "run", "--rm", IMAGE, "echo", "hi"],
            "ours": [str(OURS / "torchx"), *run, "--workspace", "", *echo],
            "ours, default workspace": [str(OURS / "torchx"), *run, *echo],
            "upstream 0.7.0": [
                str(upstream / "torchx"),
                "run",
                "-s",
                "local_docker",
                "--workspace",
                "",
                *echo,
            ],
        }
        try:
            samples = interleaved(commands, args.runs, env, project)
        finally:
            _cleanup()
        print(f"runs per command: {args.runs} (median; fastest in brackets)\n")
        med = print_medians(samples, "docker run --rm", "docker run")
        floor = med["docker run --rm"]
        ok_ratio = med["ours"] <= 1.5 * floor
        ok_upstream = med["ours"] < med["upstream 0.7.0"]
        print(
            f"\n(b) ours / docker run = {med['ours'] / floor:.2f}x (target <= 1.5x):"
            f" {verdict(ok_ratio)}"
        )
        print(
            f"    upstream / ours = {med['upstream 0.7.0'] / med['ours']:.2f}x (target > 1x):"
            f" {verdict(ok_upstream)}"
        )
        print(
            f"(d) default workspace, unchanged: {med['ours, default workspace'] / floor:.2f}x"
            " docker run"
        )

        dry_runs = max(3, args.runs // 2)
        ours_dry = dryrun_median(OURS / "python", "local_docker", {}, dry_runs, env)
        theirs_dry = dryrun_median(upstream / "python", "local_docker", {}, dry_runs, env)
        if ours_dry is not None and theirs_dry is not None:
            speedup = theirs_dry.dryrun / ours_dry.dryrun
            print(
                f"(e) dryrun of 10,000 replicas: ours {ours_dry.dryrun * 1e3:.1f} ms, upstream"
                f" {theirs_dry.dryrun * 1e3:.1f} ms: {speedup:.1f}x faster (target >= 5x):"
                f" {verdict(speedup >= 5)}"
            )

        probes = [
            ["--help"],
            ["builtins"],
            ["runopts"],
            ["run", "--dryrun", "-s", "local_docker", "--workspace", "", *echo],
        ]
        for argv in probes:
            report = sdk_import_report(OURS / "python", argv, ("docker",), env, project)
            print(f"(f) torchx {' '.join(argv)}: docker SDK {report}")
    sys.exit(0)


if __name__ == "__main__":
    main()
