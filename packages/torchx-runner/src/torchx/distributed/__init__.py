"""Helpers an app calls to find its place in a ``torch.distributed`` job (upstream's
``torchx.distributed``): its rank, the world size, its device, a process group that works
whether the script was started by ``torchrun``/TorchX or as plain ``python``, and blocks
that run on rank 0 (or each node's local rank 0) before the others.

Every helper also works outside a distributed job, where the process is rank 0 of a world
of one. This module needs torch, which the app installs; TorchX itself does not import it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Literal

import torch
import torch.distributed as dist

from torchx.util.cuda import has_cuda_devices

__all__ = [
    "Backend",
    "init_pg",
    "is_local_rank0",
    "is_rank0",
    "local_cuda_device",
    "local_device",
    "local_rank",
    "on_local_rank0_first",
    "on_rank0_first",
    "rank",
    "world_size",
]

Backend = Literal["nccl", "gloo", "auto"]


def local_rank() -> int:
    """This process's rank on its node (``LOCAL_RANK``, set by torchrun and TorchX); 0 when
    it is not set, with a warning if a process group exists (then 0 may well be wrong)."""
    value = os.environ.get("LOCAL_RANK")
    if value is not None:
        return int(value)
    if dist.is_available() and dist.is_initialized():
        warnings.warn(
            "a torch.distributed process group is initialized but LOCAL_RANK is not set;"
            " local_rank() returns 0. Start the script with torchrun or torchx (or set"
            " LOCAL_RANK) so that each process knows its place on the node.",
            stacklevel=2,
        )
    return 0


def local_cuda_device() -> torch.device:
    """``cuda:<local rank>``: the GPU this process uses on its node."""
    return torch.device(f"cuda:{local_rank()}")


def local_device() -> torch.device:
    """The device for this process's tensors: with a process group, its local GPU when
    the group runs on NCCL, else the CPU; without one, ``cuda`` when this host has a GPU."""
    if dist.is_available() and dist.is_initialized():
        return local_cuda_device() if dist.get_backend() == "nccl" else torch.device("cpu")
    return torch.device("cuda") if has_cuda_devices() else torch.device("cpu")


def rank() -> int:
    """The global rank: the process group's, else ``RANK``, else 0. Never raises."""
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    return int(os.environ.get("RANK", "0"))


def world_size() -> int:
    """The number of processes: the process group's, else ``WORLD_SIZE``, else 1."""
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_world_size())
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_rank0() -> bool:
    """Whether this is global rank 0 (a process outside a distributed job is)."""
    return rank() == 0


def is_local_rank0() -> bool:
    """Whether this is rank 0 of its node: the one to do per-node work once."""
    return local_rank() == 0


def init_pg(backend: Backend = "auto", **kwargs: Any) -> torch.device:
    """Initializes the default process group and returns this process's device.

    Started by torchrun or TorchX, the group spans the job (the launcher's environment
    says where rank 0 listens); started as plain ``python``, it is a group of one on this
    host, so the same script runs both ways. ``"auto"`` picks NCCL when this host has GPUs
    and torch has NCCL, else gloo. ``kwargs`` go to ``torch.distributed.init_process_group``.
    """
    if backend == "auto":
        backend = "nccl" if has_cuda_devices() and dist.is_nccl_available() else "gloo"
    if dist.is_torchelastic_launched():
        dist.init_process_group(backend=backend, **kwargs)
    else:
        os.environ["MASTER_ADDR"] = "localhost"
        os.environ["MASTER_PORT"] = "0"  # any free port: nobody else joins
        dist.init_process_group(backend=backend, rank=0, world_size=1, **kwargs)
    return local_cuda_device() if backend == "nccl" else torch.device("cpu")


@contextmanager
def _first(leader: bool) -> Iterator[None]:
    """The block runs on the leaders first, then (past a barrier) on the others."""
    grouped = dist.is_available() and dist.is_initialized()
    if grouped and not leader:
        dist.barrier()
    try:
        yield
    finally:
        if grouped and leader:
            dist.barrier()


def on_rank0_first() -> AbstractContextManager[None]:
    """Runs the block on rank 0 first and on the other ranks once rank 0 has finished it
    (a barrier), such as a download the others then read. Without a process group, the
    block simply runs."""
    return _first(is_rank0())


def on_local_rank0_first() -> AbstractContextManager[None]:
    """As :func:`on_rank0_first`, with each node's local rank 0 going first (per-node work
    such as unpacking a dataset into the node's local disk)."""
    return _first(is_local_rank0())
