"""Fixtures shared by the cross-package tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx_testsupport.backends import BACKENDS, backend_for


@pytest.fixture(autouse=True)
def _private_torchx_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Keeps every test's apps, caches and configs out of the real home directory."""
    home = tmp_path / "torchx_home"
    monkeypatch.setenv("TORCHX_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user_home"))
    os.makedirs(tmp_path / "user_home", exist_ok=True)
    yield home


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory a test submits from (the current directory for the test's commands;
    local and Slurm jobs run and write their logs there, Ray jobs take it as workspace)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """The backend a loop behaviour is checked on: the test runs once per backend, as a
    user would on each (torchx_testsupport.backends)."""
    with backend_for(request.param, tmp_path) as found:
        yield found
