"""torchx.distributed as apps call it: plain python (a world of one) and under torchrun
with two processes on gloo, rank 0 going first through a real barrier."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import os, sys
from torchx import distributed as d
device = d.init_pg(backend="auto")
out = sys.argv[1]
with d.on_rank0_first():
    seen = open(out).read() if os.path.exists(out) else ""
    with open(out, "a") as f:
        f.write(f"{d.rank()} saw {seen.count('end-')}\n")
        f.write(f"end-{d.rank()}\n")
result = [d.rank(), d.world_size(), d.local_rank(), d.is_rank0(), d.is_local_rank0(), device,
          d.local_device()]
# one file per rank: two processes printing to one pipe may interleave their lines
with open(f"{out}.rank{d.rank()}", "w") as f:
    f.write(" ".join(map(str, result)))
"""


def test_plain_python_is_a_world_of_one(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(SCRIPT)
    subprocess.run(
        [sys.executable, str(script), str(tmp_path / "order.txt")],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    result = (tmp_path / "order.txt.rank0").read_text().split()
    assert result == ["0", "1", "0", "True", "True", "cpu", "cpu"]


def test_two_processes_under_torchrun_rank0_first(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(SCRIPT)
    order = tmp_path / "order.txt"
    out = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(script), str(order)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    results = [(tmp_path / f"order.txt.rank{r}").read_text().split()[:5] for r in (0, 1)]
    assert results == [["0", "2", "0", "True", "True"], ["1", "2", "1", "False", "False"]]
    # rank 1 entered its block only once rank 0 had finished its own
    assert order.read_text().splitlines() == ["0 saw 0", "end-0", "1 saw 1", "end-1"]
