"""An example TorchX plugin: a scheduler and a named resource (the component is in
:mod:`torchx_plugin_example.components`)."""

from __future__ import annotations

from typing import Any

from torchx.specs import Resource

TORCHX_PLUGIN_API = 1
"""The torchx plugin contract this plugin was built against."""

__all__ = ["TORCHX_PLUGIN_API", "create_scheduler", "example_small"]


def create_scheduler(session_name: str, **kwargs: Any) -> Any:
    """The ``example_local`` scheduler: TorchX's local scheduler under another name."""
    from torchx.schedulers.local_scheduler import create_scheduler as local

    return local(session_name, **kwargs)


def example_small() -> Resource:
    """A small named resource: 1 CPU, no GPU, 512 MB."""
    return Resource(cpu=1, gpu=0, memMB=512)
