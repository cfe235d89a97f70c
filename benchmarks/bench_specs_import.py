"""``import torchx.specs`` cost as a ratio of a bare interpreter start.

Target: at most 3.6x ``python -c pass`` in a clean venv holding only the torchx-specs wheel
(``dataclasses`` + ``typing`` alone cost about 3x). Upstream torchx 0.7.0 is measured side by
side in its own venv. Prints a report; exits 0 (a report, not a timed test).

Usage: python benchmarks/bench_specs_import.py [--runs N]
"""

from __future__ import annotations

import argparse

from _harness import ensure_clean_venv, ensure_upstream_venv, time_command, verdict

TARGET = 3.6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()

    ours = ensure_clean_venv("specs-only", ("torchx-specs",)) / "bin" / "python"
    upstream = ensure_upstream_venv() / "bin" / "python"

    rows = []
    for label, python in (("ours", ours), ("upstream 0.7.0", upstream)):
        floor = time_command([str(python), "-c", "pass"], args.runs)
        cost = time_command([str(python), "-c", "import torchx.specs"], args.runs)
        rows.append((label, floor, cost, cost / floor))

    print(f"{'venv':<16}{'floor ms':>10}{'import ms':>11}{'ratio':>8}")
    for label, floor, cost, ratio in rows:
        print(f"{label:<16}{floor * 1e3:>10.1f}{cost * 1e3:>11.1f}{ratio:>7.2f}x")
    ours_ratio = rows[0][3]
    print(
        f"import torchx.specs: {ours_ratio:.2f}x floor (target <= {TARGET}x: "
        f"{verdict(ours_ratio <= TARGET)}); upstream {rows[1][3]:.2f}x"
    )


if __name__ == "__main__":
    main()
