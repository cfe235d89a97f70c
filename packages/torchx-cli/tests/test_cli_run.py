"""``torchx run`` on the real local_cwd scheduler (plus a non-local alias of it)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import textwrap
from pathlib import Path

import pytest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from conftest import Cli, OneLineError


HANDLE_RE = re.compile(r"^local_cwd://torchx/[\w-]+$")


def _handle(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout  # scripts capture the handle: nothing else on stdout
    return lines[0]


def test_run_local_prints_handle_and_streams_prefixed_logs(cli: Cli) -> None:
    proc = cli.run("run", "-s", "local_cwd", "utils.echo", "--msg", "hello world")
    assert proc.returncode == 0, proc.stderr
    assert HANDLE_RE.match(_handle(proc))
    assert "echo/0 hello world\n" in proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1] == (
        f"torchx: app {_handle(proc)} finished SUCCEEDED"
    )
    assert "\033[" not in proc.stderr  # no colour codes when stderr is not a terminal


def test_run_failing_job_exits_1_and_prints_final_status(cli: Cli) -> None:
    proc = cli.run("run", "-s", "local_cwd", "utils.sh", "sh", "-c", "echo doomed; exit 3")
    handle = _handle(proc)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "State: FAILED" in proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1] == f"torchx: error: app {handle} finished FAILED"


def test_run_failing_shell_command(cli: Cli) -> None:
    script = cli.cwd / "fail.sh"
    script.write_text("echo before failing\nexit 3\n")
    proc = cli.run("run", "-s", "local_cwd", "utils.sh", "sh", str(script))
    assert proc.returncode == 1
    assert "sh/0 before failing" in proc.stderr
    assert "FAILED" in proc.stderr


def test_run_wait_and_tee_logs(cli: Cli) -> None:
    proc = cli.run(
        "run", "--wait", "--tee_logs", "-s", "local_cwd", "utils.echo", "--msg", "  padded  "
    )
    assert proc.returncode == 0, proc.stderr
    assert "echo/0 padded\n" in proc.stderr


def _dryrun_sections(stdout: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON of the APPLICATION and SCHEDULER REQUEST sections of a local dry run."""
    _, _, rest = stdout.partition("\n=== APPLICATION ===\n")
    app, _, request = rest.partition("\n=== SCHEDULER REQUEST ===\n")
    return json.loads(app), json.loads(request)


