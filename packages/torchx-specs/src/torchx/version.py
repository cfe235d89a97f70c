"""The version shared by every torchx distribution (the number lives in
``torchx._version``) and the default image of the built-in components.
"""

from torchx._version import __version__

__all__ = ["__version__", "get_torchx_image"]

_DEFAULT_IMAGE_REPO = "ghcr.io/pytorch/torchx"


def get_torchx_image(version: str | None = None) -> str:
    """The default container image for built-in components.

    A distribution may override it by registering ``get_torchx_image`` in the
    ``torchx.version`` entry-point group (a callable taking the version string).
    """
    version = version or __version__
    from torchx.util.entrypoints import load

    override = load("torchx.version", "get_torchx_image", default=None)
    if override is not None:
        return str(override(version))
    return f"{_DEFAULT_IMAGE_REPO}:{version}"


def __getattr__(name: str) -> str:
    if name == "TORCHX_IMAGE":
        return get_torchx_image()
    raise AttributeError(f"module 'torchx.version' has no attribute {name!r}")
