"""The table of faults: injected, survived, lines lost; and what retries cost a permanent error.

Runs the fault tests (``pytest -m faults``: real restarts of slurmctld, dockerd, moto, the
MLflow server and the Ray dashboard through ``tools/restart.sh``, and the faults a proxy
in front of the real Kubernetes API server injects), each of which records its row, then
times ``torchx status`` of an app each backend does not know (and a real RBAC 403 on
Kubernetes, as the cluster's limited user) with the default
retry budget against the same command with retries off: retries must add under a second
to a permanent error (issue 24). Writes both tables to ``benchmarks/faults.md`` (shown in
the documentation) and prints them. Needs the backends up (``tools/*-up.sh``).

    python3 benchmarks/bench_faults.py [--runs N] [--no-tests]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import ROOT, time_command, verdict
from torchx_testsupport.batch import AWS_ENV
from torchx_testsupport.k8s.cluster import ADMIN, LIMITED

TABLE = ROOT / "benchmarks" / "faults.md"
BAR_S = 1.0
REQUIRE = {
    f"TORCHX_REQUIRE_{name}": "1" for name in ("DOCKER", "SLURM", "MOTO", "MLFLOW", "RAY", "K8S")
}


def run_fault_tests() -> list[dict[str, object]]:
    """Runs every ``faults`` test in the default hatch env; the rows they recorded."""
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "faults.jsonl"
        env = {**os.environ, **REQUIRE, "TORCHX_FAULT_RECORD": str(record)}
        subprocess.run(
            [sys.executable, "-m", "hatch", "run", "test", "-m", "faults", "-q",
             "tests", "packages/torchx-sched-k8s/tests"],
            cwd=ROOT, env=env, check=False,
        )  # fmt: skip
        if not record.exists():
            return []
        return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def _torchx() -> str:
    venv = ROOT / ".venv" / "bin" / "torchx"
    return str(venv if venv.exists() else Path(sys.executable).parent / "torchx")


def time_permanent_errors(runs: int) -> list[tuple[str, float, float]]:
    """(case, seconds with retries off, seconds with the default budget) per backend."""
    torchx = _torchx()
    k8s_env = {"KUBECONFIG": str(ADMIN)}
    cases = [
        ("slurm: unknown job id", ["status", "slurm://torchx/999999"], {}),
        ("local_docker: unknown app", ["status", "local_docker://torchx/nope-1"], {}),
        ("aws_batch: unknown job", ["status", "aws_batch://torchx/q:nope-1"], AWS_ENV),
        ("ray: unknown job", ["status", "ray://torchx/nope-1"], {}),
        ("kubernetes: unknown app", ["status", "kubernetes://torchx/default:batch:nope-1"],
         k8s_env),
        # the limited user may read only in `default`: a real RBAC refusal elsewhere
        ("kubernetes: 403 forbidden", ["status", "kubernetes://torchx/kube-system:batch:any-1"],
         {"KUBECONFIG": str(LIMITED)}),
    ]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        return [
            _timed(case, torchx, args, extra, runs=runs, cwd=tmp) for case, args, extra in cases
        ]


def _timed(
    case: str, torchx: str, args: list[str], extra: dict[str, str], *, runs: int, cwd: str
) -> tuple[str, float, float]:
    base = {k: v for k, v in os.environ.items() if k != "TORCHX_RETRY_S"}
    env = {**base, **extra, "TORCHX_HOME": os.path.join(cwd, "home")}
    off = time_command([torchx, *args], runs=runs, env={**env, "TORCHX_RETRY_S": "0"}, cwd=cwd)
    on = time_command([torchx, *args], runs=runs, env=env, cwd=cwd)
    return case, off, on


def render(rows: list[dict[str, object]], timings: list[tuple[str, float, float]]) -> str:
    lines = [
        "<!-- written by `python3 benchmarks/bench_faults.py`; do not edit by hand -->",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} Linux,"
        f" {os.cpu_count()} cores.",
        "",
        "| backend | fault injected | survived | lines lost | lines repeated | outcome |",
        "|---|---|---|---|---|---|",
    ]
    for row in sorted(rows, key=lambda r: (str(r["backend"]), str(r["fault"]))):
        outcome = str(row["outcome"]).replace("|", "/").replace("\n", " ")
        lines.append(
            f"| {row['backend']} | {row['fault']} | {'yes' if row['survived'] else 'NO'} |"
            f" {row['lost']} | {row['repeated']} | {outcome} |"
        )
    survived = sum(1 for r in rows if r["survived"])
    lost = sum(int(r["lost"]) for r in rows if isinstance(r["lost"], int))
    lines += ["", f"{survived} of {len(rows)} faults survived; {lost} log lines lost.", ""]
    if timings:
        lines += [
            "A permanent error with retries on (the default budget) against retries off:",
            "",
            "| case | retries off (s) | default budget (s) | added (s) | bar < 1 s |",
            "|---|---|---|---|---|",
        ]
        for case, off, on in timings:
            lines.append(
                f"| {case} | {off:.2f} | {on:.2f} | {on - off:+.2f} | {verdict(on - off < BAR_S)} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-tests", action="store_true", help="only time permanent errors")
    args = parser.parse_args()
    rows = [] if args.no_tests else run_fault_tests()
    timings = time_permanent_errors(args.runs)
    table = render(rows, timings)
    if rows:
        TABLE.write_text(table)
    print(table)


if __name__ == "__main__":
    main()
