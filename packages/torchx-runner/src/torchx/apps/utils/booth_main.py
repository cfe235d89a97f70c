"""Evaluates the Booth function and stores the result; run by the ``utils.booth`` component.

``f(x1, x2) = (x1 + 2*x2 - 7)^2 + (2*x1 + x2 - 5)^2`` (minimum 0 at (1, 3)) is a cheap
objective for trying hyper-parameter search. The value is stored as
``{"booth_eval": f}`` at ``FsspecResultTracker(tracker_base)[trial_idx]``.
"""

from __future__ import annotations

import argparse
import sys

from torchx.runtime.tracking import FsspecResultTracker


def booth(x1: float, x2: float) -> float:
    return (x1 + 2 * x2 - 7) ** 2 + (2 * x1 + x2 - 5) ** 2


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="evaluate the Booth function")
    parser.add_argument("--x1", type=float, required=True, help="first coordinate")
    parser.add_argument("--x2", type=float, required=True, help="second coordinate")
    parser.add_argument("--trial_idx", type=int, default=0, help="key to store the result under")
    parser.add_argument(
        "--tracker_base",
        type=str,
        default="/tmp/torchx-util-booth",  # noqa: S108 (upstream default)
        help="fsspec URL or directory to store results in",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    value = booth(args.x1, args.x2)
    FsspecResultTracker(args.tracker_base)[args.trial_idx] = {"booth_eval": value}
    print(f"booth({args.x1}, {args.x2}) = {value}")


if __name__ == "__main__":
    main(sys.argv[1:])
