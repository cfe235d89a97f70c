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
import sys
import tempfile

from _harness import (
    ROOT,
    DryrunTimes,
    bench_env,
    compile_sources,
    dryrun_median,
    ensure_module,
    ensure_upstream_venv,
    sdk_import_report,
    verdict,
)

OURS = ROOT / ".venv" / "bin"


def _report_dryrun(ours: DryrunTimes, theirs: DryrunTimes) -> None:
    print("10,000-replica role on kubernetes (median seconds)\n")
    print(f"{'':22}{'ours':>10}{'upstream 0.7.0':>18}{'speed-up':>10}")
    for name, mine, upstream in (
        ("Runner.dryrun", ours.dryrun, theirs.dryrun),
        ("print the dry run", ours.show, theirs.show),
    ):
        print(f"{name:<22}{mine:>10.3f}{upstream:>18.3f}{upstream / mine:>9.1f}x")
    print(f"(request text: ours {ours.chars / 1e6:.1f} MB, upstream {theirs.chars / 1e6:.1f} MB)")
    ok_a = ours.dryrun <= 0.5 and theirs.dryrun / ours.dryrun >= 10
    ok_b = theirs.show / ours.show >= 10
    print(f"\n(a) dryrun <= 0.5 s and >= 10x faster: {verdict(ok_a)}")
    print(f"(b) printing >= 10x faster: {verdict(ok_b)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs (upstream: 1 + 1 warm)")
    args = parser.parse_args()

    upstream = ensure_upstream_venv() / "bin"
    ensure_module(upstream, "kubernetes", "kubernetes")
    compile_sources(OURS / "python")
    env = {k: v for k, v in bench_env().items() if not k.startswith(("TORCHX", "KUBE"))}
    with tempfile.TemporaryDirectory(prefix="bench-k8s-") as tmp:
        env.update(TORCHX_HOME=os.path.join(tmp, "home"), KUBECONFIG=os.path.join(tmp, "none"))
        cfg = {"queue": "q"}
        ours = dryrun_median(OURS / "python", "kubernetes", cfg, args.runs, env, show=True)
        theirs = dryrun_median(upstream / "python", "kubernetes", cfg, 1, env, show=True)
        if ours is not None and theirs is not None:
            _report_dryrun(ours, theirs)
        for argv in (["--help"], ["builtins"], ["runopts"], ["runopts", "kubernetes"]):
            report = sdk_import_report(OURS / "python", argv, ("kubernetes", "docker"), env, tmp)
            print(f"(c) torchx {' '.join(argv)}: kubernetes/docker SDK {report}")
    sys.exit(0)


if __name__ == "__main__":
    main()
