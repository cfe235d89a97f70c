"""``torchx runopts`` and ``torchx configure`` (with a scheduler plugin that cannot load)."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_configure_keeps_an_existing_torchxconfig(cli: Cli) -> None:
    hand_written = (
        "# my settings\n[local_cwd]\nlog_dir = /tmp/mine\n\n[cli:run]\ncomponent = utils.echo"
    )
    (cli.cwd / ".torchxconfig").write_text(hand_written)
    proc = cli.run("configure", "-a", "-s", "local_cwd")
    assert proc.returncode == 0, proc.stderr
    assert (cli.cwd / ".torchxconfig").read_text() == hand_written
    assert "already has a section for every scheduler; left it unchanged" in proc.stderr
    assert "--force" in proc.stderr


def test_configure_adds_only_the_missing_sections(cli: Cli) -> None:
    hand_written = "# my settings\n[cli:run]\ncomponent = utils.echo\n"
    (cli.cwd / ".torchxconfig").write_text(hand_written)
    proc = cli.run("configure", "-a", "-s", "local_cwd")
    assert proc.returncode == 0, proc.stderr
    assert "added [local_cwd] to ./.torchxconfig" in proc.stderr
    merged = (cli.cwd / ".torchxconfig").read_text()
    assert merged.startswith(hand_written + "\n[local_cwd]\n")
    assert "prepend_cwd = False" in merged
    run = cli.run("run", "--dryrun", "-s", "local_cwd")  # component from [cli:run]
    assert run.returncode == 0, run.stderr


def test_configure_force_rewrites(cli: Cli) -> None:
    (cli.cwd / ".torchxconfig").write_text("[local_cwd]\nlog_dir = /tmp/mine\n")
    proc = cli.run("configure", "--force", "-a", "-s", "local_cwd")
    assert proc.returncode == 0, proc.stderr
    assert "log_dir = /tmp/mine" not in (cli.cwd / ".torchxconfig").read_text()


def test_configure_refuses_to_merge_into_a_malformed_file(
    cli: Cli, one_line_error: OneLineError
) -> None:
    (cli.cwd / ".torchxconfig").write_text("oops\n")
    proc = cli.run("configure", "-s", "local_cwd")
    assert "--force" in one_line_error(proc)
    assert (cli.cwd / ".torchxconfig").read_text() == "oops\n"


SCHEDULER_MODULE = """
import os
from torchx.schedulers.api import Scheduler
from torchx.specs import runopts

with open(os.environ["IMPORTS_LOG"], "a") as f:  # counts the imports of this module
    f.write("imported\\n")


class Sched(Scheduler):
    def __init__(self, session_name, **kwargs):
        super().__init__("mysched", session_name)

    def _run_opts(self):
        opts = runopts()
        opts.add("queue", type_=str, default="short", help="the queue")
        return opts

    def schedule(self, dryrun_info): raise NotImplementedError
    def _submit_dryrun(self, app, cfg): raise NotImplementedError
    def describe(self, app_id): return None
    def _cancel_existing(self, app_id): pass
    def list(self, cfg=None): return []


def create_scheduler(session_name, **kwargs):
    return Sched(session_name)
"""


def test_runopts_is_answered_from_cache_until_a_scheduler_changes(cli: Cli, tmp_path: Path) -> None:
    site = cli.add_distribution(
        "mysched",
        "1.0",
        {"torchx.schedulers": {"mysched": "mysched_module:create_scheduler"}},
        {"mysched_module.py": SCHEDULER_MODULE},
    )
    log = tmp_path / "imports.log"
    env = {"IMPORTS_LOG": str(log)}
    first = cli.run("runopts", env=env)
    assert first.returncode == 0, first.stderr
    assert "mysched:\n" in first.stdout and "queue=QUEUE (str, short)" in first.stdout
    again = cli.run("runopts", env=env)
    assert again.stdout == first.stdout
    assert log.read_text() == "imported\n"  # the second answer imported no scheduler

    module = site / "mysched_module.py"
    module.write_text(SCHEDULER_MODULE.replace('default="short"', 'default="long"'))
    changed = cli.run("runopts", env=env)
    assert "queue=QUEUE (str, long)" in changed.stdout  # a changed scheduler is read again
    assert log.read_text() == "imported\n" * 2
    uncached = cli.run("runopts", env={**env, "TORCHX_NO_ENTRYPOINT_CACHE": "1"})
    assert uncached.stdout == changed.stdout and log.read_text() == "imported\n" * 3
