"""``torchx`` itself: help, version, subcommand routing, errors and start-up imports."""

from __future__ import annotations

import argparse

import pytest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Cli, OneLineError

BUILTINS = [
    "builtins",
    "cancel",
    "configure",
    "delete",
    "describe",
    "list",
    "log",
    "plugins",
    "run",
    "runopts",
    "status",
    "tracker",
]


def test_help_lists_every_builtin_subcommand(cli: Cli) -> None:
    proc = cli.run("--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: torchx")
    for name in BUILTINS:
        assert f"\n  {name} " in proc.stdout, name
    assert "--log_level" in proc.stdout and "--version" in proc.stdout


def test_no_subcommand_prints_help_and_fails(cli: Cli) -> None:
    proc = cli.run()
    assert proc.returncode == 1
    assert "sub-commands:" in proc.stdout


def test_version(cli: Cli) -> None:
    from torchx.version import __version__

    proc = cli.run("--version")
    assert proc.returncode == 0
    first, *rest = proc.stdout.strip().splitlines()
    assert first.startswith(f"torchx-{__version__} (") and "not PyPI's `torchx`" in first
    assert rest == []  # no upstream torchx installed here


def test_version_and_check_name_an_upstream_torchx_installed_beside(cli: Cli) -> None:
    """Upstream's `torchx` (PyPI's) ships every module itself; installed beside this
    project's distributions it overwrites them: both commands say so and how to fix it."""
    site = cli.add_distribution("torchx", "0.7.0", {}, {"torchx_upstream_marker.py": ""})
    record = next(site.glob("torchx-0.7.0.dist-info"))
    (record / "RECORD").write_text("torchx/specs/api.py,,\ntorchx/cli/main.py,,\n")
    proc = cli.run("--version")
    assert proc.returncode == 0
    warning = proc.stdout.strip().splitlines()[1]
    assert "upstream TorchX 0.7.0 (PyPI's `torchx`) is installed here too" in warning
    assert "pip uninstall torchx" in warning
    check = cli.run("check", "-s", "local_cwd")
    assert "upstream TorchX 0.7.0" in check.stdout and "pip uninstall torchx" in check.stdout
    assert check.returncode == 1


def test_a_closed_pipe_ends_output_quietly(cli: Cli) -> None:
    proc = cli.popen("builtins")
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away, as `torchx builtins | head -1` does
    proc.wait(timeout=60)
    assert "Traceback" not in proc.stderr.read()


_MODULES_AFTER = """
import sys
from torchx.cli.main import main
try:
    main({argv!r})
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n")
"""


def _modules_after(cli: Cli, argv: list[str]) -> set[str]:
    proc = cli.python("-c", _MODULES_AFTER.format(argv=argv))
    assert "MODULES " in proc.stderr, proc.stderr
    return set(proc.stderr.rsplit("MODULES ", 1)[1].split())


def test_help_imports_no_subcommand_and_no_specs(cli: Cli) -> None:
    imported = _modules_after(cli, ["--help"])
    assert "torchx.cli.main" in imported
    forbidden = {"torchx.specs", "dataclasses", "argparse", "logging", "pydantic"}
    forbidden |= {f"torchx.cli.cmd_{name}" for name in BUILTINS}
    assert not imported & forbidden, sorted(imported & forbidden)


def test_subcommand_help_imports_only_that_subcommand(cli: Cli) -> None:
    imported = _modules_after(cli, ["status", "--help"])
    assert "torchx.cli.cmd_status" in imported
    others = {f"torchx.cli.cmd_{name}" for name in BUILTINS if name != "status"}
    assert not imported & others, sorted(imported & others)
    assert not imported & {"pydantic", "docker", "kubernetes", "boto3", "mlflow"}


def test_run_dryrun_imports_no_sdk_and_no_pydantic_without_config(cli: Cli) -> None:
    imported = _modules_after(
        cli, ["run", "--dryrun", "-s", "local_cwd", "utils.echo", "--msg", "hi"]
    )
    assert "torchx.cli.cmd_run" in imported
    assert not imported & {"pydantic", "docker", "kubernetes", "boto3", "mlflow", "yaml"}


