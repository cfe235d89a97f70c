"""The single source of the version shared by every torchx distribution.

Bump it with ``python tools/bump_version.py NEW_VERSION``; that tool also rewrites the
inter-package dependency pins so all distributions move in lockstep.
"""

__version__ = "0.8.0"

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
