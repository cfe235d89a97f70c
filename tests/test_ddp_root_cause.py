"""The root cause of a DDP failure is the failing rank's own error, with real torchrun and
gloo: rank 1 raises, rank 0 then fails in a collective (gloo's "Connection closed by
peer"). Both ranks share one replica's log (``-j 1x2``, one node with two workers, the
usual shape), where the last traceback is rank 0's; the root cause must still quote rank 1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from torchx_testsupport.backends import Backend, backend_for

SCRIPT = """\
import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 1:
    [][3]  # IndexError: rank 1's own mistake
dist.barrier()  # rank 0 waits here and fails when rank 1 is gone
"""
RUNS = 20


@pytest.fixture(params=["local_cwd", "slurm"])
def torch_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The backends whose replicas run in this environment (it has torch)."""
    with backend_for(request.param, tmp_path) as found:
        yield found


def _root_cause(backend: Backend) -> dict[str, object]:
    run = backend.run("--wait", "dist.ddp", "-j", "1x2", "--script", "fail.py")
    assert run.returncode != 0, run.stderr
    handle = run.stdout.split()[0]
    status = json.loads(backend.torchx("status", "--json", handle).stdout)
    failure: dict[str, object] = status["failure"]
    text = backend.torchx("status", handle).stdout
    failure["text"] = text
    return failure


def test_the_failing_ranks_own_exception_every_time(torch_backend: Backend) -> None:
    (torch_backend.cwd / "fail.py").write_text(SCRIPT)
    runs = RUNS if torch_backend.name == "local_cwd" else 4
    with ThreadPoolExecutor(2) as pool:  # two at a time: the machine is loaded, as users' are
        failures = list(pool.map(lambda _: _root_cause(torch_backend), range(runs)))
    for failure in failures:
        assert failure["rank"] == 1, failure
        assert failure["message"] == "IndexError: list index out of range", failure
        assert "[][3]" in str(failure["traceback"]) and "barrier" not in str(failure["traceback"])
        text = str(failure["text"])
        head = text[text.index("Root cause:") :]
        # the human view: rank 1's traceback first, then the log without torchrun's summary
        assert head.index("IndexError") < head.index("last lines of its log:")
        assert "Root Cause (first observed failure)" not in head
        assert "ChildFailedError" not in head
