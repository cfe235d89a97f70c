"""How long ``torchx check`` takes when every backend is configured but down.

Two cases, each a real ``torchx check`` of every installed scheduler plus the mlflow and
fsspec trackers: "down" (every service on 127.0.0.1 at a port nothing listens on: refused
at once) and "unreachable" (every service at 192.0.2.1, a documentation-only address that
is black-holed or unroutable: connections hang until the probes give up). Bar: at most
6 s each (issue 23). The floor ``python -c pass`` is shown for scale. A report, not a
test: always exits 0.

    .venv/bin/python benchmarks/bench_check.py [--runs N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _harness import bench_env, time_command, verdict
from torchx_testsupport import all_backends_down_env

BAR_S = 6.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    torchx = str(Path(sys.executable).parent / "torchx")
    floor = time_command([sys.executable, "-c", "pass"], runs=args.runs)
    print(f"{'case':<14} {'median s':>9} {'x floor':>8}  bar {BAR_S:g} s")
    for case, host in (("down", "127.0.0.1"), ("unreachable", "192.0.2.1")):
        with tempfile.TemporaryDirectory() as tmp:
            env = bench_env({**bench_env(), **all_backends_down_env(tmp, host=host)})
            took = time_command([torchx, "check"], runs=args.runs, env=env, cwd=tmp)
        print(f"{case:<14} {took:>9.2f} {took / floor:>8.1f}  {verdict(took <= BAR_S)}")
    print(f"(floor: python -c pass {floor * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
