"""Workspaces as plain directory copies, for schedulers that run from a shared filesystem.

A scheduler mixes one of these in to "build" a role's workspace by copying it
(``.torchxignore`` rules honoured) into a directory and pointing ``role.image`` at that
directory, which the scheduler then uses as the job's working directory. No container
image is built. Shared by ``local_cwd`` users (``torchx-runner``) and ``slurm``
(``torchx-sched-slurm``), hence owned by ``torchx-specs``: local paths are copied with
the standard library; any other fsspec URL needs ``fsspec``, imported only then.

* :class:`DirWorkspaceMixin` copies into the run option ``job_dir`` (which must not
  exist yet) and does nothing when ``job_dir`` is unset — used by ``slurm``.
* :class:`TmpDirWorkspaceMixin` copies into a fresh private temporary directory.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from typing import Any

from torchx.specs import CfgVal, Role
from torchx.workspace.api import TORCHX_IGNORE, LocalFileSystem, WorkspaceMixin, walk_workspace

__all__ = [
    "DirWorkspaceMixin",
    "TmpDirWorkspaceMixin",
    "copy_into_new_file",
    "copy_workspace",
    "is_url",
    "job_dir_exists",
]


def job_dir_exists(job_dir: str) -> FileExistsError:
    """The one-line error for a ``job_dir`` run option naming an existing path."""
    return FileExistsError(
        f"job_dir {job_dir!r} already exists; pass a new directory (each job gets its own)"
    )


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
    from torchx.workspace.api import WorkspaceProgress

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


def copy_into_new_file(src: Any, destination: str, progress: Any, path: str) -> None:
    """Copies the open file ``src`` (``path``, for messages) into ``destination``, a private
    file (0600) never written through a link, each chunk counted against the size limit
    by ``progress`` (a :class:`~torchx.workspace.api.WorkspaceProgress`)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    with os.fdopen(os.open(destination, flags, 0o600), "wb") as dst:
        while chunk := src.read(_CHUNK):
            progress.add_bytes(len(chunk), path)
            dst.write(chunk)


def _parts(relative: str) -> list[str]:
    return [] if relative == "." else relative.split("/")


class TmpDirWorkspaceMixin(WorkspaceMixin[None]):
    """Builds a workspace by copying it into a new temporary directory (mode 0700)."""

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Copies ``workspace`` into a fresh temp dir and sets ``role.image`` to it."""
        import tempfile

        job_dir = tempfile.mkdtemp(prefix="torchx_workspace")
        try:
            copy_workspace(workspace, job_dir)
        except BaseException:  # Ctrl-C included: leave no half copy behind
            import shutil

            shutil.rmtree(job_dir, ignore_errors=True)
            raise
        role.image = job_dir


class DirWorkspaceMixin(WorkspaceMixin[None]):
    """Builds a workspace by copying it into the run option ``job_dir``.

    ``job_dir`` must not exist (it is created, so two jobs never share one); when it is
    not set the role runs from its image unchanged. Roles sharing a workspace share the
    copy. A failed copy removes the half-made directory; :meth:`created_job_dirs` lists
    the directories made by this scheduler object, so that a scheduler whose submission
    then fails can remove them too.
    """

    def created_job_dirs(self) -> dict[str, object]:
        """Job dirs this object created (absolute path -> the workspace copied there)."""
        created: dict[str, object] | None = getattr(self, "_torchx_created_job_dirs", None)
        if created is None:
            created = {}
            self._torchx_created_job_dirs = created
        return created

    def built_message(self, role: Role, old_image: str) -> str:
        return f"Copied workspace {role.workspace} of role `{role.name}` into {role.image}"

    def planned_image(self, role: Role, cfg: Mapping[str, CfgVal]) -> str:
        """``job_dir`` (not created by a dry run), or the role's image when it is unset."""
        job_dir = cfg.get("job_dir")
        return job_dir if isinstance(job_dir, str) else role.image

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Copies ``workspace`` into ``cfg["job_dir"]`` and sets ``role.image`` to it."""
        job_dir = cfg.get("job_dir")
        if job_dir is None:
            return
        if not isinstance(job_dir, str):
            raise TypeError(f"run option job_dir must be a string path, got {job_dir!r}")
        source = role.workspace or workspace
        created = self.created_job_dirs()
        if created.get(os.path.abspath(job_dir), None) == source:
            role.image = job_dir  # another role of this app with the same workspace
            return
        os.makedirs(os.path.dirname(os.path.abspath(job_dir)), exist_ok=True)
        try:
            os.mkdir(job_dir, 0o700)
        except FileExistsError:
            raise job_dir_exists(job_dir) from None
        try:
            copy_workspace(workspace, job_dir)
        except BaseException:
            import shutil

            shutil.rmtree(job_dir, ignore_errors=True)
            raise
        created[os.path.abspath(job_dir)] = source
        role.image = job_dir
