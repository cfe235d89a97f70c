"""A Slurm time-limit warning (``-cfg signal=USR1@N``) reaching every process of a
``dist.ddp`` replica, as Slurm's cgroup delivers it: the launcher, started with the
signal ignored by the Slurm scheduler, outlives it and exits as its worker does; a worker
that saves on it exits 0. Run here with real torch (the real cluster's case is in
tests/slurm/test_slurm_attempts.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from torchx.components import dist
from torchx.schedulers._slurm.request import launcher_ignores_warning
from torchx.specs import macros


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it (torchrun starts its workers in new sessions)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rpartition(")")[2].split()[1])
            parents.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += parents.get(tree[-1], [])
    return tree


SAVES_ON_THE_WARNING = """
import signal, sys, time
def saved(*_):
    print("saved", flush=True)
    sys.exit(0)
signal.signal(signal.SIGUSR1, saved)
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


def test_torchrun_outlives_a_warning_its_worker_handles(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(textwrap.dedent(SAVES_ON_THE_WARNING))
    role = dist.ddp(script="train.py", j="1x1").roles[0]
    values = macros.Values(img_root="", app_id="w", replica_id="0", rank0_env="NO_SUCH_VAR")
    entrypoint, args = launcher_ignores_warning(role.entrypoint, values.apply(role).args, "USR1@55")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.Popen(
        [entrypoint, *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # torchrun prefixes the worker's lines
        seen.append(line)
        if line.rstrip().endswith("ready"):
            break
    assert seen and seen[-1].rstrip().endswith("ready"), seen
    for pid in _tree(proc.pid):  # every process of the replica, as Slurm's cgroup has it
        os.kill(pid, signal.SIGUSR1)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert any(line.rstrip().endswith("saved") for line in out.splitlines()), out
