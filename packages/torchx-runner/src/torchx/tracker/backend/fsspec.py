"""A tracker backend that stores runs as plain files on any fsspec filesystem.

Layout under the root directory, one directory per run (named by the base32 of the
run id, so any id is a valid file name)::

    <root>/<b32(run_id)>/metadata/<time>-<rand>    {"metadata": {...}}
    <root>/<b32(run_id)>/artifacts/<time>-<rand>   {"name", "path", "metadata"}
    <root>/<b32(run_id)>/sources/<b32(source_id)>  one artifact name per line ("" = none)
    <root>/<b32(run_id)>/descendants/<b32(child)>  same, written on the parent's side

Registered as the ``fsspec`` tracker (entry point ``torchx.tracker``); the launcher passes
``TORCHX_TRACKER_FSSPEC_CONFIG`` / ``[tracker:fsspec] config`` to :func:`create`.
"""

from __future__ import annotations

import base64
import json
import os
import posixpath
import time
from collections.abc import Iterable, Mapping
from typing import Any

from torchx.tracker.api import RunLineage, TrackerArtifact, TrackerBase, TrackerSource
from torchx.util.readiness import not_configured, not_ready, probe, ready, write_problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from torchx.util.readiness import ReadinessCheck

TORCHX_PLUGIN_API = 1
"""The torchx plugin contract this module was built against (torchx.util.plugin_api)."""

__all__ = ["FsspecTracker", "check_ready", "create", "generate_filename"]

_CONFIG_SUFFIXES = (".conf", ".cfg", ".ini", ".txt", ".properties", ".env")
"""A missing path with one of these suffixes is a mistyped config file, not a new root."""

_REQUIRED_KEYS = ("protocol", "root_path")


def _b32(text: str) -> str:
    return base64.b32encode(text.encode("utf-8")).decode("ascii")


def _unb32(name: str) -> str | None:
    try:
        return base64.b32decode(name.encode("ascii")).decode("utf-8")
    except (ValueError, UnicodeError):
        return None


def generate_filename() -> str:
    """A new entry file name: the nanosecond clock (so names sort in write order) and a
    random suffix (so writers racing in the same nanosecond never collide)."""
    return f"{time.time_ns()}-{os.urandom(4).hex()}"


def _entry_sort_key(path: str) -> tuple[int, str]:
    """Orders entry files by the nanosecond timestamp that starts their name."""
    name = posixpath.basename(path)
    digits = name.split("-", 1)[0]
    return (int(digits) if digits.isdigit() else 0, name)


