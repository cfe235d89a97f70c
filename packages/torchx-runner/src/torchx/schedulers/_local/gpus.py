"""Splitting the host's GPUs among local replicas (``auto_set_cuda_visible_devices``)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from torchx.util.log import get_logger

log = get_logger(__name__)


def cuda_device_count() -> int:
    """Number of GPUs listed by ``nvidia-smi -L``; 0 (with a warning) when it is unusable.

    ``nvidia-smi`` instead of ``torch.cuda.device_count()`` so launching needs no torch.
    """
    try:
        result = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, check=True, timeout=60
        )
    except FileNotFoundError:
        log.warning("`nvidia-smi` was not found on PATH; assuming this host has no GPUs")
        return 0
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        detail = getattr(e, "stderr", None) or e
        log.warning("`nvidia-smi -L` failed (%s); assuming this host has no GPUs", detail)
        return 0
    return sum(1 for line in result.stdout.splitlines() if line.strip())


def allocate_cuda_devices(
    roles: Sequence[tuple[int, int]], device_count: int
) -> list[list[str | None]] | None:
    """Gives every GPU-requesting replica its own consecutive range of device indices.

    ``roles`` is ``(num_replicas, gpus_per_replica)`` per role, in app order. Returns, per
    role and replica, the ``CUDA_VISIBLE_DEVICES`` value (``None`` for roles without GPUs),
    or ``None`` when the host has fewer devices than the app requests in total.

    >>> allocate_cuda_devices([(1, 2), (3, 1)], 8)
    [['0,1'], ['2', '3', '4']]
    """
    requested = sum(n * max(g, 0) for n, g in roles)
    if requested > device_count:
        return None
    result: list[list[str | None]] = []
    next_idx = 0
    for num_replicas, gpus in roles:
        if gpus <= 0:
            result.append([None] * num_replicas)
            continue
        values: list[str | None] = []
        for _ in range(num_replicas):
            values.append(",".join(str(i) for i in range(next_idx, next_idx + gpus)))
            next_idx += gpus
        result.append(values)
    return result


UNSET_WARNING = """
======================================================================
Several replicas request GPUs but `CUDA_VISIBLE_DEVICES` is not set:
they may all use the same devices (e.g. CUDA out-of-memory errors).
Set the run option `auto_set_cuda_visible_devices=True` to give each
replica its own share of this host's GPUs.
======================================================================"""


def not_enough_warning(available: int, requested: int) -> str:
    return f"""
======================================================================
Cannot auto-set `CUDA_VISIBLE_DEVICES`: this host has {available} GPU(s)
but the app requests {requested}. Request fewer GPUs or use a bigger host.
======================================================================"""
