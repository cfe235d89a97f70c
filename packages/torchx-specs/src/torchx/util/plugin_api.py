"""The plugin contract's version: which plugins this ``torchx-specs`` can load.

A plugin (a scheduler, tracker, named resource, component module or CLI subcommand found
through a ``torchx.*`` entry-point group) states the contract it was built against with a
module-level ``TORCHX_PLUGIN_API = N`` in the module its entry point names. Plugins that
state nothing (everything written for upstream TorchX) are loaded as they are.

The number changes only with a minor release of ``torchx-specs``, and only when a plugin
built for the old contract would break (an abstract method added, a signature changed):
the compatibility policy in docs/releasing.md says which versions go together.
"""

from __future__ import annotations

from types import ModuleType

from torchx._version import __version__

__all__ = [
    "MIN_PLUGIN_API",
    "PLUGIN_API",
    "PLUGIN_API_ATTR",
    "IncompatiblePluginError",
    "check_plugin_api",
]

PLUGIN_API = 1
"""The contract this ``torchx-specs`` offers."""

MIN_PLUGIN_API = 1
"""The oldest contract it still honours."""

PLUGIN_API_ATTR = "TORCHX_PLUGIN_API"
"""The module attribute in which a plugin states its contract."""


class IncompatiblePluginError(ImportError):
    """A plugin was built for a contract this ``torchx-specs`` does not offer."""


def check_plugin_api(module: ModuleType, entry: str, dist: str, version: str) -> None:
    """Raises :class:`IncompatiblePluginError` (one line: the plugin, its distribution and
    version, and the ``torchx-specs`` it needs) unless ``module``'s stated contract is one
    this ``torchx-specs`` honours."""
    stated = getattr(module, PLUGIN_API_ATTR, None)
    if stated is None or (isinstance(stated, int) and MIN_PLUGIN_API <= stated <= PLUGIN_API):
        return

    owner = f"{dist} {version}".strip() or module.__name__
    if isinstance(stated, int) and stated > PLUGIN_API:
        need = "a newer torchx-specs (pip install -U torchx-specs)"
    else:
        package = dist or module.__name__
        need = f"a {package} release for torchx-specs {__version__} (pip install -U {package})"
    raise IncompatiblePluginError(
        f"plugin `{entry}` ({owner}) was built for torchx plugin API {stated!r}, but"
        f" torchx-specs {__version__} offers {MIN_PLUGIN_API}..{PLUGIN_API}; it is not"
        f" loaded: install {need}"
    )
