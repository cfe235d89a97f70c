""".torchxconfig: search order, precedence, validation errors, dump format, sections."""

from __future__ import annotations

import io
import logging
import os
import textwrap
from pathlib import Path

import pytest

from torchx.runner import Runner, config
from torchx.runner.config import ConfigError
from torchx.specs import CfgVal, runopt


@pytest.fixture
def dirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, Path]:
    """(HOME, CWD): two fresh directories, no $TORCHXCONFIG."""
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    for key in list(os.environ):
        if key.startswith("TORCHX_TRACKER"):
            monkeypatch.delenv(key)
    home, cwd = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "torchx_home"))
    monkeypatch.chdir(cwd)
    return home, cwd


def write(directory: Path, text: str, name: str = ".torchxconfig") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


class TestFindConfigs:
    def test_home_then_cwd(self, dirs: tuple[Path, Path]) -> None:
        home, cwd = dirs
        assert config.find_configs() == []
        write(cwd, "[local_cwd]\n")
        assert config.find_configs() == [str(cwd / ".torchxconfig")]
        write(home, "[local_cwd]\n")
        assert config.find_configs() == [str(home / ".torchxconfig"), str(cwd / ".torchxconfig")]

    def test_dirs_are_computed_at_call_time(
        self, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        write(elsewhere, "[local_cwd]\n")
        monkeypatch.chdir(elsewhere)
        assert config.find_configs() == [str(elsewhere / ".torchxconfig")]
        default_dirs = config.DEFAULT_CONFIG_DIRS
        assert default_dirs == [str(dirs[0]), str(elsewhere)]

    def test_home_is_cwd_is_listed_once(
        self, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        home, _ = dirs
        write(home, "[local_cwd]\n")
        monkeypatch.chdir(home)
        assert config.find_configs() == [str(home / ".torchxconfig")]

    def test_env_file_is_exclusive(
        self, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        home, cwd = dirs
        write(home, "[local_cwd]\n")
        write(cwd, "[local_cwd]\n")
        chosen = write(tmp_path, "[local_cwd]\n", name="team.ini")
        monkeypatch.setenv("TORCHXCONFIG", str(chosen))
        assert config.find_configs() == [str(chosen)]

    def test_empty_env_disables_config_files(
        self, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        write(dirs[0], "[local_cwd]\n")
        monkeypatch.setenv("TORCHXCONFIG", "")
        assert config.find_configs() == []

    def test_env_pointing_nowhere_fails(
        self, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        monkeypatch.setenv("TORCHXCONFIG", str(tmp_path / "missing"))
        with pytest.raises(FileNotFoundError, match=r"\$TORCHXCONFIG=.*missing is not a file"):
            config.find_configs()

    def test_env_file_wins_over_explicit_dirs(
        self, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """api-inventory 3.2: with $TORCHXCONFIG set, the directories are not searched."""
        _, cwd = dirs
        write(cwd, "[local_cwd]\n")
        chosen = write(tmp_path, "[local_cwd]\n", name="team.ini")
        monkeypatch.setenv("TORCHXCONFIG", str(chosen))
        assert config.find_configs(dirs=[str(cwd)]) == [str(chosen)]
        monkeypatch.setenv("TORCHXCONFIG", "")
        assert config.find_configs(dirs=[str(cwd)]) == []
        monkeypatch.delenv("TORCHXCONFIG")
        assert config.find_configs(dirs=[str(cwd), str(tmp_path / "none")]) == [
            str(cwd / ".torchxconfig")
        ]


class TestApply:
    def test_precedence_cfg_then_home_then_cwd(self, dirs: tuple[Path, Path]) -> None:
        home, cwd = dirs
        write(home, "[local_cwd]\nlog_dir = /from/home\n")
        write(cwd, "[local_cwd]\nlog_dir = /from/cwd\nprepend_cwd = yes\n")
        cfg: dict[str, CfgVal] = {}
        config.apply("local_cwd", cfg)
        assert cfg == {"log_dir": "/from/home", "prepend_cwd": True}
        cfg = {"log_dir": "/from/cli"}
        config.apply("local_cwd", cfg)
        assert cfg == {"log_dir": "/from/cli", "prepend_cwd": True}

    def test_env_file_only(
        self, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        write(dirs[0], "[local_cwd]\nlog_dir = /from/home\n")
        chosen = write(tmp_path, "[local_cwd]\nauto_set_cuda_visible_devices = ON\n", "x.cfg")
        monkeypatch.setenv("TORCHXCONFIG", str(chosen))
        cfg: dict[str, CfgVal] = {}
        config.apply("local_cwd", cfg)
        assert cfg == {"auto_set_cuda_visible_devices": True}

    def test_none_literal_and_other_sections(self, dirs: tuple[Path, Path]) -> None:
        write(dirs[1], "[local_cwd]\nlog_dir = None\n\n[other]\nx = 1\n")
        cfg: dict[str, CfgVal] = {}
        config.apply("local_cwd", cfg)
        assert cfg == {"log_dir": None}

    def test_unknown_key_is_warned_and_skipped(
        self, dirs: tuple[Path, Path], caplog: pytest.LogCaptureFixture
    ) -> None:
        write(dirs[1], "[local_cwd]\nlog_dirr = /x\nprepend_cwd = 0\n")
        cfg: dict[str, CfgVal] = {}
        with caplog.at_level(logging.WARNING, logger="torchx.runner.config"):
            config.apply("local_cwd", cfg)
        assert cfg == {"prepend_cwd": False}
        assert ":2: [local_cwd] log_dirr is not a run option of scheduler local_cwd" in caplog.text
        assert "did you mean 'log_dir'?" in caplog.text

    def test_bad_value_names_file_section_key_and_type(self, dirs: tuple[Path, Path]) -> None:
        write(dirs[0], "[local_cwd]\nprepend_cwd = maybe\n")
        with pytest.raises(ConfigError) as e:
            config.apply("local_cwd", {})
        assert str(e.value) == (
            "~/.torchxconfig [local_cwd] prepend_cwd = maybe:"
            " expected a bool (true/false/1/0/yes/no/on/off)"
        )

    def test_all_bad_values_in_one_line(self, dirs: tuple[Path, Path]) -> None:
        path = write(
            dirs[1], "[local_cwd]\nprepend_cwd = sure\nauto_set_cuda_visible_devices = 2\n"
        )
        with pytest.raises(ConfigError) as e:
            config.apply("local_cwd", {})
        message = str(e.value)
        assert "\n" not in message
        assert f"{path} [local_cwd] prepend_cwd = sure: expected a bool" in message
        assert "auto_set_cuda_visible_devices = 2: expected a bool" in message

    def test_fixme_placeholder_is_rejected(self, dirs: tuple[Path, Path]) -> None:
        write(dirs[0], "[local_cwd]\nlog_dir = #FIXME:(str) where logs go\n")
        with pytest.raises(ConfigError, match=r"~/\.torchxconfig \[local_cwd\] log_dir = #FIXME"):
            config.apply("local_cwd", {})

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("log_dir = /x\n", r":1: 'log_dir = /x' comes before any \[section\] header"),
            ("[local_cwd]\nlog_dir\n", r":2: cannot parse 'log_dir'"),
            ("[local_cwd]\na = 1\na = 2\n", r":3: key 'a' appears twice in section \[local_cwd\]"),
            ("[a]\n[a]\n", r":2: section \[a\] appears twice"),
        ],
    )
    def test_malformed_file_names_file_and_line(
        self, dirs: tuple[Path, Path], text: str, expected: str
    ) -> None:
        write(dirs[0], text)
        with pytest.raises(ConfigError, match=r"^~/\.torchxconfig" + expected):
            config.apply("local_cwd", {})
        with pytest.raises(ConfigError, match=r"^~/\.torchxconfig" + expected):
            config.load_sections("component")

    def test_typed_values(self, dirs: tuple[Path, Path]) -> None:
        from torchx.runner.config import _validate_values

        opts = {
            "n": runopt(None, int, False, ""),
            "f": runopt(None, float, False, ""),
            "l": runopt(None, list[str], False, ""),
            "d": runopt(None, dict[str, str], False, ""),
            "s": runopt(None, str, False, ""),
        }
        raw = {"n": "3", "f": "0.5", "l": "a,b;c", "d": "k:v;x:y", "s": "text"}
        values = _validate_values("f.ini", "sched", {k: (opts[k], raw[k]) for k in raw})
        assert values == {
            "n": 3,
            "f": 0.5,
            "l": ["a", "b", "c"],
            "d": {"k": "v", "x": "y"},
            "s": "text",
        }
        with pytest.raises(ConfigError, match=r"^f\.ini \[sched\] n = three: expected an int$"):
            _validate_values("f.ini", "sched", {"n": (opts["n"], "three")})
        with pytest.raises(ConfigError, match=r"d = kv: expected a dict of strings"):
            _validate_values("f.ini", "sched", {"d": (opts["d"], "kv")})


class TestDump:
    def test_golden_local_cwd(self, dirs: tuple[Path, Path]) -> None:
        out = io.StringIO()
        config.dump(out, schedulers=["local_cwd"])
        assert out.getvalue() == (
            "[local_cwd]\n"
            "log_dir = None\n"
            "prepend_cwd = False\n"
            "auto_set_cuda_visible_devices = False\n"
            "\n"
        )
        out = io.StringIO()
        config.dump(out, schedulers=["local_cwd"], required_only=True)
        assert out.getvalue() == "[local_cwd]\n\n"

    def test_dump_of_all_schedulers_loads_back(self, dirs: tuple[Path, Path]) -> None:
        out = io.StringIO()
        config.dump(out)
        assert "[local_cwd]" in out.getvalue()
        (dirs[1] / ".torchxconfig").write_text(out.getvalue())
        cfg: dict[str, CfgVal] = {}
        config.apply("local_cwd", cfg)
        assert cfg == {
            "log_dir": None,
            "prepend_cwd": False,
            "auto_set_cuda_visible_devices": False,
        }

    def test_required_option_placeholder(self) -> None:
        from torchx.runner.config import _fixme, _format_default

        assert _fixme(runopt(None, str, True, "Volcano queue to schedule job in")) == (
            "#FIXME:(str) Volcano queue to schedule job in"
        )
        long = _fixme(runopt(None, str, True, "word " * 30))
        assert len(long) == 63 and long.endswith("...")
        assert _format_default(["a", "b"]) == "a;b"
        assert _format_default({"k": "v", "x": "y"}) == "k:v;x:y"
        assert _format_default("") == "None"
        assert _format_default(3) == "3"

    def test_unknown_scheduler(self) -> None:
        with pytest.raises(ValueError, match=r"unknown scheduler.*nope.*local_cwd"):
            config.dump(io.StringIO(), schedulers=["nope"])


class TestSections:
    CONTENT_HOME = """\
        [component:dist.ddp]
        j = 2x4

        [cli:run]
        scheduler = local_cwd

        [torchx:tracker]
        fsspec =
        """
    CONTENT_CWD = """\
        [component:dist.ddp]
        j = 1x1
        cpu = 1

        [cli:list]
        scheduler = local_cwd

        [tracker:fsspec]
        config = /tmp/data

        [nocolon]
        a = 1

        [component:]
        b = 2
        """

    def test_first_file_wins_per_key(self, dirs: tuple[Path, Path]) -> None:
        write(dirs[0], self.CONTENT_HOME)
        write(dirs[1], self.CONTENT_CWD)
        assert config.load_sections("component") == {"dist.ddp": {"j": "2x4", "cpu": "1"}}
        assert config.get_configs("cli", "run") == {"scheduler": "local_cwd"}
        assert config.get_config("cli", "list", "scheduler") == "local_cwd"
        assert config.get_config("cli", "list", "nope") is None
        assert config.get_configs("torchx", "tracker") == {"fsspec": ""}
        assert config.get_config("tracker", "fsspec", "config") == "/tmp/data"
        assert config.get_configs("nothing", "here") == {}

    def test_component_defaults_reach_the_component(self, dirs: tuple[Path, Path]) -> None:
        write(dirs[0], self.CONTENT_HOME)
        write(dirs[1], self.CONTENT_CWD)
        with Runner("t", component_defaults=config.load_sections("component")) as runner:
            info = runner.dryrun_component("dist.ddp", ["--script", "train.py"], "local_cwd")
            assert info.app is not None
            role = info.app.roles[0]
            assert role.num_replicas == 2
            assert "--nnodes 2 --nproc_per_node 4" in role.args[1]
            assert role.resource.cpu == 1
            info = runner.dryrun_component(
                "dist.ddp", ["--script", "train.py", "-j", "1x3"], "local_cwd"
            )
            assert info.app is not None
            assert "--nnodes 1 --nproc_per_node 3" in info.app.roles[0].args[1]