def test_run_dryrun_imports_only_what_it_needs(cli: Cli) -> None:
    argv = ["run", "--dryrun", "-s", "local_cwd", "utils.echo", "--msg", "hi"]
    assert cli.run(*argv).returncode == 0  # fills the entry-point cache, as any run does
    imported = _modules_after(cli, argv)
    # The component is looked up directly (no scan of the other component modules),
    # docstrings are parsed only for help, and nothing else the run does not use.
    unneeded = {
        "torchx.components.dist",
        "pkgutil",
        "difflib",
        "docstring_parser",
        "uuid",
        "platform",
        "shutil",
        "torchx.workspace.api",
        # torchx.util.startup.lazy_dataclass and fn_params keep these off the run path
        "dataclasses",
        "inspect",
        "pprint",
        # a plain command line is read without argparse (CmdRun.parse_plain and the
        # component's plain form), and nothing on the path needs typing at run time
        "argparse",
        "gettext",
        "typing",
    }
    assert not imported & unneeded, sorted(imported & unneeded)


PLAIN_RUN_LINES = [
    ["utils.echo"],
    ["--dryrun", "-s", "local_cwd", "utils.echo", "--msg", "hi"],
    ["--wait", "--log", "--tee_logs", "utils.sh", "echo", "--dryrun", "-s", "x"],
    ["-s=local_cwd", "-cfg", "log_dir=/tmp/x", "--workspace", "", "utils.echo"],
    ["--scheduler", "local_cwd", "--scheduler_args=a=b", "--parent_run_id", "p", "c"],
    ["--buck-target", "w", "--dryrun", "--dryrun", "utils.echo", "--", "--msg", "x"],
    ["--dryrun"],
    [],
]
OTHER_RUN_LINES = [  # argparse parses them, or reports what is wrong
    ["-s", "a", "-s", "b", "utils.echo"],
    ["--dry", "utils.echo"],
    ["-slocal_cwd", "utils.echo"],
    ["-s", "--dryrun", "utils.echo"],
    ["--", "utils.echo"],
    ["--stdin"],
    ["-s"],
    ["--help"],
]


