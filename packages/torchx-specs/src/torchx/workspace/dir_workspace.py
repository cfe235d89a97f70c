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
import tempfile
from collections.abc import Mapping

from torchx.specs import CfgVal, Role
from torchx.workspace._files import copy_into_new_file, copy_workspace, is_url
from torchx.workspace.api import WorkspaceMixin

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


class TmpDirWorkspaceMixin(WorkspaceMixin[None]):
    """Builds a workspace by copying it into a new temporary directory (mode 0700)."""

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Copies ``workspace`` into a fresh temp dir and sets ``role.image`` to it."""

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
