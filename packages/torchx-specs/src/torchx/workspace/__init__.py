"""Workspaces: build local code into what a job runs (see ``torchx.workspace.api``)."""

from torchx._namespace import extend_path
from torchx.workspace import api

__path__ = extend_path(__path__, __name__)

from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs import Workspace
    from torchx.workspace.api import (
        MultiWorkspaceMixin,
        WorkspaceMixin,
        pin_workspace_images,
        walk_workspace,
    )

__all__ = [
    "MultiWorkspaceMixin",
    "Workspace",
    "WorkspaceMixin",
    "pin_workspace_images",
    "walk_workspace",
]


def __getattr__(name: str) -> Any:
    # Loaded on first use so that importing a workspace implementation module stays cheap.
    if name in __all__:
        return getattr(api, name)
    raise AttributeError(f"module 'torchx.workspace' has no attribute {name!r}")
