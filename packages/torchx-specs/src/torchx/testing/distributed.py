"""A test case that runs a function on several local processes as one
``torch.distributed`` job (torch's elastic launcher), for code that needs a process
group. Needs torch, imported when a job runs."""

from __future__ import annotations

from collections.abc import Callable

from torchx.testing.fixtures import TestWithTmpDir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DistributedTestCase"]


class DistributedTestCase(TestWithTmpDir):
    """``self.run_ddp(world_size=2, fn=f)(args...)`` runs ``f(args...)`` on 2 local
    processes (a c10d rendezvous on a free port) and returns ``{rank: result}``; ``f``
    initialises its process group itself (``dist.init_process_group("gloo")``)."""

    def run_ddp(self, world_size: int, fn: Callable[..., Any]) -> Callable[..., dict[int, Any]]:
        from torch.distributed.launcher import LaunchConfig, elastic_launch

        config = LaunchConfig(
            min_nodes=1,
            max_nodes=1,
            nproc_per_node=world_size,
            rdzv_backend="c10d",
            rdzv_endpoint="localhost:0",
            max_restarts=0,
            monitor_interval=0.01,
        )
        launch: Callable[..., dict[int, Any]] = elastic_launch(config, entrypoint=fn)
        return launch
