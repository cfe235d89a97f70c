"""The disk caches' one rule: an answer is used while its key and the stamps of the files
it came from are unchanged; ``TORCHX_NO_ENTRYPOINT_CACHE`` turns all or some off."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchx.util.startup import disk_cache


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(disk_cache.ENV_NO_CACHE, raising=False)
    return tmp_path / "home"


def test_an_answer_is_used_until_a_file_it_came_from_changes(tmp_path: Path) -> None:
    source = tmp_path / "component.py"
    source.write_text("a = 1\n")
    disk_cache.write_checked("components", ("v1",), [str(source)], {"answer": 1})
    assert disk_cache.read_checked("components", ("v1",)) == {"answer": 1}
    assert disk_cache.read_checked("components", ("v2",)) is None  # another key
    source.write_text("a = 22\n")
    assert disk_cache.read_checked("components", ("v1",)) is None


def test_a_path_that_appears_makes_the_answer_stale(tmp_path: Path) -> None:
    later = tmp_path / "site-packages-later"
    disk_cache.write_checked("entrypoints", ("k",), [str(later)], ("rows", "dists"))
    assert disk_cache.read_checked("entrypoints", ("k",)) == ("rows", "dists")
    later.mkdir()
    assert disk_cache.read_checked("entrypoints", ("k",)) is None


@pytest.mark.parametrize(
    ("setting", "off"),
    [
        ("", set()),
        ("0", set()),
        ("1", {"entrypoints", "components", "runopts", "runopts-slurm", "lint", ""}),
        ("runopts", {"runopts", "runopts-slurm"}),
        ("lint, components", {"lint", "components"}),
    ],
)
def test_caches_turned_off_by_name(
    setting: str, off: set[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(disk_cache.ENV_NO_CACHE, setting)
    names = ["entrypoints", "components", "runopts", "runopts-slurm", "lint", ""]
    assert {name for name in names if disk_cache.cache_disabled(name)} == off
    disk_cache.write_checked("runopts", ("k",), [], 1)
    expected = None if "runopts" in off else 1
    assert disk_cache.read_checked("runopts", ("k",)) == expected
