"""A real ``dist.ddp -j 1x2`` job: torchrun starts two CPU workers that all_reduce over gloo."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from torchx.runner import get_runner
from torchx.specs import AppState

TRAIN = textwrap.dedent(
    """\
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    print(f"rank={rank} world={world} sum={value.item()}", flush=True)
    dist.destroy_process_group()
    """
)


@pytest.mark.slow
def test_ddp_all_reduce_on_local_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert importlib.util.find_spec("torch"), "this test needs torch: pip install torch (CPU)"
    for key in list(os.environ):
        if key.startswith("TORCHX"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "torchx_home"))
    # torchrun and python of this interpreter's environment come first on the job's PATH
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)

    with get_runner() as runner:
        handle = runner.run_component(
            "dist.ddp", ["-j", "1x2", "--script", "train.py"], "local_cwd"
        )
        status = runner.wait(handle, wait_interval=30)
        logs = "".join(runner.log_lines(handle, "train", k=0))
    assert status is not None and status.state == AppState.SUCCEEDED, f"{status}\n{logs}"
    results = sorted(re.findall(r"rank=(\d) world=(\d) sum=([\d.]+)", logs))
    assert results == [("0", "2", "3.0"), ("1", "2", "3.0")], logs
