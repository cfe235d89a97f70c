"""Modules that moved to torchx-specs keep their torchx-runner era import paths."""

from __future__ import annotations


def test_local_logs_reexports_the_shared_follower() -> None:
    from torchx.schedulers import local_logs, log_files

    assert local_logs.follow_lines is log_files.follow_lines
    assert local_logs.LogIterator is log_files.LogIterator


def test_local_scheduler_still_exports_log_iterator() -> None:
    from torchx.schedulers import local_scheduler, log_files

    assert local_scheduler.LogIterator is log_files.LogIterator


def test_dir_workspace_import_path() -> None:
    from torchx.workspace.dir_workspace import DirWorkspaceMixin, TmpDirWorkspaceMixin

    assert DirWorkspaceMixin.__module__ == TmpDirWorkspaceMixin.__module__
