"""Which TorchX is installed: this project's distributions, upstream's single ``torchx``
distribution (PyPI's ``torchx`` is upstream's), or both in one environment.

Upstream's distribution ships every module itself (``torchx/specs/api.py`` and the rest),
while this project's ``torchx`` is a meta-package without modules; installing both makes the
later install overwrite the other's files, which fails in confusing ways.

Imports inside functions are deliberate: ``import torchx.specs`` stays close to bare Python
(packages/torchx-specs/tests/test_specs_import_cost.py).
"""

from __future__ import annotations

__all__ = ["UPSTREAM_MARKER", "upstream_torchx_version", "version_line"]

UPSTREAM_MARKER = "torchx/specs/api.py"
"""A file upstream's ``torchx`` distribution owns and this project's meta-package never does."""


def upstream_torchx_version() -> str | None:
    """The version of upstream TorchX's ``torchx`` distribution if it is installed here."""
    from importlib import metadata

    try:
        dist = metadata.distribution("torchx")
    except metadata.PackageNotFoundError:
        return None
    files = dist.files or []
    if any(str(f).replace("\\", "/") == UPSTREAM_MARKER for f in files):
        return str(dist.version)
    return None


def version_line() -> str:
    """``torchx --version``: this project's version and which TorchX it is, plus a warning
    line when upstream's ``torchx`` is installed in the same environment."""
    from torchx.version import __version__

    line = f"torchx-{__version__} (torchx-cli: the multi-distribution TorchX, not PyPI's `torchx`)"
    upstream = upstream_torchx_version()
    if upstream is not None:
        line += (
            f"\nwarning: upstream TorchX {upstream} (PyPI's `torchx`) is installed here too and"
            " overwrites this project's modules; run `pip uninstall torchx`, then reinstall"
            " torchx-cli and your backends (see `torchx check`)"
        )
    return line
