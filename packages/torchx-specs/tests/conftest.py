"""Every specs test gets its own TORCHX_HOME, so caches never touch the real home."""

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_torchx_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("torchx_home")
    monkeypatch.setenv("TORCHX_HOME", str(home))
    return home
