"""Dry-run speed of ``kubernetes``, side by side with upstream torchx 0.7.0.

Measures, in one run (medians), for a 10,000-replica role with no cluster configured:

(a) ``Runner.dryrun(app, "kubernetes", cfg={"queue": "q"})``, ours vs upstream;
(b) printing that dry run (``str(info)``, the request ``torchx run --dryrun`` shows),
    ours vs upstream;
(c) which light commands import the kubernetes or docker SDK: none of ``--help``,
    ``builtins``, ``runopts``, ``runopts kubernetes`` may.

Targets: (a) <= 0.5 s and >= 10x faster than upstream; (b) >= 10x faster than upstream;
(c) none. The upstream venv gets the ``kubernetes`` client installed (its scheduler needs
it). A report, not a test: always exits 0.

    .venv/bin/python benchmarks/bench_k8s.py [--runs N]
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
    ensure_upstream_venv,
    sdk_modules_imported,
    verdict,
)

OURS = ROOT / ".venv" / "bin"

SCRIPT = textwrap.dedent(
    """
    import logging, statistics, sys, time, warnings
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Resource, Role

    runner = get_runner()
    role = Role(name="w", image="img:1", entrypoint="python", args=["-m", "train"],
                num_replicas=10_000, resource=Resource(cpu=1, gpu=0, memMB=512))
    app = AppDef("big", [role])
    info = runner.dryrun(app, "kubernetes", cfg={"queue": "q"})
    str(info)
    dry, show = [], []
    for _ in range(int(sys.argv[1])):
        start = time.perf_counter()
        info = runner.dryrun(app, "kubernetes", cfg={"queue": "q"})
        dry.append(time.perf_counter() - start)
        start = time.perf_counter()
        text = str(info)
        show.append(time.perf_counter() - start)
    print(statistics.median(dry), statistics.median(show), len(text))
    """
)


def _measure(python: str, runs: int, env: dict[str, str]) -> tuple[float, float, int]:
    out = subprocess.run(
        [python, "-c", SCRIPT, str(runs)], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[-3]), float(out[-2]), int(out[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs (upstream: 1 + 1 warm)")
    args = parser.parse_args()

    upstream = ensure_upstream_venv() / "bin"
    if subprocess.run([str(upstream / "python"), "-c", "import kubernetes"],
                      capture_output=True, check=False).returncode:  # fmt: skip
        subprocess.run([str(upstream / "python"), "-m", "pip", "install", "-q", "kubernetes"],
                       check=True)  # fmt: skip
    compile_sources(OURS / "python")
    env = {k: v for k, v in bench_env().items() if not k.startswith(("TORCHX", "KUBE"))}
    with tempfile.TemporaryDirectory(prefix="bench-k8s-") as tmp:
        env.update(TORCHX_HOME=os.path.join(tmp, "home"), KUBECONFIG=os.path.join(tmp, "none"))
        ours_dry, ours_show, ours_len = _measure(str(OURS / "python"), args.runs, env)
        theirs_dry, theirs_show, theirs_len = _measure(str(upstream / "python"), 1, env)
        print("10,000-replica role on kubernetes (median seconds)\n")
        print(f"{'':22}{'ours':>10}{'upstream 0.7.0':>18}{'speed-up':>10}")
        for name, ours, theirs in (
            ("Runner.dryrun", ours_dry, theirs_dry),
            ("print the dry run", ours_show, theirs_show),
        ):
            print(f"{name:<22}{ours:>10.3f}{theirs:>18.3f}{theirs / ours:>9.1f}x")
        print(f"(request text: ours {ours_len / 1e6:.1f} MB, upstream {theirs_len / 1e6:.1f} MB)")
        ok_a = ours_dry <= 0.5 and theirs_dry / ours_dry >= 10
        ok_b = theirs_show / ours_show >= 10
        print(f"\n(a) dryrun <= 0.5 s and >= 10x faster: {verdict(ok_a)}")
        print(f"(b) printing >= 10x faster: {verdict(ok_b)}")
        for argv in (["--help"], ["builtins"], ["runopts"], ["runopts", "kubernetes"]):
            clean = not sdk_modules_imported(
                OURS / "python", argv, ("kubernetes", "docker"), env, tmp
            )
            print(f"(c) torchx {' '.join(argv)}: kubernetes/docker SDK"
                  f" {'not ' if clean else ''}imported: {verdict(clean)}")  # fmt: skip
    sys.exit(0)


if __name__ == "__main__":
    main()