class FsspecTracker(TrackerBase):
    """Tracker storing metadata, artifacts and lineage of runs under ``root_dir`` of ``fs``.

    ``root_dir`` must exist. Every write is a new small file, so several processes may
    track the same run at once; reads merge the files in write order (later wins).
    """

    def __init__(self, fs: AbstractFileSystem, root_dir: str) -> None:
        if not fs.isdir(root_dir):
            raise FileNotFoundError(
                f"tracker root directory {root_dir!r} does not exist; create it first (or pass"
                " the directory itself as the tracker config, which creates it)"
            )
        self._fs = fs
        self._root = root_dir.rstrip("/") or "/"

    def __repr__(self) -> str:
        return f"<FsspecTracker: root_path={self._root}>"

    # ------------------------------------------------------------------ layout

    def _run_dir(self, run_id: str) -> str:
        return posixpath.join(self._root, _b32(run_id))

    def _write_entry(self, run_id: str, kind: str, payload: Mapping[str, object]) -> None:
        directory = posixpath.join(self._run_dir(run_id), kind)
        self._fs.makedirs(directory, exist_ok=True)
        name = generate_filename()
        with self._fs.open(posixpath.join(directory, name), "w") as f:
            f.write(json.dumps(payload))

    def _read_entries(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        directory = posixpath.join(self._run_dir(run_id), kind)
        if not self._fs.isdir(directory):
            return []
        entries: list[dict[str, Any]] = []
        for path in sorted(self._fs.ls(directory, detail=False), key=_entry_sort_key):
            with self._fs.open(path, "r") as f:
                entries.append(json.load(f))
        return entries

    def _read_lines(self, path: str) -> list[str]:
        if not self._fs.isfile(path):
            return []
        with self._fs.open(path, "r") as f:
            return str(f.read()).splitlines()

    def _add_line(self, path: str, line: str) -> None:
        lines = self._read_lines(path)
        if line in lines:
            return
        self._fs.makedirs(posixpath.dirname(path), exist_ok=True)
        with self._fs.open(path, "w") as f:
            f.write("".join(f"{existing}\n" for existing in [*lines, line]))

    def _linked_runs(
        self, run_id: str, kind: str, artifact_name: str | None
    ) -> list[tuple[str, str | None]]:
        directory = posixpath.join(self._run_dir(run_id), kind)
        if not self._fs.isdir(directory):
            return []
        links: list[tuple[str, str | None]] = []
        for path in sorted(self._fs.ls(directory, detail=False)):
            other = _unb32(posixpath.basename(path))
            if other is None:
                continue
            for line in self._read_lines(path):
                artifact = line or None
                if artifact_name is None or artifact == artifact_name:
                    links.append((other, artifact))
        return links

    # ------------------------------------------------------------------ TrackerBase

    def add_artifact(
        self,
        run_id: str,
        name: str,
        path: str,
        metadata: Mapping[str, object] | None = None,
    ) -> None:
        self._write_entry(
            run_id,
            "artifacts",
            {"name": name, "path": path, "metadata": dict(metadata) if metadata else None},
        )

    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        result: dict[str, TrackerArtifact] = {}
        for entry in self._read_entries(run_id, "artifacts"):
            result[entry["name"]] = TrackerArtifact(
                name=entry["name"], path=entry["path"], metadata=entry.get("metadata")
            )
        return result

    def add_metadata(self, run_id: str, **kwargs: object) -> None:
        self._write_entry(run_id, "metadata", {"metadata": kwargs})

    def metadata(self, run_id: str) -> Mapping[str, object]:
        merged: dict[str, object] = {}
        for entry in self._read_entries(run_id, "metadata"):
            merged.update(entry.get("metadata") or {})
        return merged

    def add_source(self, run_id: str, source_id: str, artifact_name: str | None = None) -> None:
        """Records that ``run_id`` derives from ``source_id`` (optionally one artifact).

        Repeated calls add to the record (duplicates are ignored). When the source run
        is tracked here too, it also gets the reverse ``descendants`` entry.
        """
        line = artifact_name or ""
        if "\n" in line:
            raise ValueError(f"artifact name {artifact_name!r} must not contain a newline")
        run_dir = self._run_dir(run_id)
        self._add_line(posixpath.join(run_dir, "sources", _b32(source_id)), line)
        parent_dir = self._run_dir(source_id)
        if self._fs.isdir(parent_dir):
            self._add_line(posixpath.join(parent_dir, "descendants", _b32(run_id)), line)

    def sources(self, run_id: str, artifact_name: str | None = None) -> Iterable[TrackerSource]:
        return [
            TrackerSource(source_run_id=source, artifact_name=artifact)
            for source, artifact in self._linked_runs(run_id, "sources", artifact_name)
        ]

    def descendants(self, run_id: str) -> list[str]:
        """Ids of the tracked runs that named ``run_id`` as a source."""
        return sorted({child for child, _ in self._linked_runs(run_id, "descendants", None)})

    def lineage(self, run_id: str) -> RunLineage:
        """The run's direct sources and descendants (walk further by calling again)."""
        return RunLineage(
            run_id=run_id, sources=list(self.sources(run_id)), descendants=self.descendants(run_id)
        )

    def run_ids(self, **kwargs: str) -> Iterable[str]:
        """Ids of every tracked run; ``parent_run_id=X`` keeps runs with source ``X``."""
        unknown = set(kwargs) - {"parent_run_id"}
        if unknown:
            raise ValueError(
                f"unsupported run_ids filter(s) {', '.join(sorted(unknown))};"
                " FsspecTracker accepts only parent_run_id"
            )
        parent = kwargs.get("parent_run_id")
        ids: list[str] = []
        for path in sorted(self._fs.ls(self._root, detail=False)):
            run_id = _unb32(posixpath.basename(path))
            if run_id is None or not self._fs.isdir(path):
                continue
            if parent is not None and not self._fs.isfile(
                posixpath.join(path, "sources", _b32(parent))
            ):
                continue
            ids.append(run_id)
        return ids


def _parse_config(text: str, source: str) -> dict[str, Any]:
    """``key = value`` lines (``#`` comments) into a dict; ``a.b = v`` nests as ``{a: {b: v}}``."""
    config: dict[str, Any] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(
                f"{source}:{lineno}: {raw!r} is not a `key = value` line"
                " (expected e.g. `protocol = file` and `root_path = /data/tracker`)"
            )
        parts = key.split(".")
        if not all(parts):
            raise ValueError(f"{source}:{lineno}: invalid key {key!r} (empty dotted component)")
        node = config
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"{source}:{lineno}: key {key!r} conflicts with {part!r}")
            node = child
        node[parts[-1]] = value.strip()
    return config


