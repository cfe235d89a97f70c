"""The files of a workspace: which ones (``.torchxignore``), walked without following links
out, copied into private files, counted against the size limit.

Shared by every way a workspace is shipped (directory copies, image builds, Ray packages,
Slurm job dirs) and by ``Workspace`` itself; it needs nothing of the app model, so the
contract can use it without an import cycle.
"""

from __future__ import annotations

import os
import posixpath
import stat
import sys
import time
from collections.abc import Iterable, Iterator
from fnmatch import fnmatchcase
from typing import IO, Any

from torchx.util.log import get_logger

__all__ = [
    "DEFAULT_WORKSPACE_MAX_MB",
    "ENV_WORKSPACE_MAX_MB",
    "TORCHX_IGNORE",
    "LocalFileSystem",
    "WorkspaceProgress",
    "WorkspaceTooLargeError",
    "copy_into_new_file",
    "copy_workspace",
    "is_url",
    "walk_workspace",
]

logger = get_logger(__name__)

TORCHX_IGNORE = ".torchxignore"
"""Name of the file listing (``.dockerignore`` style) what a workspace build leaves out."""

_NEVER_IGNORED = (".", "Dockerfile.torchx")


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


def is_url(workspace: str) -> bool:
    """Whether ``workspace`` is an fsspec URL (``s3://...``, ``memory://...``) rather than
    a local path (``file://`` URLs count as local paths)."""
    return "://" in workspace and not workspace.startswith("file://")


def _filesystem(workspace: str) -> tuple[Any, str]:
    """(filesystem, root path) for a local path or ``file://`` URL, else through fsspec
    (imported only then)."""
    if not is_url(workspace):
        path = workspace[len("file://") :] if workspace.startswith("file://") else workspace
        return LocalFileSystem(), os.path.abspath(os.path.expanduser(path))
    protocol = workspace.split("://", 1)[0]
    try:
        import fsspec
    except ImportError:
        raise ValueError(
            f"workspace {workspace!r} is a URL, which needs fsspec: pip install fsspec"
            " (or torchx-specs[fsspec]), or pass a local directory"
        ) from None
    try:
        fs, root = fsspec.core.url_to_fs(workspace)
    except (ImportError, ValueError) as e:
        from fsspec.registry import known_implementations

        known = known_implementations.get(protocol)
        if known is None:
            raise ValueError(
                f"workspace {workspace!r}: fsspec knows no protocol {protocol!r}; fix the URL"
                " or pass a local directory"
            ) from None
        package = str(known["class"]).split(".", 1)[0]
        raise ValueError(
            f"workspace {workspace!r}: protocol {protocol!r} needs {package}, which is not"
            f" installed (pip install {package}); {' '.join(str(e).split())}"
        ) from None
    return fs, root.rstrip("/") or "/"


def copy_workspace(workspace: str, target: str, ignore_name: str | None = TORCHX_IGNORE) -> None:
    """Copies the files of ``workspace`` (path or fsspec URL) into the directory ``target``.

    What the workspace's ``ignore_name`` file excludes is skipped (``None``: no ignore
    file, everything is copied); symbolic links are
    copied as links (never followed, so nothing outside the workspace is read); sockets,
    FIFOs and devices are left out with a warning; the owner's permission bits are kept
    (scripts stay executable) and nothing is readable by others. Past the size limit
    (``TORCHX_WORKSPACE_MAX_MB``) the copy stops with one line saying so.
    """
    fs, root = _filesystem(workspace)
    if not fs.isdir(root):
        raise FileNotFoundError(f"workspace {workspace!r} is not a directory")
    progress = WorkspaceProgress(workspace, "copying")
    own = os.path.abspath(target)  # a job_dir inside the workspace is not copied into itself
    real_target = os.path.realpath(target)
    for directory, dirs, files in walk_workspace(fs, root, ignore_name):
        for name in [d for d, info in dirs.items() if os.path.abspath(info["name"]) == own]:
            del dirs[name]
        relative = posixpath.relpath(directory.replace(os.sep, "/"), root.replace(os.sep, "/"))
        out_dir = target if relative == "." else os.path.join(target, *relative.split("/"))
        os.makedirs(out_dir, mode=0o700, exist_ok=True)
        if os.path.realpath(out_dir) != os.path.join(real_target, *_parts(relative)):
            raise ValueError(  # a link made by another workspace entry: never written through
                f"workspace {workspace!r}: {relative!r} of its copy is a link; nothing is"
                " written through links"
            )
        for name, info in files.items():
            destination = os.path.join(out_dir, name)
            progress.add_file(info["name"])
            if info.get("type") == "link":
                os.symlink(info["destination"], destination)
                continue
            size = info.get("size")
            progress.reserve(size if isinstance(size, int) else 0, info["name"])
            with fs.open(info["name"], "rb") as src:
                copy_into_new_file(src, destination, progress, info["name"])
            mode = info.get("mode")
            os.chmod(destination, (mode & 0o700) if isinstance(mode, int) else 0o600)
    progress.done()


_CHUNK = 1 << 20
_ZEROS = bytes(_CHUNK)


def copy_into_new_file(src: Any, destination: str, progress: Any, path: str) -> None:
    """Copies the open file ``src`` (``path``, for messages) into ``destination``, a private
    file (0600) never written through a link, each chunk counted against the size limit
    by ``progress`` (a :class:`WorkspaceProgress`). Chunks of zeros are skipped over, not
    written, so a sparse file (a preallocated checkpoint, a disk image) stays sparse."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    with os.fdopen(os.open(destination, flags, 0o600), "wb") as dst:
        while chunk := src.read(_CHUNK):
            progress.add_bytes(len(chunk), path)
            if chunk == _ZEROS[: len(chunk)]:
                dst.seek(len(chunk), os.SEEK_CUR)  # a hole: the file system reads zeros
            else:
                dst.write(chunk)
        dst.truncate()  # a file that ends in a hole gets its full length


def _parts(relative: str) -> list[str]:
    return [] if relative == "." else relative.split("/")
