"""`.torchxconfig` discovery and parsing, shared by the runner and the trackers."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from torchx.util.support.config_files import (
    ConfigError,
    find_config_files,
    parse_config,
    read_config,
)


@pytest.fixture
def home_and_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    monkeypatch.chdir(cwd)
    return home, cwd


def test_home_then_cwd_and_missing_files_skipped(home_and_cwd: tuple[Path, Path]) -> None:
    home, cwd = home_and_cwd
    assert find_config_files() == []
    (cwd / ".torchxconfig").write_text("[local_cwd]\n")
    (home / ".torchxconfig").write_text("[local_cwd]\n")
    assert find_config_files() == [str(home / ".torchxconfig"), os.path.join(cwd, ".torchxconfig")]


def test_a_file_reached_twice_is_read_once(home_and_cwd: tuple[Path, Path]) -> None:
    home, _ = home_and_cwd
    (home / ".torchxconfig").write_text("[local_cwd]\n")
    assert find_config_files([str(home), str(home)]) == [str(home / ".torchxconfig")]


def test_torchxconfig_env_is_the_only_file(
    home_and_cwd: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home, _ = home_and_cwd
    (home / ".torchxconfig").write_text("[local_cwd]\n")
    only = tmp_path / "only.ini"
    only.write_text("[local_cwd]\n")
    monkeypatch.setenv("TORCHXCONFIG", str(only))
    assert find_config_files([str(home)]) == [str(only)]
    monkeypatch.setenv("TORCHXCONFIG", "")
    assert find_config_files([str(home)]) == []
    monkeypatch.setenv("TORCHXCONFIG", str(tmp_path / "missing.ini"))
    with pytest.raises(FileNotFoundError, match=r"TORCHXCONFIG=.*is not a file"):
        find_config_files()


def test_keys_keep_their_case_and_default_is_an_ordinary_section(tmp_path: Path) -> None:
    path = tmp_path / "c.ini"
    path.write_text("[DEFAULT]\nA = 1\n[tracker:mlflow]\nTracking_URI = %(x)s\n")
    assert read_config(str(path)) == {
        "DEFAULT": {"A": "1"},
        "tracker:mlflow": {"Tracking_URI": "%(x)s"},
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("key = 1\n", r"c.ini:1: 'key = 1' comes before any \[section\] header"),
        ("[a]\n[a]\n", r"c.ini:2: section \[a\] appears twice"),
        ("[a]\nk = 1\nk = 2\n", r"c.ini:3: key 'k' appears twice in section \[a\]"),
        ("[a]\nnot a pair\n", r"c.ini:2: cannot parse 'not a pair'"),
    ],
)
def test_malformed_file_is_one_line_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_config(io.StringIO(text), "c.ini")
    assert "\n" not in str(info.value)


def test_torchx_home_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from torchx.util.support.home import torchx_home

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TORCHX_HOME", "")
    assert torchx_home() == str(tmp_path / ".torchx")
    monkeypatch.setenv("TORCHX_HOME", "~/state")
    assert torchx_home() == str(tmp_path / "state")


def test_current_user_without_a_passwd_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    import getpass

    from torchx.util.support.user import current_user

    def no_user() -> str:
        raise KeyError("getpwuid(): uid not found: 12345")

    monkeypatch.setattr(getpass, "getuser", no_user)
    assert current_user() == "unknown"


def test_inline_comments_after_whitespace_in_every_section() -> None:
    text = (
        "[slurm]\npartition = debug   # my partition\naccount = a1 ; billing\n"
        "[tracker:mlflow]\nconfig = http://127.0.0.1:5055    # passed to the job\n"
        "[tracker:other]\nuri = http://host/page#frag\n"
    )
    parsed = parse_config(io.StringIO(text), "x")
    assert parsed == {
        "slurm": {"partition": "debug", "account": "a1"},
        "tracker:mlflow": {"config": "http://127.0.0.1:5055"},
        "tracker:other": {"uri": "http://host/page#frag"},  # no space before '#': a value
    }