@pytest.mark.parametrize("words", PLAIN_RUN_LINES + OTHER_RUN_LINES, ids=" ".join)
def test_run_reads_a_plain_command_line_as_argparse_would(
    words: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``torchx run`` reads its plain command lines without argparse; what it reads must be
    what argparse would have parsed, and anything else is left to argparse."""
    from torchx.cli import _cli_defaults
    from torchx.cli import main as cli_main
    from torchx.cli.cmd_run import CmdRun

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_cli_defaults, "_config_cache", {})
    (tmp_path / ".torchxconfig").write_text("[cli:run]\nworkspace = configured\n")
    cmd = CmdRun()
    plain = cmd.parse_plain(list(words))
    if words not in PLAIN_RUN_LINES:
        assert plain is None
        return
    assert plain is not None
    parser = cli_main._root_parser()
    cli_main._add_command(cli_main._add_subparsers(parser), "run", cmd)
    parsed = vars(parser.parse_args(["run", *words]))
    for key in ("func", "log_level", "subcmd"):
        parsed.pop(key)
    assert plain == parsed
    if not {"--workspace", "--buck-target"} & set(words):
        assert plain["workspace"] == "configured"  # the default from [cli:run]


def test_plain_run_lines_are_the_common_ones() -> None:
    from torchx.cli.cmd_run import CmdRun

    assert CmdRun().parse_plain(["--dryrun", "-s", "local_cwd", "utils.echo"]) is not None
    assert CmdRun().parse_plain(["--wait", "dist.ddp", "-j", "1x2", "--script", "t.py"])

    class RunWithMore(CmdRun):  # a plugin's subclass adding options: argparse reads it
        def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
            super().add_arguments(subparser)
            subparser.add_argument("--colour", default="blue")

    assert RunWithMore().parse_plain(["utils.echo"]) is None


def test_builtins_parses_no_docstrings(cli: Cli) -> None:
    imported = _modules_after(cli, ["builtins"])
    assert "torchx.cli.cmd_builtins" in imported
    assert "docstring_parser" not in imported


def test_unknown_subcommand_is_one_line_usage_error(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("stauts", "local_cwd://torchx/foo")
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "unknown subcommand 'stauts'" in line
    assert "did you mean 'status'" in line


def test_bad_log_level_is_usage_error(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("--log_level", "LOUD", "runopts")
    assert proc.returncode == 2
    assert "unknown log level 'LOUD'" in one_line_error(proc)


def test_unknown_flag_of_subcommand_is_one_line(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("status", "--bogus", "local_cwd://torchx/x")
    assert proc.returncode == 2
    assert "unrecognized arguments: --bogus" in one_line_error(proc)


def test_debug_log_level_shows_traceback(cli: Cli) -> None:
    proc = cli.run("--log_level", "debug", "status", "local_cwd://torchx/does-not-exist")
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1].startswith("torchx: error: app ")


def test_loglevel_env_is_the_default(cli: Cli) -> None:
    proc = cli.run("status", "local_cwd://torchx/missing", env={"LOGLEVEL": "DEBUG"})
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr


def test_module_entry_point(cli: Cli) -> None:
    proc = cli.python("-m", "torchx.cli.main", "--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("torchx-")


def test_upstream_python_api(cli: Cli) -> None:
    script = """
import argparse
from torchx.cli.main import create_parser, get_default_sub_cmds, get_sub_cmds, run_main
from torchx.cli.cmd_base import SubCommand
from torchx.cli.cmd_run import CmdBuiltins, CmdRun, torchx_run_args_from_json
from torchx.cli.colors import ENDC, GREEN

assert set(get_default_sub_cmds()) >= {"run", "status", "delete", "builtins"}
assert isinstance(get_sub_cmds()["run"], CmdRun)
assert isinstance(get_sub_cmds()["builtins"], CmdBuiltins)

class Echo(SubCommand):
    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("word")

    def run(self, args: argparse.Namespace) -> None:
        print("echo:", args.word)

assert create_parser({"echo": Echo()}).parse_args(["echo", "x"]).word == "x"
args = torchx_run_args_from_json(
    {"component_name": "utils.echo", "scheduler": "local_cwd", "scheduler_args": {}}
)
assert args.workspace and not args.dryrun
run_main({"echo": Echo()}, ["echo", "hi"])
"""
    proc = cli.python("-c", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "echo: hi\n"


HANDLE_COMMANDS = ["cancel", "delete", "describe", "status"]
FAST_COMMANDS = ["builtins", "cancel", "delete", "describe", "runopts", "status"]
"""Answered without argparse when typed with no option."""


def test_fast_commands_parse_as_argparse_would() -> None:
    """``torchx status HANDLE`` or ``torchx builtins`` skip argparse; the args they get
    must be the same."""
    from torchx.cli import main as cli_main
    from torchx.cli.cmd_base import AppHandleSubCommand

    checked = []
    for name in sorted(BUILTINS):
        cmd = cli_main._load_builtin(name)
        if isinstance(cmd, AppHandleSubCommand):
            assert name in HANDLE_COMMANDS, f"{name} should declare its OPTIONS"
        if vars(type(cmd)).get("OPTIONS") is None:
            continue
        checked.append(name)
        argv = [name, *(f"local_cwd://torchx/{dest}-123" for dest in type(cmd).POSITIONALS)]
        fast = cli_main._args_without_parser(cmd, name, argv)
        assert fast is not None, name
        parser = cli_main._root_parser()
        cli_main._add_command(cli_main._add_subparsers(parser), name, cmd)
        parsed = vars(parser.parse_args(argv))
        assert parsed.pop("func").__func__ is cmd.run.__func__
        assert {k: v for k, v in vars(fast).items() if k != "func"} == parsed, name
    assert checked == FAST_COMMANDS


def test_options_or_subclasses_go_through_argparse() -> None:

    from torchx.cli import main as cli_main
    from torchx.cli.cmd_status import CmdStatus

    class StatusWithColour(CmdStatus):  # a plugin's subclass may add options
        def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
            super().add_arguments(subparser)
            subparser.add_argument("--colour", default="blue")

    handle = "local_cwd://torchx/app-123"
    assert cli_main._args_without_parser(StatusWithColour(), "status", ["status", handle]) is None
    status = CmdStatus()
    assert cli_main._args_without_parser(status, "status", ["status", handle, "--json"]) is None
    assert cli_main._args_without_parser(status, "status", ["status", "--help"]) is None


def test_status_of_a_handle_imports_no_argparse(cli: Cli) -> None:
    argv = ["status", "local_cwd://torchx/no-such-app"]
    proc = cli.run(*argv)
    assert proc.returncode == 1
    assert "not found" in proc.stderr and "Traceback" not in proc.stderr
    imported = _modules_after(cli, argv)
    assert "torchx.cli.cmd_status" in imported
    assert not imported & {"argparse", "gettext"}, sorted(imported & {"argparse", "gettext"})


@pytest.mark.parametrize("command", ["builtins", "runopts"])
def test_listing_commands_import_no_argparse(cli: Cli, command: str) -> None:
    _modules_after(cli, [command])  # fills the caches, as a first run does
    imported = _modules_after(cli, [command])
    assert f"torchx.cli.cmd_{command}" in imported
    # no scheduler module either: runopts is answered from its cache
    assert not {m for m in imported if m.endswith("_scheduler")}
    forbidden = {"argparse", "gettext"} | ({"typing"} if command == "builtins" else set())
    assert not imported & forbidden, sorted(imported & forbidden)


def test_a_broken_pipe_of_our_own_is_an_error_not_a_quiet_exit(
    cli: Cli, one_line_error: OneLineError
) -> None:
    """Only a closed stdout (`torchx log | head`) ends quietly; a pipe to a child that
    exited early is reported like any other error."""
    cli.add_distribution(
        "pipe-cmd",
        "1.0",
        {"torchx.cli.cmds": {"pipe": "pipe_cmd:Pipe"}},
        {
            "pipe_cmd.py": (
                "from torchx.cli.cmd_base import SubCommand\n"
                "class Pipe(SubCommand):\n"
                "    def add_arguments(self, subparser):\n"
                "        pass\n"
                "    def run(self, args):\n"
                "        raise BrokenPipeError(32, 'Broken pipe')\n"
            )
        },
    )
    proc = cli.run("pipe")
    assert proc.returncode == 1
    assert "Broken pipe" in one_line_error(proc)


_NORMAL_EXIT = """
import atexit, sys, threading, time
from torchx.cli.main import console_main

buffered = open(sys.argv[1], "w")  # a plugin's log file, never closed: its finalizer flushes
buffered.write("the tail a plugin wrote last")

def late_writer():
    time.sleep(0.2)  # still running when the command is done
    print("thread done", flush=True)

threading.Thread(target=late_writer).start()  # non-daemon: Python's exit joins it first
atexit.register(lambda: sys.stdout.write("atexit ran\\n"))  # unflushed: the exit flushes
sys.argv = ["torchx", *sys.argv[2:]]
console_main()
"""


@pytest.mark.parametrize(
    ("argv", "status"), [(["--version"], 0), (["stauts", "x"], 2), (["status", "a://b"], 2)]
)
def test_the_torchx_command_ends_with_pythons_own_exit(
    cli: Cli, tmp_path: Path, argv: list[str], status: int
) -> None:
    """The exit status, non-daemon threads, ``atexit`` handlers, flushed output and object
    finalizers: a plugin's buffered file keeps its tail (``os._exit`` lost it)."""
    log = tmp_path / "plugin.log"
    proc = cli.python("-c", _NORMAL_EXIT, str(log), *argv)
    assert proc.returncode == status, proc.stderr
    assert "thread done" in proc.stdout.splitlines() and "atexit ran" in proc.stdout
    assert log.read_text() == "the tail a plugin wrote last"
