"""Fixtures shared by the local_cwd scheduler tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx.schedulers.local_scheduler import create_scheduler


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private TORCHX_HOME and a scratch working directory (the CWD image)."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("TORCHX_HOME", str(home))
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    monkeypatch.delenv("TORCHX_LOCAL_CWD_SUPERVISOR", raising=False)
    monkeypatch.chdir(work)
    yield home
    # a failed test must not leave its app running
    cleanup = create_scheduler("cleanup")
    for row in cleanup.list():
        cleanup.cancel(row.app_id)
