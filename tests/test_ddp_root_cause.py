"""The root cause of a DDP failure is the failing rank's own error, with real torchrun and
gloo: rank 1 raises, rank 0 then fails in a collective (gloo's "Connection closed by
peer"). Both ranks share one replica's log (``-j 1x2``, one node with two workers, the
usual shape), where the last traceback is rank 0's, and torchrun's own "first observed
failure" may be rank 0 (when it saw both gone at once, or rank 0 first); the root cause
must still be rank 1's.
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


SLOW_EXIT = """\
import atexit
import os
import time

import torch.distributed as dist

dist.init_process_group("gloo")
pids = dist.get_world_size() * [None]
dist.all_gather_object(pids, os.getpid())


def leave_after_rank0() -> None:
    # rank 1 exits slowly (as with data loader workers or a tracker's upload to finish):
    # its group closes first, rank 0's barrier fails and rank 0 is gone before it
    dist.destroy_process_group()
    while True:
        try:
            os.kill(pids[0], 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


if dist.get_rank() == 1:
    atexit.register(leave_after_rank0)
    [][3]  # IndexError: rank 1's own mistake
dist.barrier()
"""


def test_the_peer_not_the_rank_whose_collective_lost_it(torch_backend: Backend) -> None:
    """torchrun names the worker it saw fail first: here rank 0, whose barrier lost its
    peer while rank 1, which raised, was still exiting (torchrun then stopped it)."""
    (torch_backend.cwd / "slow.py").write_text(SLOW_EXIT)
    run = torch_backend.run("--wait", "dist.ddp", "-j", "1x2", "--script", "slow.py")
    handle = run.stdout.split()[0]
    log = torch_backend.torchx("log", handle).stdout
    named = log[log.index("Root Cause (first observed failure)") :].splitlines()
    assert any(line.split()[-5:] == ["rank", ":", "0", "(local_rank:", "0)"] for line in named[:6])
    failure = json.loads(torch_backend.torchx("status", "--json", handle).stdout)["failure"]
    assert failure["rank"] == 1, failure
    assert failure["message"] == "IndexError: list index out of range", failure
    assert "[][3]" in failure["traceback"] and "barrier" not in failure["traceback"], failure
