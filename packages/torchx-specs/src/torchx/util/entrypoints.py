"""Entry-point discovery for every ``torchx.*`` plugin group, cached on disk.

Distributions find each other only through entry points (see ``docs/design.md``).
Scanning ``importlib.metadata`` costs several times a bare interpreter start, so the scan
result for all groups whose name starts with ``torchx`` is stored in a ``marshal`` file
under ``$TORCHX_HOME/cache/``. The file is keyed by the interpreter, ``sys.path`` and the
mtime of every ``sys.path`` entry: installing or removing a distribution rewrites the
directory that holds its ``.dist-info``, which changes the key and forces a rescan.
``TORCHX_NO_ENTRYPOINT_CACHE=1`` turns the cache off.

This module is imported on every CLI start, so it only imports ``os``, ``sys`` and
:mod:`torchx.util.startup.disk_cache`; everything else is imported on a cache miss or on load.
"""

import os
import sys

from torchx.util.startup import disk_cache
from torchx.util.startup.disk_cache import interpreter_tag

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "ENV_NO_ENTRYPOINT_CACHE",
    "EntryPointInfo",
    "distributions",
    "entry_points",
    "interpreter_tag",
    "invalidate_cache",
    "load",
    "load_group",
]

ENV_NO_ENTRYPOINT_CACHE = disk_cache.ENV_NO_CACHE
"""Set to ``1`` to scan ``importlib.metadata`` every time instead of using the cache."""

_CACHED_GROUP_PREFIX = "torchx"
_CACHE_FORMAT = 2  # bump when the layout of the cached data changes
_CACHE_NAME = "entrypoints"

# (group, name, value, dist, version) rows of every cached group, plus the distributions.
_Row = tuple[str, str, str, str, str]
_ScanResult = tuple[tuple[_Row, ...], tuple[tuple[str, str], ...]]

# In-process memo: {"key": cache key, "data": scan result} of the last lookup.
_memo: "dict[str, Any]" = {}


class EntryPointInfo(tuple[str, str, str, str, str]):
    """One entry point: ``name = value`` in ``group``, declared by ``dist`` ``version``.

    A plain tuple subclass (``NamedTuple`` semantics) so that this module does not need
    to import ``typing`` or ``collections`` at start-up.
    """

    __slots__ = ()
    _fields = ("name", "value", "group", "dist", "version")

    def __new__(
        cls, name: str, value: str, group: str, dist: str = "", version: str = ""
    ) -> "EntryPointInfo":
        return tuple.__new__(cls, (name, value, group, dist, version))

    @property
    def name(self) -> str:
        return self[0]

    @property
    def value(self) -> str:
        """``module.path:attr.path`` (the attribute part is optional)."""
        return self[1]

    @property
    def group(self) -> str:
        return self[2]

    @property
    def dist(self) -> str:
        """Name of the distribution that declares this entry point."""
        return self[3]

    @property
    def version(self) -> str:
        """Version of the distribution that declares this entry point."""
        return self[4]

    @property
    def module(self) -> str:
        """The module part of ``value``."""
        return self.value.split("[", 1)[0].split(":", 1)[0].strip()

    @property
    def attr(self) -> "str | None":
        """The attribute path after ``:`` in ``value``; ``None`` for a module-valued entry."""
        target = self.value.split("[", 1)[0]
        if ":" not in target:
            return None
        return target.split(":", 1)[1].strip() or None

    def load(self) -> "Any":
        """Imports the module and returns the attribute (or the module itself). A plugin of
        another distribution may log through ``logging`` itself: the CLI's logging
        configuration is in place before it loads."""
        if not (self.dist == "torchx" or self.dist.startswith("torchx-")):
            from torchx.util.log import ensure_configured

            ensure_configured()
        __import__(self.module)  # importlib.import_module, without importing importlib
        obj: Any = sys.modules[self.module]
        if getattr(obj, "TORCHX_PLUGIN_API", None) is not None:  # a plugin states its contract
            from torchx.util.plugin_api import check_plugin_api

            check_plugin_api(obj, f"{self.group}:{self.name}", self.dist, self.version)
        attr = self.attr
        if attr:
            for part in attr.split("."):
                obj = getattr(obj, part)
        return obj

    def _asdict(self) -> dict[str, str]:
        return dict(zip(self._fields, self, strict=True))

    def _replace(self, **changes: str) -> "EntryPointInfo":
        values = self._asdict()
        values.update(changes)
        return EntryPointInfo(**values)

    def __getnewargs__(self) -> tuple[str, str, str, str, str]:
        return (self[0], self[1], self[2], self[3], self[4])

    def __repr__(self) -> str:
        return (
            f"EntryPointInfo(name={self.name!r}, value={self.value!r}, group={self.group!r},"
            f" dist={self.dist!r}, version={self.version!r})"
        )


