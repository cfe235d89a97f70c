"""``torchx runopts`` and ``torchx configure`` (with a scheduler plugin that cannot load)."""

from __future__ import annotations

import json

import pytest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from conftest import Cli, OneLineError


@pytest.fixture
def broken_scheduler(cli: Cli) -> Cli:
    cli.add_distribution(
        "brokensched",
        "2.0",
        {"torchx.schedulers": {"broken": "brokensched_missing_module:create_scheduler"}},
        {},
    )
    return cli


def test_runopts_lists_local_cwd(cli: Cli) -> None:
    proc = cli.run("runopts")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("local_cwd:\n")
    assert "log_dir=LOG_DIR (str, None)" in proc.stdout
    assert "\033[" not in proc.stdout


def test_runopts_json(cli: Cli) -> None:
    proc = cli.run("runopts", "local_cwd", "--json")
    assert proc.returncode == 0, proc.stderr
    opts = json.loads(proc.stdout)["local_cwd"]["options"]
    assert opts["prepend_cwd"] == {
        "type": "bool",
        "default": False,
        "required": False,
        "help": opts["prepend_cwd"]["help"],
    }
    assert opts["log_dir"]["default"] is None


def test_runopts_survives_a_scheduler_that_cannot_load(broken_scheduler: Cli) -> None:
    cli = broken_scheduler
    proc = cli.run("runopts")
    assert proc.returncode == 0, proc.stderr
    assert "local_cwd:\n" in proc.stdout
    assert "broken:\n    failed to load: ModuleNotFoundError:" in proc.stdout
    assert "brokensched_missing_module" in proc.stdout

    as_json = json.loads(cli.run("runopts", "--json").stdout)
    assert "options" in as_json["local_cwd"]
    assert as_json["broken"]["error"].startswith("ModuleNotFoundError:")


def test_runopts_of_the_broken_scheduler_is_one_line(
    broken_scheduler: Cli, one_line_error: OneLineError
) -> None:
    proc = broken_scheduler.run("runopts", "broken")
    assert proc.returncode == 1
    line = one_line_error(proc)
    assert "scheduler 'broken' could not be loaded: ModuleNotFoundError" in line


def test_runopts_unknown_scheduler(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("runopts", "local_cdw")
    assert proc.returncode == 1
    line = one_line_error(proc)
    assert "unknown scheduler 'local_cdw' (did you mean 'local_cwd'?)" in line


def test_configure_print(broken_scheduler: Cli) -> None:
    cli = broken_scheduler
    required = cli.run("configure", "--print", "-s", "local_cwd")
    assert required.returncode == 0, required.stderr
    assert required.stdout.strip() == "[local_cwd]"
    everything = cli.run("configure", "--print", "--all")
    assert everything.returncode == 0, everything.stderr
    assert "[local_cwd]\nlog_dir = None\nprepend_cwd = False\n" in everything.stdout
    assert not (cli.cwd / ".torchxconfig").exists()


def test_configure_writes_torchxconfig(cli: Cli) -> None:
    proc = cli.run("configure", "-a", "-s", "local_cwd")
    assert proc.returncode == 0, proc.stderr
    written = (cli.cwd / ".torchxconfig").read_text()
    assert "[local_cwd]" in written and "prepend_cwd = False" in written
    # the written file is a valid config: torchx run reads it back
    run = cli.run("run", "--dryrun", "-s", "local_cwd", "utils.echo")
    assert run.returncode == 0, run.stderr


def test_configure_unknown_scheduler(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("configure", "--print", "-s", "local_cwd,nope")
    assert proc.returncode == 1
    assert "unknown scheduler 'nope'" in one_line_error(proc)
