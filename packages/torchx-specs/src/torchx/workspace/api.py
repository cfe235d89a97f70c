"""Workspaces: ship local code changes with a job without rebuilding its image by hand.

A scheduler that supports workspaces mixes in :class:`WorkspaceMixin`. Before submitting,
the runner calls :meth:`WorkspaceMixin.build_workspaces`, which builds every role's
``Role.workspace`` (a :class:`~torchx.specs.Workspace`) into something the scheduler can
run, typically a patched image whose name replaces ``role.image``.
"""

from __future__ import annotations

import abc
import os
import posixpath
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any, Generic, TypeVar

from torchx.specs import AppDef, CfgVal, Role, Workspace, runopts
from torchx.util.lazy_dataclass import dataclass
from torchx.util.log import get_logger

__all__ = [
    "ENV_WORKSPACE_MAX_MB",
    "TORCHX_IGNORE",
    "LocalFileSystem",
    "PkgInfo",
    "Workspace",
    "WorkspaceBuilder",
    "WorkspaceMixin",
    "WorkspaceProgress",
    "WorkspaceTooLargeError",
    "walk_workspace",
]

logger = get_logger(__name__)

TORCHX_IGNORE = ".torchxignore"
"""Name of the file listing (``.dockerignore`` style) what a workspace build leaves out."""

_NEVER_IGNORED = (".", "Dockerfile.torchx")

T = TypeVar("T")
PackageType = TypeVar("PackageType")
WorkspaceConfigType = TypeVar("WorkspaceConfigType")


@dataclass
class PkgInfo(Generic[PackageType]):
    """Deprecated: the result of a :class:`WorkspaceBuilder` build."""

    img: str
    lazy_overrides: dict[str, Any]
    metadata: PackageType

    def __post_init__(self) -> None:
        warnings.warn(
            "PkgInfo is deprecated and will be removed; use WorkspaceMixin instead",
            FutureWarning,
            stacklevel=3,
        )


@dataclass
class WorkspaceBuilder(Generic[PackageType, WorkspaceConfigType]):
    """Deprecated: builds a workspace into a package; use :class:`WorkspaceMixin` instead."""

    cfg: WorkspaceConfigType

    def __post_init__(self) -> None:
        warnings.warn(
            "WorkspaceBuilder is deprecated and will be removed; use WorkspaceMixin instead",
            FutureWarning,
            stacklevel=3,
        )

    def build_workspace(self, sync: bool = True) -> PkgInfo[PackageType]:
        """Builds the workspace; subclasses must override this."""
        raise NotImplementedError(
            f"{type(self).__name__} must override build_workspace(); WorkspaceBuilder is"
            " deprecated, implement WorkspaceMixin instead"
        )