def create(config: str | None) -> FsspecTracker:
    """Builds the tracker from its config string (the ``torchx.tracker`` factory).

    ``config`` is either

    * the path/URL of a config file with ``protocol`` and ``root_path`` lines, plus any
      ``fsspec.filesystem(protocol, **kwargs)`` arguments (dotted keys nest)::

          protocol = s3
          root_path = my-bucket/torchx/tracker
          client_kwargs.endpoint_url = http://localhost:9000

      ``root_path`` must already exist; or
    * a directory path or URL (``/tmp/tracker_data``, ``memory://runs``): runs are stored
      right there, the filesystem comes from the URL and the directory is created when
      missing. (A missing path ending in ``.conf``/``.cfg``/``.ini``/``.txt`` is reported
      as a missing config file instead.)
    """
    if not config:
        raise ValueError(
            "the fsspec tracker needs a config: a directory to store runs in (e.g."
            " TORCHX_TRACKER_FSSPEC_CONFIG=/tmp/tracker_data) or a file with `protocol` and"
            " `root_path` lines"
        )
    fs, path, from_file = _store(config)
    if not from_file and not fs.isdir(path):
        fs.makedirs(path, exist_ok=True)
    return FsspecTracker(fs, path)


def _store(config: str) -> tuple[AbstractFileSystem, str, bool]:
    """``(filesystem, root directory, whether a config file named them)`` of ``config``
    (the root may not exist yet). A config file must have ``protocol`` and ``root_path``;
    a missing path that looks like a config file is reported as one."""
    import fsspec

    fs, path = fsspec.core.url_to_fs(config)
    if fs.isfile(path):
        with fs.open(path, "r") as f:
            settings = _parse_config(str(f.read()), config)
        missing = [k for k in _REQUIRED_KEYS if k not in settings]
        if missing:
            raise ValueError(
                f"fsspec tracker config {config} lacks {', '.join(missing)}; it needs"
                " `protocol = <fsspec protocol>` and `root_path = <directory>` lines"
            )
        protocol, root = settings.pop("protocol"), settings.pop("root_path")
        return fsspec.filesystem(protocol, **settings), root, True
    if not fs.isdir(path) and path.endswith(_CONFIG_SUFFIXES):
        raise FileNotFoundError(f"fsspec tracker config file {config} does not exist")
    return fs, path, False


def check_ready(config: str | None) -> list[ReadinessCheck]:
    """``torchx check`` of this tracker: its store exists and can be written, or can be
    created (nothing is created or written here)."""

    fix = (
        "point [tracker:fsspec] config (or TORCHX_TRACKER_FSSPEC_CONFIG) at a directory you"
        " can write, or at a file with `protocol` and `root_path` lines"
    )
    if not config:
        return [not_configured("store", "no config: the fsspec tracker needs a directory", fix)]

    def store() -> ReadinessCheck:
        fs, path, from_file = _store(config)
        exists = fs.isdir(path)
        if from_file and not exists:
            return not_ready("store", f"root_path {path} of {config} does not exist", fix)
        problem = write_problem(path, directory=True) if _is_local(fs) else None
        if problem:
            return not_ready("store", problem, fix)
        if not exists:
            return ready("store", f"{config}: will be created on the first tracked run")
        return ready("store", f"{config}: runs are stored there")

    return [probe("store", store, fix)]


def _is_local(fs: AbstractFileSystem) -> bool:
    protocol = fs.protocol
    return "file" in (protocol if isinstance(protocol, (tuple, list)) else (protocol,))