def test_dryrun_prints_both_sections_and_submits_nothing(cli: Cli) -> None:
    proc = cli.run("run", "--dryrun", "-s", "local_cwd", "utils.echo", "--msg", "dry")
    assert proc.returncode == 0, proc.stderr
    app, request = _dryrun_sections(proc.stdout)
    assert app["name"] == "echo" and app["roles"][0]["args"] == ["dry"]
    assert request["role_params"]["echo"][0]["args"][-1] == "dry"
    listed = cli.run("list", "-s", "local_cwd", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []


def test_dryrun_parent_run_id_and_workspace_from_config(cli: Cli) -> None:
    (cli.cwd / ".torchxconfig").write_text("[cli:run]\nworkspace =\n")
    proc = cli.run("run", "--dryrun", "-s", "local_cwd", "--parent_run_id", "exp-42", "utils.echo")
    assert proc.returncode == 0, proc.stderr
    app, _ = _dryrun_sections(proc.stdout)
    assert app["roles"][0]["env"]["TORCHX_PARENT_RUN_ID"] == "exp-42"
    twice = cli.run("run", "--workspace", "a", "--workspace", "b", "utils.echo")
    assert twice.returncode == 1  # a repeated once-only option: 1, as upstream


def test_component_help(cli: Cli) -> None:
    proc = cli.run("run", "-s", "local_cwd", "utils.echo", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "--msg" in proc.stdout


def test_file_component(cli: Cli) -> None:
    (cli.cwd / "my_component.py").write_text(
        textwrap.dedent(
            '''
            import torchx.specs as specs


            def hello(name: str = "world") -> specs.AppDef:
                """Says hello.

                Args:
                    name: who to greet
                """
                return specs.AppDef(
                    name="hello",
                    roles=[
                        specs.Role(
                            name="greeter",
                            image="",
                            entrypoint="echo",
                            args=[f"hello {name}"],
                            resource=specs.resource(cpu=1),
                        )
                    ],
                )
            '''
        )
    )
    proc = cli.run("run", "-s", "local_cwd", "my_component.py:hello", "--name", "file")
    assert proc.returncode == 0, proc.stderr
    assert "greeter/0 hello file" in proc.stderr


def test_double_dash_passes_arguments_to_the_app(cli: Cli) -> None:
    proc = cli.run("run", "-s", "local_cwd", "--", "utils.sh", "--", "echo", "--foo", "bar")
    assert proc.returncode == 0, proc.stderr
    assert "sh/0 --foo bar" in proc.stderr


def test_double_dash_after_a_module_component_goes_to_its_parser(cli: Cli) -> None:
    """Seed docs: `torchx run foo.baz.trainer -- --name "test app"` (no *args)."""
    package = cli.root / "mods" / "foo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "baz.py").write_text(
        "import torchx.specs as specs\n\n\n"
        "def trainer(name: str) -> specs.AppDef:\n"
        '    """Trains.\n\n    Args:\n        name: app name\n    """\n'
        "    return specs.AppDef(name, [specs.Role('t', 'x', entrypoint='echo', args=[name])])\n"
    )
    cli.pythonpath.append(str(cli.root / "mods"))
    proc = cli.run("run", "-s", "local_cwd", "foo.baz.trainer", "--", "--name", "test app")
    assert proc.returncode == 0, proc.stderr
    assert "t/0 test app" in proc.stderr


def test_torchxconfig_supplies_scheduler_component_and_component_defaults(cli: Cli) -> None:
    (cli.cwd / ".torchxconfig").write_text(
        "[cli:run]\nscheduler = local_cwd\ncomponent = utils.echo\n\n"
        "[component:utils.echo]\nmsg = from config\n"
    )
    proc = cli.run("run")
    assert proc.returncode == 0, proc.stderr
    assert "echo/0 from config" in proc.stderr
    proc = cli.run("run", "--", "--msg", "from cli")
    assert proc.returncode == 0, proc.stderr
    assert "echo/0 from cli" in proc.stderr


def test_stdin_json(cli: Cli) -> None:
    args = {
        "component_name": "utils.echo",
        "scheduler": "local_cwd",
        "scheduler_args": {"prepend_cwd": False},
        "component_args": {"msg": "from json"},
    }
    proc = cli.run("run", "--stdin", input=json.dumps(args))
    assert proc.returncode == 0, proc.stderr
    assert HANDLE_RE.match(_handle(proc))
    assert "echo/0 from json" in proc.stderr

    args = {**args, "component_args": {}, "component_args_str": ["--msg", "as string"]}
    proc = cli.run("run", "--stdin", "--dryrun", input=json.dumps(args))
    assert proc.returncode == 0, proc.stderr
    app, _ = _dryrun_sections(proc.stdout)
    assert app["roles"][0]["args"] == ["as string"]


def test_stdin_json_takes_an_idempotency_key(cli: Cli) -> None:
    args = {
        "component_name": "utils.sh",
        "scheduler": "local_cwd",
        "scheduler_args": {},
        "component_args_str": ["sh", "-c", "echo run=$TORCHX_RUN_ID"],
        "idempotency_key": "json-key",
    }
    first = cli.run("run", "--stdin", input=json.dumps(args))
    assert first.returncode == 0, first.stderr
    assert "sh/0 run=json-key" in first.stderr
    again = cli.run("run", "--stdin", input=json.dumps(args))
    assert (again.returncode, again.stdout) == (0, f"{_handle(first)}\n"), again
    assert "nothing was submitted" in again.stderr
    bad = cli.run("run", "--stdin", input=json.dumps({**args, "idempotency_key": 5}))
    assert bad.returncode == 1 and "`idempotency_key` is int 5" in bad.stderr
    mixed = cli.run("run", "--stdin", "--idempotency-key", "k", input=json.dumps(args))
    assert mixed.returncode == 2 and "--stdin cannot be combined with --idempotency-key" in (
        mixed.stderr
    )


def test_stdin_takes_flags_given_at_their_defaults(cli: Cli) -> None:
    """As upstream: `-s local_cwd` where local_cwd is the default is no conflict."""
    args = {"component_name": "utils.echo", "scheduler": "local_cwd", "scheduler_args": {}}
    proc = cli.run("run", "--stdin", "-s", "local_cwd", "--dryrun", input=json.dumps(args))
    assert proc.returncode == 0, proc.stderr


def test_stdin_errors(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("run", "--stdin", "-s", "slurm", input="{}")
    assert proc.returncode == 2
    assert "--stdin cannot be combined with -s/--scheduler" in one_line_error(proc)

    proc = cli.run("run", "--stdin", input="{not json")
    assert proc.returncode == 1
    assert "invalid JSON on stdin" in one_line_error(proc)

    proc = cli.run("run", "--stdin", input=json.dumps({"component_name": "utils.echo"}))
    assert proc.returncode == 1
    assert "missing required key(s)" in one_line_error(proc)

    bad_key = {
        "component_name": "utils.echo",
        "scheduler": "local_cwd",
        "scheduler_args": {"log_dirr": "/tmp"},
    }
    proc = cli.run("run", "--stdin", input=json.dumps(bad_key))
    assert proc.returncode == 1
    assert "unknown run option 'log_dirr'" in one_line_error(proc)


@pytest.mark.parametrize(
    ("args", "expected", "code"),
    [
        (["-cfg", "log_dirr=/tmp"], "unknown run option 'log_dirr' for scheduler 'local_cwd'", 1),
        (["-cfg", "prepend_cwd=maybe"], "invalid value 'maybe' for run option 'prepend_cwd'", 1),
        (["-cfg", "novalue"], "malformed -cfg 'novalue'", 2),
    ],
)
def test_bad_scheduler_args(
    cli: Cli, one_line_error: OneLineError, args: list[str], expected: str, code: int
) -> None:
    proc = cli.run("run", "-s", "local_cwd", *args, "utils.echo")
    assert proc.returncode == code  # the exit codes of docs/cli.md
    line = one_line_error(proc)
    assert expected in line
    assert "torchx runopts local_cwd" in line


def test_cfg_key_did_you_mean(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("run", "-s", "local_cwd", "-cfg", "log_dirr=/tmp", "utils.echo")
    assert "did you mean 'log_dir'" in one_line_error(proc)


def test_missing_script_is_one_line_naming_the_file(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("run", "-s", "local_cwd", "utils.python", "--script", "nosuch.py")
    message = one_line_error(proc)
    assert "script 'nosuch.py'" in message and str(cli.cwd) in message
    assert not (Path(cli.env["TORCHX_HOME"]) / "local_cwd").exists()


def test_unknown_component(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("run", "-s", "local_cwd", "utils.nope")
    assert proc.returncode == 1
    assert "utils.nope" in one_line_error(proc)


def test_unknown_scheduler(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("run", "-s", "foo", "utils.echo")
    assert proc.returncode == 1
    line = one_line_error(proc)
    assert "unknown scheduler 'foo'" in line
    assert "installed: " in line and "local_cwd" in line


def test_missing_required_component_argument(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("run", "-s", "local_cwd", "utils.touch")
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "the following arguments are required: --file" in line
    assert "torchx run utils.touch --help" in line


def test_missing_component_name(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("run", "-s", "local_cwd")
    assert proc.returncode == 2
    assert "missing component name" in one_line_error(proc)


def test_once_only_flags(cli: Cli, one_line_error: OneLineError) -> None:
    # exit 1, as upstream's ArgOnceAction (its own tests check the status)
    proc = cli.run("run", "-s", "local_cwd", "--scheduler", "local_cwd", "utils.echo")
    assert proc.returncode == 1
    assert "is specified more than once" in one_line_error(proc)
    proc = cli.run("run", "-cfg", "a=1", "-cfg", "b=2", "utils.echo")
    assert proc.returncode == 1
    assert "`-cfg` is specified more than once" in one_line_error(proc)
    proc = cli.run("run", "--scheduler_args", "a=1", "--scheduler_args", "b=2", "utils.echo")
    assert proc.returncode == 1
    assert "is specified more than once" in one_line_error(proc)
    proc = cli.run("list", "-s", "local_cwd", "-s", "local_cwd")
    assert proc.returncode == 1


def test_repeated_component_argument(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("run", "-s", "local_cwd", "utils.echo", "--msg", "a", "--msg", "b")
    assert proc.returncode == 2
    assert "Repeated Command Line Arguments: ['--msg']" in one_line_error(proc)


def test_ctrl_c_cancels_a_local_app(cli: Cli) -> None:
    proc = cli.popen("run", "-s", "local_cwd", "utils.sh", "sleep", "60")
    assert proc.stdout is not None
    handle = proc.stdout.readline().strip()
    assert HANDLE_RE.match(handle)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert f"cancelled {handle}" in stderr
    status = cli.run("status", "--json", handle)
    assert json.loads(status.stdout)["state"] == "CANCELLED"


@pytest.fixture
def remote_alias(cli: Cli) -> Cli:
    """A scheduler named `alias` (not `local*`) that runs apps with local_cwd."""
    cli.add_distribution(
        "aliassched",
        "1.0",
        {"torchx.schedulers": {"alias": "aliassched:create_scheduler"}},
        {
            "aliassched.py": """
            from torchx.schedulers.local_scheduler import create_scheduler as _create


            def create_scheduler(session_name, **kwargs):
                return _create(session_name, **kwargs)
            """
        },
    )
    return cli


def test_non_local_submit_prints_next_commands_on_stderr(remote_alias: Cli) -> None:
    cli = remote_alias
    proc = cli.run("run", "-s", "alias", "utils.echo", "--msg", "remote")
    assert proc.returncode == 0, proc.stderr
    handle = _handle(proc)
    assert handle.startswith("alias://torchx/echo-")
    for command in ("status", "log", "cancel"):
        assert f"torchx {command} {handle}" in proc.stderr
    waited = cli.run("log", "-t", handle)
    assert waited.returncode == 0, waited.stderr
    assert "echo/0 remote" in waited.stdout


def test_non_local_wait_streams_and_reflects_failure(remote_alias: Cli) -> None:
    cli = remote_alias
    proc = cli.run("run", "--wait", "-s", "alias", "utils.sh", "sh", "-c", "echo x; exit 4")
    assert proc.returncode == 1
    assert "sh/0 x" in proc.stderr
    assert "State: FAILED" in proc.stderr
    proc = cli.run("run", "--log", "-s", "alias", "utils.echo", "--msg", "logged")
    assert proc.returncode == 0, proc.stderr
    assert "echo/0 logged" in proc.stderr


def test_a_run_option_of_an_older_torchx_is_dropped_with_one_warning(cli: Cli) -> None:
    """An option an upstream release had, with no successor (local_cwd's image_type), is
    ignored with a warning naming it; a typo stays an error with the nearest name."""
    proc = cli.run("run", "--dryrun", "-s", "local_cwd", "-cfg", "image_type=dir", "utils.echo")
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "image_type" in line]
    assert len(warned) == 1 and "from an older TorchX and is ignored" in warned[0]
    typo = cli.run("run", "--dryrun", "-s", "local_cwd", "-cfg", "log_dri=/tmp", "utils.echo")
    assert typo.returncode == 1 and "did you mean 'log_dir'" in typo.stderr


def test_a_dict_argument_that_does_not_parse_names_its_text(
    cli: Cli, one_line_error: OneLineError
) -> None:
    """Upstream's test: the message shows the value (it once showed a ``_Text`` object)."""
    proc = cli.run("run", "-s", "local_cwd", "--dryrun", "utils.sh", "--env", "A=b=c", "true")
    line = one_line_error(proc)
    assert "the value `b` ends" in line and "object at 0x" not in line
    empty = cli.run("run", "-s", "local_cwd", "--dryrun", "utils.sh", "--env", "A=", "true")
    assert "`A=` has a key without a value" in one_line_error(empty)


def test_builtins_say_what_each_component_is_for(cli: Cli) -> None:
    proc = cli.run("builtins", "--purposes")  # as a terminal shows them
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if " utils.echo " in line)
    assert line.split("utils.echo", 1)[1].strip() == "Prints a message (runs `echo`)."
    assert "``" not in proc.stdout


def test_run_help_names_the_component_shows_examples_and_hides_buck(cli: Cli) -> None:
    proc = cli.run("run", "--help")
    assert proc.stdout.startswith("usage: torchx run [OPTIONS] COMPONENT [COMPONENT_ARGS...]")
    assert "examples:\n  torchx run utils.echo" in proc.stdout
    assert "buck" not in proc.stdout
    works = cli.run("run", "--dryrun", "--buck-target", "", "utils.echo")
    assert works.returncode == 0, works.stderr  # upstream's alias still works


def test_component_help_reads_as_plain_text(cli: Cli) -> None:
    ddp = cli.run("run", "dist.ddp", "--help").stdout
    assert "``" not in ddp and ":py:" not in ddp and ".. code-block" not in ddp
    python = cli.run("run", "utils.python", "--help").stdout
    assert "positional arguments:\n  args " in python  # its name, not its type (`str`)


def test_a_file_without_the_function_is_refused_before_it_runs(
    cli: Cli, one_line_error: OneLineError
) -> None:
    """`train.py:main` where train.py has no main ran the user's training script first."""
    script = cli.cwd / "train.py"
    marker = cli.cwd / "ran"
    script.write_text(
        f"open({str(marker)!r}, 'w').close()\ndef helper() -> None: ...\ndef train() -> None: ...\n"
    )
    proc = cli.run("run", "-s", "local_cwd", "train.py:main")
    line = one_line_error(proc)
    assert line.endswith(
        "train.py has no function main; its functions: helper, train (nothing was run)"
    )
    assert not marker.exists()


def test_typos_in_torchxconfig_are_said_with_file_line_and_nearest_name(cli: Cli) -> None:
    """A misspelled section or key had no effect and no warning."""
    (cli.cwd / ".torchxconfig").write_text(
        "[local_cdw]\n"  # 1
        "log_dir = /tmp/x\n"
        "\n"
        "[component:utils.ecoh]\n"  # 4
        "msg = a\n"
        "\n"
        "[component:utils.echo]\n"
        "mgs = hi\n"  # 8
        "\n"
        "[mast]\n"  # another tool's section: quiet
        "foo = 1\n"
        "\n"
        "[local_cwd]\n"
        "log_dri = /tmp\n"  # 14
    )
    proc = cli.run("run", "--dryrun", "-s", "local_cwd", "utils.echo")
    assert proc.returncode == 0, proc.stderr
    warnings = [line.split("WARNING", 1)[1].strip() for line in proc.stderr.splitlines()
                if "WARNING" in line and ".torchxconfig" in line]  # fmt: skip
    where = str(cli.cwd / ".torchxconfig")
    assert any(w.startswith(f"{where}:1: section [local_cdw]") and "[local_cwd]?" in w
               for w in warnings), warnings  # fmt: skip
    assert any(w.startswith(f"{where}:4: section [component:utils.ecoh]")
               and "[component:utils.echo]?" in w for w in warnings), warnings  # fmt: skip
    assert any(w.startswith(f"{where}:8: [component:utils.echo] mgs") and "'msg'?" in w
               for w in warnings), warnings  # fmt: skip
    assert any(w.startswith(f"{where}:14: [local_cwd] log_dri") and "'log_dir'?" in w
               for w in warnings), warnings  # fmt: skip
    assert not any("mast" in w for w in warnings)
    assert len(warnings) == 4


def test_a_bad_value_in_torchxconfig_names_the_file_and_line(
    cli: Cli, one_line_error: OneLineError
) -> None:
    (cli.cwd / ".torchxconfig").write_text("[component:utils.echo]\nnum_replicas = abc\n")
    proc = cli.run("run", "--dryrun", "-s", "local_cwd", "utils.echo")
    line = one_line_error(proc)
    assert line.endswith(
        f"{cli.cwd / '.torchxconfig'}:2: [component:utils.echo] num_replicas = abc: expected int"
    )


def test_a_component_file_runs_once_when_a_config_file_is_checked(cli: Cli) -> None:
    """The config typo check must not load a file's component a second time."""
    (cli.cwd / ".torchxconfig").write_text("[local_cwd]\nprepend_cwd = False\n")
    counter = cli.cwd / "loads"
    (cli.cwd / "comp.py").write_text(
        f"open({str(counter)!r}, 'a').write('x')\n"
        "from torchx import specs\n"
        "def main() -> specs.AppDef:\n"
        "    return specs.AppDef('c', [specs.Role('r', image='.', entrypoint='true')])\n"
    )
    proc = cli.run("run", "--dryrun", "-s", "local_cwd", "comp.py:main")
    assert proc.returncode == 0, proc.stderr
    assert counter.read_text() == "x"


def test_run_json_prints_one_object_for_scripts(cli: Cli) -> None:
    """``torchx run --json`` (upstream's #1412): stdout is one JSON object, the handle,
    id, scheduler, final state and ui_url; the logs and notes go to stderr; a failed app
    still exits 1. With ``--dryrun``: the scheduler, cfg, app and request."""
    import json

    done = cli.run("run", "--json", "-s", "local_cwd", "utils.echo", "--msg", "hi")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert set(found) == {"handle", "app_id", "scheduler", "state", "ui_url"}
    assert found["state"] == "SUCCEEDED" and found["scheduler"] == "local_cwd"
    assert found["handle"].endswith("/" + found["app_id"])
    assert "echo/0 hi" in done.stderr
    failed = cli.run("run", "--json", "-s", "local_cwd", "utils.sh", "false")
    assert failed.returncode == 1 and json.loads(failed.stdout)["state"] == "FAILED"
    planned = json.loads(
        cli.run("run", "--json", "--dryrun", "-s", "local_cwd", "utils.echo").stdout
    )
    assert set(planned) == {"scheduler", "cfg", "app", "request"}
    assert planned["app"]["name"] == "echo"
    status = json.loads(cli.run("status", "--json", found["handle"]).stdout)
    assert (status["handle"], status["app_id"]) == (found["handle"], found["app_id"])
    assert status["scheduler"] == "local_cwd" and status["state"] == "SUCCEEDED"


def test_cmd_status_print_status_as_upstreams_head_calls_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse
    import json

    from torchx.cli.cmd_status import CmdStatus
    from torchx.specs import AppState, AppStatus

    args = argparse.Namespace(app_handle="local_cwd://torchx/a-1", roles="", json=True)
    CmdStatus().print_status(args, AppStatus(AppState.RUNNING, ui_url="file:///x"))
    shown = json.loads(capsys.readouterr().out)
    assert (shown["state"], shown["app_id"], shown["ui_url"]) == ("RUNNING", "a-1", "file:///x")
    from torchx.cli.errors import CliError

    with pytest.raises(CliError, match="not found"):
        CmdStatus().print_status(args, None)
