"""Whether this host can put tensors on a GPU (upstream's ``torchx.util.cuda``).

torch is imported when the question is asked, not with the module: torchx-specs does not
depend on torch, and importing it costs a second.
"""

from __future__ import annotations

__all__ = ["has_cuda_devices"]


def has_cuda_devices() -> bool:
    """True when the installed torch is built with CUDA and this host has at least one
    CUDA device: a CUDA build alone (``torch.cuda.is_available()`` on some hosts) does not
    mean a tensor can be allocated on a GPU here."""
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.device_count() > 0)
