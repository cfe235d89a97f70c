"""On-disk cache of the components ``torchx builtins`` lists: names and one-line purposes.

Listing components means importing every component module and linting its source, which
costs several interpreter start-ups; the answer only changes when a component source file,
a component package directory, the installed distributions or torchx itself change. So
the names are stored in ``$TORCHX_HOME/cache/`` together with the mtime and size of every
file and directory they were computed from (a new module changes its directory's mtime),
and reused while all of those are unchanged. A discovery that hit load errors is not
cached, so its warnings show every time. ``TORCHX_NO_ENTRYPOINT_CACHE=1`` disables it,
like the entry-point cache.
"""

import os
import sys

from torchx.util.entrypoints import entry_points
from torchx.util.startup import disk_cache
from torchx.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["load_component_names", "store_component_names"]

_FORMAT = 3  # (name, purpose) pairs, purposes as plain text
_CACHE_NAME = "components"
_COMPONENTS_GROUP = "torchx.components"
_BUILTIN_MODULE = "torchx.components"
# torchx modules whose code decides what a valid component is.
_DISCOVERY_MODULES = ("torchx.specs.finder", "torchx.specs.file_linter")


def _key() -> "tuple[Any, ...]":
    groups = tuple(tuple(ep) for ep in entry_points(_COMPONENTS_GROUP))
    paths = tuple(p for p in sys.path if isinstance(p, str))
    return (_FORMAT, __version__, sys.version, sys.executable, paths, groups)


def load_component_names() -> "list[tuple[str, str]] | None":
    """The cached ``(name, purpose)`` pairs, or ``None`` when there is no valid entry."""
    if disk_cache.cache_disabled(_CACHE_NAME):
        return None
    listing = disk_cache.read_checked(_CACHE_NAME, _key())
    return [(str(n), str(p)) for n, p in listing] if listing is not None else None


def _base_modules() -> list[str]:
    modules = [ep.module for ep in entry_points(_COMPONENTS_GROUP)]
    return modules or [_BUILTIN_MODULE]


def _watched_paths() -> "Iterable[str]":
    """Source files and package directories the listing was computed from."""
    bases = _base_modules()
    for name, module in list(sys.modules.items()):
        relevant = name in _DISCOVERY_MODULES or any(
            name == base or name.startswith(base + ".") for base in bases
        )
        if not relevant or module is None:
            continue
        source = getattr(module, "__file__", None)
        if source:
            yield source
        for directory in getattr(module, "__path__", None) or []:
            yield from _directories(directory)


def _directories(root: str) -> "Iterable[str]":
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        yield dirpath


def store_component_names(listing: "list[tuple[str, str]]") -> None:
    """Caches ``(name, purpose)`` pairs computed by the finder in this process (best
    effort)."""
    if disk_cache.cache_disabled(_CACHE_NAME):
        return
    disk_cache.write_checked(_CACHE_NAME, _key(), _watched_paths(), tuple(map(tuple, listing)))
