"""Launch, watch and stop TorchX apps from Python.

``from torchx.runner import get_runner`` is the entry point of the SDK; see
:mod:`torchx.runner.api`. The API module is imported on first attribute access so that
importing this package stays cheap.
"""

from torchx.runner import api

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.runner.api import Runner, get_runner

__all__ = ["Runner", "get_runner"]


def __getattr__(name: str) -> "Any":
    if name in __all__:
        return getattr(api, name)
    raise AttributeError(f"module 'torchx.runner' has no attribute {name!r}")