class WorkspaceMixin(abc.ABC, Generic[T]):
    """Adds workspace builds to a scheduler.

    Implement :meth:`caching_build_workspace_and_update_role` (or, the older hook,
    :meth:`build_workspace_and_update_role`); ``T`` is the type of the image push plan
    returned by :meth:`dryrun_push_images`.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)

    def workspace_opts(self) -> runopts:
        """Run options of the workspace build (merged into the scheduler's run options)."""
        return runopts()

    def build_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """Builds the workspace of every role that has one, updating the roles in place.

        Roles with equal workspaces and images share one build.
        """
        build_cache: dict[object, object] = {}
        for role in roles:
            if not role.workspace:
                continue
            old_image = role.image
            self.caching_build_workspace_and_update_role(role, cfg, build_cache)
            if role.image != old_image:
                logger.info(self.built_message(role, old_image))

    def built_message(self, role: Role, old_image: str) -> str:
        """The log line saying what building ``role``'s workspace gave (overridable: a
        directory workspace says where it copied, not which image it replaced)."""
        return (
            f"Built workspace {role.workspace} of role `{role.name}`:"
            f" image {old_image} -> {role.image}"
        )

    def plan_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """What :meth:`build_workspaces` would do, without doing it (a dry run).

        Each role with a workspace gets the image a build would give it where that is
        known in advance, else a placeholder naming the folder and the base image
        (:meth:`planned_image`). Nothing is built, copied or contacted.
        """
        for role in roles:
            if role.workspace:
                planned = self.planned_image(role, cfg)
                if planned != role.image:
                    logger.info(
                        "dry run: workspace %s of role `%s` is not built (a real run builds"
                        " it): image %s -> %s",
                        role.workspace,
                        role.name,
                        role.image,
                        planned,
                    )
                role.image = planned

    def planned_image(self, role: Role, cfg: Mapping[str, CfgVal]) -> str:
        """The image ``role`` would run after its workspace is built (see plan_workspaces)."""
        return f"<{role.image} + workspace {role.workspace}>"

    def caching_build_workspace_and_update_role(
        self, role: Role, cfg: Mapping[str, CfgVal], build_cache: dict[object, object]
    ) -> None:
        """Builds ``role.workspace`` and points the role at the result.

        ``build_cache`` lives for one :meth:`build_workspaces` call. The default reuses the
        image built for an earlier role with the same workspace and image, and otherwise
        calls :meth:`build_workspace_and_update_role` on the project directory (several
        projects are first merged into a temporary directory).
        """
        workspace = role.workspace
        if not workspace:
            return
        key = ("image", workspace, role.image)
        cached = build_cache.get(key)
        if isinstance(cached, str):
            role.image = cached
            return
        self._build_from_workspace(role, workspace, cfg)
        build_cache[key] = role.image

    def _build_from_workspace(
        self, role: Role, workspace: Workspace, cfg: Mapping[str, CfgVal]
    ) -> None:
        if workspace.is_unmapped_single_project():
            self.build_workspace_and_update_role(role, next(iter(workspace.projects)), cfg)
            return
        import tempfile

        with tempfile.TemporaryDirectory(suffix="torchx_workspace_") as tmpdir:
            workspace.merge_into(tmpdir)
            self.build_workspace_and_update_role(role, tmpdir, cfg)

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Builds the directory ``workspace`` and updates ``role`` (usually ``role.image``).

        Older hook kept for existing implementations; new code overrides
        :meth:`caching_build_workspace_and_update_role`.
        """
        raise NotImplementedError(
            f"{type(self).__name__} cannot build workspaces: it overrides neither"
            " caching_build_workspace_and_update_role() nor build_workspace_and_update_role()"
        )

    def build_workspace_and_update_role2(
        self, role: Role, workspace: Workspace | str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Compatibility entry point of older runners: builds ``workspace`` for ``role``."""
        if isinstance(workspace, str):
            workspace = Workspace.from_str(workspace)
        if workspace:
            self._build_from_workspace(role, workspace, cfg)

    def dryrun_push_images(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> T:
        """Plans the image pushes that :meth:`push_images` will do for ``app``."""
        raise NotImplementedError(
            f"{type(self).__name__} does not push images (dryrun_push_images is not overridden)"
        )

    def push_images(self, images_to_push: T) -> None:
        """Pushes the images planned by :meth:`dryrun_push_images`."""
        raise NotImplementedError(
            f"{type(self).__name__} does not push images (push_images is not overridden)"
        )


def _read_ignore_patterns(fs: Any, path: str, ignore_name: str | None) -> list[str]:
    if ignore_name is None:
        return []
    ignore_path = posixpath.join(path, ignore_name)
    is_regular = getattr(fs, "is_regular", None) or fs.isfile  # local: not a link or FIFO
    if not is_regular(ignore_path):
        if fs.exists(ignore_path):  # a FIFO would block the read forever; a link could lead out
            logger.warning("ignoring %s: it is not a regular file", ignore_path)
        return []
    with fs.open(ignore_path, "rt") as f:
        lines = f.read(_MAX_IGNORE_FILE).splitlines()
    patterns = []
    for raw in lines:
        line = raw.partition("#")[0].strip()
        if not line or line == ".":
            continue
        patterns.append(line)
    return patterns


_MAX_IGNORE_FILE = 1 << 20  # characters read from an ignore file


def _normalize_pattern(pattern: str) -> str:
    return posixpath.normpath(pattern.lstrip("/")) if pattern.strip("/") else pattern


def _is_ignored(relpath: str, patterns: Iterable[str]) -> bool:
    """Whether ``relpath`` is ignored: the last pattern that matches decides."""
    from fnmatch import fnmatchcase

    relpath = posixpath.normpath(relpath)
    if relpath in _NEVER_IGNORED:
        return False
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        body = _normalize_pattern(pattern[1:] if negated else pattern)
        if fnmatchcase(relpath, body):
            ignored = not negated
    return ignored


class LocalFileSystem:
    """The fsspec calls :func:`walk_workspace` and a copy make, over local paths.

    Lets workspace builders copy or pack a local directory without importing fsspec.
    Nothing is followed: a symbolic link is reported as a ``link`` (kept as a link by
    every copy), and sockets, FIFOs and devices as ``other`` (skipped with a warning).
    Entries that cannot be read are collected in :attr:`unreadable`.
    """

    def __init__(self) -> None:
        self.unreadable: list[str] = []

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_regular(self, path: str) -> bool:
        """Whether ``path`` is a regular file itself (not a link, FIFO or device)."""
        import stat

        try:
            return stat.S_ISREG(os.lstat(path).st_mode)
        except OSError:
            return False

    def open(self, path: str, mode: str = "rb") -> IO[Any]:
        return open(path, mode, encoding="utf-8" if "t" in mode else None)

    def walk(
        self, path: str, detail: bool = True
    ) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
        """Top-down like ``os.walk``; names removed from the yielded ``dirs`` are pruned.

        File infos carry ``name``, ``type`` (``file``, ``link`` or ``other``), ``mode``
        and ``size``; a link's info also has ``destination`` (what it points to).
        """
        import stat

        del detail
        for directory, dirnames, filenames in os.walk(path, onerror=self._unreadable):
            dirs: dict[str, Any] = {}
            files: dict[str, Any] = {}
            for name in (*dirnames, *filenames):
                full = os.path.join(directory, name)
                try:
                    st = os.lstat(full)
                    mode = st.st_mode
                    if stat.S_ISDIR(mode):
                        dirs[name] = {"name": full, "type": "directory"}
                        continue
                    info = {"name": full, "type": "other", "mode": mode, "size": st.st_size}
                    if stat.S_ISREG(mode):
                        info["type"] = "file"
                    elif stat.S_ISLNK(mode):
                        info.update(type="link", destination=os.readlink(full), size=0)
                    files[name] = info
                except OSError as e:
                    self._unreadable(e)
            yield directory, dirs, files
            dirnames[:] = sorted(dirs)

    def _unreadable(self, error: OSError) -> None:
        self.unreadable.append(f"{error.filename} ({error.strerror})")


def walk_workspace(
    fs: Any, path: str, ignore_name: str | None = TORCHX_IGNORE
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Walks ``path`` on the fsspec filesystem ``fs`` like ``fs.walk(path, detail=True)``,
    leaving out what ``<path>/<ignore_name>`` ignores.

    The ignore file uses ``.dockerignore`` rules: ``#`` starts a comment, patterns are
    ``fnmatch`` globs over paths relative to ``path``, ``!pattern`` re-includes, and the last
    matching pattern wins. Ignored directories are not descended into. Sockets, FIFOs and
    devices that are not ignored are left out with one warning naming them, and so are
    entries that cannot be read.
    """
    patterns = _read_ignore_patterns(fs, path, ignore_name)
    special: list[str] = []
    for directory, dirs, files in fs.walk(path, detail=True):
        relpath = posixpath.relpath(directory, path)
        if _is_ignored(relpath, patterns):
            dirs.clear()
            continue
        for name in [d for d in dirs if _is_ignored(posixpath.join(relpath, d), patterns)]:
            del dirs[name]
        kept_files = {}
        for name, info in files.items():
            if _is_ignored(posixpath.join(relpath, name), patterns):
                continue
            if info.get("type") not in ("file", "link", None):
                special.append(info["name"])
                continue
            kept_files[name] = info
        yield directory, dirs, kept_files
    if special:
        logger.warning(
            "workspace %s: left out %d socket(s), FIFO(s) or device file(s): %s",
            path,
            len(special),
            _some(special),
        )
    unreadable = getattr(fs, "unreadable", None)
    if unreadable:
        logger.warning(
            "workspace %s: left out %d entries that cannot be read: %s",
            path,
            len(unreadable),
            _some(unreadable),
        )


def _some(items: list[str], shown: int = 5) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


ENV_WORKSPACE_MAX_MB = "TORCHX_WORKSPACE_MAX_MB"
"""Largest workspace (MB of file content) a copy or image build takes; ``0``: no limit."""

DEFAULT_WORKSPACE_MAX_MB = 4096


class WorkspaceTooLargeError(ValueError):
    """A workspace holds more than the size limit (:data:`ENV_WORKSPACE_MAX_MB`)."""


class WorkspaceProgress:
    """Counts what a workspace copy or pack has read: enforces the size limit and, when it
    takes a while, says so (a live line on a terminal, one line otherwise)."""

    SHOW_AFTER_S = 1.0

    def __init__(self, workspace: str, verb: str) -> None:
        import sys
        import time

        self.workspace = workspace
        self.verb = verb
        self.files = 0
        self.bytes = 0
        self.limit = _max_bytes()
        self._stream = sys.stderr
        self._live = self._stream.isatty()
        self._start = time.monotonic()
        self._next_show = self._start + self.SHOW_AFTER_S
        self._shown = False

    def add_file(self, path: str) -> None:
        self.files += 1
        self._maybe_show(path)

    def add_bytes(self, count: int, path: str) -> None:
        """Counts ``count`` more bytes read from ``path``; raises past the limit."""
        self.bytes += count
        if self.limit and self.bytes > self.limit:
            raise WorkspaceTooLargeError(
                f"workspace {self.workspace} holds more than {self.limit >> 20} MB (reached at"
                f" {path}); list what the job does not need in its ignore file"
                f" (.torchxignore, or .dockerignore for images) or raise"
                f" {ENV_WORKSPACE_MAX_MB} (0: no limit)"
            )
        self._maybe_show(path)

    def reserve(self, size: int, path: str) -> None:
        """Refuses, before anything is written, a file whose size (as the file system
        gives it: a sparse file's holes count) would take the copy past the limit."""
        if self.limit and self.bytes + size > self.limit:
            self.add_bytes(size, path)

    def _line(self) -> str:
        return (
            f"torchx: {self.verb} workspace {self.workspace}: {self.files} files,"
            f" {self.bytes / (1 << 20):.1f} MB"
        )

    def _maybe_show(self, path: str) -> None:
        import time

        now = time.monotonic()
        if now < self._next_show:
            return
        if self._live:
            self._stream.write("\r" + self._line() + "\x1b[K")
            self._stream.flush()
            self._next_show = now + 0.25
        else:
            self._stream.write(self._line() + " so far...\n")
            self._next_show = float("inf")  # once: logs are not a terminal
        self._shown = True

    def done(self) -> None:
        """Ends the progress line (only printed when the work took a while)."""
        if self._shown:
            self._stream.write(("\r" if self._live else "") + self._line() + ", done\n")
            self._stream.flush()


def _max_bytes() -> int:
    raw = os.environ.get(ENV_WORKSPACE_MAX_MB, "").strip()
    if not raw:
        return DEFAULT_WORKSPACE_MAX_MB << 20
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(
            f"{ENV_WORKSPACE_MAX_MB}={raw!r} is not a whole number of MB; unset it or give"
            " e.g. 8192 (0: no limit)"
        ) from None
    return max(value, 0) << 20
