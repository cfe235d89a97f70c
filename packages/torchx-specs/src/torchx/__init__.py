"""TorchX: describe an app once, run it on any scheduler.

This package is shared by every ``torchx-*`` distribution; see ``torchx._namespace``.
"""

from torchx._namespace import extend_path
from torchx.version import __version__, get_torchx_image

__path__ = extend_path(__path__, __name__)

__all__ = ["IMAGE", "__version__"]


def __getattr__(name: str) -> str:
    # Resolved lazily: the image may be overridden through the ``torchx.version``
    # entry-point group, which must not be scanned at import time.
    if name == "IMAGE":
        return get_torchx_image()
    raise AttributeError(f"module 'torchx' has no attribute {name!r}")
