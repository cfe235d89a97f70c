"""Upstream's public names that now live in shared helpers stay importable from upstream's
modules.
"""

from __future__ import annotations


def test_local_scheduler_still_exports_log_iterator() -> None:
    from torchx.schedulers import local_scheduler
    from torchx.schedulers.shared import log_files

    assert local_scheduler.LogIterator is log_files.LogIterator


def test_dir_workspace_import_path() -> None:
    from torchx.workspace.dir_workspace import DirWorkspaceMixin, TmpDirWorkspaceMixin

    assert DirWorkspaceMixin.__module__ == TmpDirWorkspaceMixin.__module__