class _DeferredLoad:
    """A callable standing in for an entry point target until it is first called.

    Calling it imports the target and forwards the call; a module-valued entry point
    returns the module itself and ignores the arguments.
    """

    __slots__ = ("_loaded", "entry_point")

    def __init__(self, entry_point: EntryPointInfo) -> None:
        self.entry_point = entry_point
        self._loaded: Any = None

    @property
    def __name__(self) -> str:
        return self.entry_point.name

    def load(self) -> "Any":
        """The entry point's target (imported on first use)."""
        if self._loaded is None:
            self._loaded = self.entry_point.load()
        return self._loaded

    def __call__(self, *args: "Any", **kwargs: "Any") -> "Any":
        target = self.load()
        if self.entry_point.attr is None:
            return target
        return target(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<deferred entry point {self.entry_point.name} = {self.entry_point.value}>"


def _cache_key() -> "tuple[Any, ...]":
    """Everything the visible set of distributions depends on, besides the contents of
    the import path's directories (watched by their stamps).

    ``sys.path[0]`` (the script's directory, or the working directory for ``python -m``)
    is left out: it never holds installed distributions, and keying on it would miss the
    cache on every new working directory and whenever a file is written next to the
    script (``/tmp`` changes all the time).
    """
    path = tuple(p or "." for p in sys.path[1:] if isinstance(p, str))
    return (_CACHE_FORMAT, sys.version, sys.executable, path)


def _valid(data: object) -> bool:
    return isinstance(data, tuple) and len(data) == 2


def _normalize_dist_name(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _scan(
    groups_prefix: str = _CACHED_GROUP_PREFIX, exact_group: "str | None" = None
) -> "_ScanResult":
    """Reads entry points from installed distributions (the expensive part)."""
    from importlib import metadata

    rows: list[_Row] = []
    dists: list[tuple[str, str]] = []
    seen: set[str] = set()
    for dist in metadata.distributions():
        try:
            dist_name = dist.metadata["Name"] or ""
            version = dist.version or ""
        except Exception:  # noqa: S112 (a half-removed dist-info must not break discovery)
            continue
        normalized = _normalize_dist_name(dist_name)
        if not normalized or normalized in seen:
            continue  # shadowed by an earlier sys.path entry, like importlib.metadata
        seen.add(normalized)
        provides = False
        try:
            eps = list(dist.entry_points)
        except Exception:
            eps = []
        for ep in eps:
            matches = ep.group == exact_group if exact_group else ep.group.startswith(groups_prefix)
            if matches:
                provides = True
                rows.append((ep.group, ep.name, ep.value, dist_name, version))
        if provides or normalized.startswith("torchx"):
            dists.append((dist_name, version))
    rows.sort(key=lambda r: (r[0], _normalize_dist_name(r[3]), r[1]))
    dists.sort(key=lambda d: _normalize_dist_name(d[0]))
    return tuple(rows), tuple(dists)


def _scan_result() -> "_ScanResult":
    key = _cache_key()
    path = key[3]
    stamps = tuple(disk_cache.file_stamp(entry) for entry in path)
    if _memo.get("key") == (key, stamps):
        result: _ScanResult = _memo["data"]
        return result
    data = disk_cache.read_checked(_CACHE_NAME, key)
    if not _valid(data):
        data = _scan()
        # a read-only home must never break discovery: the scan result is still used
        disk_cache.write_checked(_CACHE_NAME, key, path, data)
    _memo["key"] = (key, stamps)
    _memo["data"] = data
    return data  # type: ignore[no-any-return]


def invalidate_cache() -> None:
    """Forgets the scan result, in memory and on disk (the next lookup rescans)."""
    _memo.clear()
    try:  # noqa: SIM105 (contextlib costs start-up time)
        os.unlink(disk_cache.cache_file(_CACHE_NAME))
    except OSError:
        pass


def entry_points(group: str) -> list[EntryPointInfo]:
    """The entry points of ``group``, ordered by distribution name, then entry name."""
    if group.startswith(_CACHED_GROUP_PREFIX):
        rows = _scan_result()[0]
    else:
        rows = _scan(exact_group=group)[0]
    return [EntryPointInfo(r[1], r[2], r[0], r[3], r[4]) for r in rows if r[0] == group]


def distributions() -> list[tuple[str, str]]:
    """``(name, version)`` of installed distributions that plug into torchx.

    That is every distribution providing a ``torchx*`` entry-point group or whose name
    starts with ``torchx``, sorted by name.
    """
    return list(_scan_result()[1])


def _warn_duplicate(group: str, name: str, kept: EntryPointInfo, dropped: EntryPointInfo) -> None:
    import logging

    logging.getLogger(__name__).warning(
        "entry point `%s` in group `%s` is declared by both %s and %s; using %s (%s)",
        name,
        group,
        dropped.dist,
        kept.dist,
        kept.dist,
        kept.value,
    )


_NO_DEFAULT = object()


def load_group(
    group: str,
    default: "dict[str, Callable[..., Any]] | None" = None,
    skip_defaults: bool = False,
) -> "dict[str, Callable[..., Any]]":
    """``{name: deferred callable}`` for every entry point in ``group``.

    Nothing is imported here: each value imports its target on first call. A
    module-valued entry (``foo = my.module``) returns the module when called.
    Always returns a dict (``{}`` for an empty group). ``default`` and
    ``skip_defaults`` are accepted for compatibility with older torchx: ``default``
    is returned for an empty group unless ``skip_defaults`` is set.
    """
    result: dict[str, Callable[..., Any]] = {}
    for ep in entry_points(group):
        previous = result.get(ep.name)
        if isinstance(previous, _DeferredLoad):
            _warn_duplicate(group, ep.name, ep, previous.entry_point)
        result[ep.name] = _DeferredLoad(ep)
    if not result and default is not None and not skip_defaults:
        return default
    return result


def load(group: str, name: str, default: "Any" = _NO_DEFAULT) -> "Any":
    """Imports and returns the target of entry point ``name`` in ``group``.

    Returns ``default`` when there is no such entry point; without a default that is a
    ``KeyError`` naming the group and the names that are available.
    """
    found = [ep for ep in entry_points(group) if ep.name == name]
    if found:
        return found[-1].load()
    if default is not _NO_DEFAULT:
        return default
    available = sorted({ep.name for ep in entry_points(group)})
    raise KeyError(
        f"no entry point `{name}` in group `{group}`;"
        f" available: {', '.join(available) if available else '<none installed>'}"
    )
