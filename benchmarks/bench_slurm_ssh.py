"""``torchx status`` of a job submitted from a laptop over ssh, side by side with ``ssh``.

Against the cluster of ``tools/slurm-up.sh`` and the login node of ``tools/sshd-up.sh``,
as the unprivileged laptop user (no Slurm tools, its own venv of this checkout), with one
finished job submitted through the login node. Medians of, interleaved in one run:

(a) floor: ``ssh torchx-login-node squeue -j ID``, as the user would type it (its ssh
    configuration shares no connection: a full login each time);
(b) ours: ``torchx status slurm://torchx/ID@torchx-login-node`` over the connection TorchX
    keeps open (a Python start, the CLI, one squeue through it);
(c) for reference: the same squeue through that shared connection (``ssh -o
    ControlPath=...``): the part of (b) that is not TorchX.

Target: (b) <= 1.5x (a). Needs root (it switches users). A report, not a test: exits 0.

    python benchmarks/bench_slurm_ssh.py [--runs N]
"""

from __future__ import annotations

import argparse
import re
import sys
import time

from _harness import ROOT, bench_env, compile_sources, interleaved, print_medians, verdict
from torchx_testsupport import laptop

MAX_RATIO = 1.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    problem = laptop.problem()
    if problem:
        sys.exit(f"bench_slurm_ssh: {problem}")
    laptop.make_venv(ROOT)
    compile_sources("/usr/bin/python3")  # as a wheel install would have them
    submit = laptop.run(
        "torchx", "run", "--wait", "-s", "slurm", "-cfg", f"ssh={laptop.LOGIN_NODE}",
        "utils.sh", "true",
    )  # fmt: skip
    found = re.search(r"slurm://torchx/(\d+)@\S+", submit.stdout)
    if submit.returncode != 0 or not found:
        sys.exit(f"bench_slurm_ssh: the job was not submitted: {submit.stdout}{submit.stderr}")
    handle, job_id = found.group(0), found.group(1)
    time.sleep(1)  # let the accounting record the finished job
    # the socket TorchX's connection left in the laptop user's private directory
    sockets = f"/tmp/torchx-ssh-{_uid()}/%C"
    commands = {
        "ssh login squeue -j ID (floor)": laptop.argv(
            ["ssh", laptop.LOGIN_NODE, "squeue", "-h", "-j", job_id]
        ),
        "torchx status (ours)": laptop.argv(["torchx", "status", handle]),
        "ssh over the shared connection": laptop.argv(
            ["ssh", "-o", f"ControlPath={sockets}", laptop.LOGIN_NODE, "squeue", "-h", "-j", job_id]
        ),
    }
    samples = interleaved(commands, args.runs, bench_env())
    print(f"{args.runs} runs each, medians [fastest]; {handle}")
    medians = print_medians(samples, "ssh login squeue -j ID (floor)", "floor")
    ratio = medians["torchx status (ours)"] / medians["ssh login squeue -j ID (floor)"]
    ok = verdict(ratio <= MAX_RATIO)
    print(f"torchx status / ssh squeue: {ratio:.2f}x (target <= {MAX_RATIO}x) {ok}")


def _uid() -> int:
    import pwd

    return pwd.getpwnam(laptop.USER).pw_uid


if __name__ == "__main__":
    main()
