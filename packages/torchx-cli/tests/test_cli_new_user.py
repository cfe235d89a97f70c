"""What a new user trips over: each bad input gets one clear line, no noise."""

from __future__ import annotations

import json
import re
import subprocess
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from conftest import Cli, OneLineError


def _echo(cli: Cli) -> str:
    run = cli.run("run", "-s", "local_cwd", "utils.echo", "--msg", "hi")
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_status_of_an_unknown_role_fails_like_log(cli: Cli, one_line_error: OneLineError) -> None:
    handle = _echo(cli)
    status = cli.run("status", "--roles", "nosuch", handle)
    log = cli.run("log", f"{handle}/nosuch")
    assert status.returncode == log.returncode == 1
    expected = f"torchx: error: app {handle} has no role 'nosuch'; its roles: echo"
    assert one_line_error(status) == one_line_error(log) == expected
    assert cli.run("status", "--roles", "echo", handle).returncode == 0


def test_describe_fills_in_the_app_id(cli: Cli) -> None:
    handle = _echo(cli)
    described = cli.run("describe", handle)
    assert described.returncode == 0, described.stderr
    assert f"'TORCHX_JOB_ID': '{handle}'" in described.stdout
    assert "${app_id}" not in described.stdout


def test_log_dir_that_is_a_file(cli: Cli, one_line_error: OneLineError) -> None:
    run = cli.run("run", "-s", "local_cwd", "-cfg", "log_dir=/etc/passwd", "utils.echo")
    assert "log_dir '/etc/passwd' is not a directory" in one_line_error(run)


def test_negative_resources_mean_unset(cli: Cli) -> None:
    """Upstream reads negative cpu/gpu/memMB as "unset"; public components pass memMB=-1."""
    run = cli.run(
        "run", "-s", "local_cwd", "utils.binary", "--cpu", "-2", "--memMB", "-1",
        "--entrypoint", "true",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr


def test_impossible_local_settings_are_rejected(cli: Cli, one_line_error: OneLineError) -> None:
    mount = cli.run(
        "run", "-s", "local_cwd", "utils.python", "--mounts",
        "type=bind,src=/no/such/dir,dst=/data", "-c", "print(1)",
    )  # fmt: skip
    assert "bind mount source '/no/such/dir' of role 'python' does not exist" in one_line_error(
        mount
    )
    assert not list((cli.root / "home" / ".torchx").glob("local_cwd/*"))


def test_ignored_mounts_are_warned_about(cli: Cli) -> None:
    run = cli.run(
        "run", "-s", "local_cwd", "utils.python", "--mounts",
        f"type=bind,src={cli.cwd},dst=/data", "-c", "print(1)",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "local_cwd ignores the mounts of role python" in run.stderr


def test_run_of_a_file_without_a_function_names_the_form(
    cli: Cli, one_line_error: OneLineError
) -> None:
    (cli.cwd / "comp.py").write_text("def trainer(name: str) -> None: ...\n")
    run = cli.run("run", "./comp.py")
    assert "name the component function in it as `./comp.py:trainer`" in one_line_error(run)


def test_unknown_run_option_points_at_run_help(cli: Cli, one_line_error: OneLineError) -> None:
    run = cli.run("run", "--dryrun", "--jsno", "utils.echo")
    assert run.returncode == 2
    assert one_line_error(run).endswith("(see `torchx run --help`)")
    root = cli.run("--bogus", "status", "x")
    assert one_line_error(root).endswith("(see `torchx --help`)")


def test_deleting_a_watched_app_is_reported_without_noise(cli: Cli) -> None:
    for _ in range(3):  # the delete races the watcher's last log read
        watcher = cli.popen("run", "--wait", "-s", "local_cwd", "utils.sh", "sleep", "60")
        assert watcher.stdout is not None and watcher.stderr is not None
        handle = watcher.stdout.readline().strip()
        while "RUNNING" not in cli.run("status", handle).stdout:
            time.sleep(0.05)
        deleted = cli.run("delete", handle)
        assert deleted.returncode == 0, deleted.stderr
        assert watcher.wait(timeout=60) == 1
        err = watcher.stderr.read()
        watcher.stdout.close()
        watcher.stderr.close()
        for noise in ("UnknownApp", "Traceback", "could not stream", "unknown local_cwd app"):
            assert noise not in err, err
        assert "cancelled and deleted" in err or "finished CANCELLED" in err, err


def test_a_configured_tracker_that_is_not_installed_is_named(cli: Cli) -> None:
    """TORCHX_TRACKERS=mlflow without torchx-tracker-mlflow used to run untracked silently."""
    run = cli.run("run", "-s", "local_cwd", "utils.echo", env={"TORCHX_TRACKERS": "mlflow"})
    assert run.returncode == 0, run.stderr
    launcher = [line for line in run.stderr.splitlines() if "not installed" in line]
    assert len(launcher) == 1, run.stderr
    assert "tracker `mlflow` is configured" in launcher[0]
    assert launcher[0].endswith("pip install torchx-tracker-mlflow")


def test_an_uninstalled_scheduler_names_its_distribution(
    cli: Cli, one_line_error: OneLineError
) -> None:
    """This env has local_cwd only: the built-in names say what to install."""
    run = cli.run("run", "-s", "kubernetes", "utils.echo")
    assert one_line_error(run).startswith(
        "torchx: error: scheduler 'kubernetes' is not installed: pip install torchx-sched-k8s"
    )
    status = cli.run("status", "slurm://torchx/12")
    assert "scheduler in app handle 'slurm' is not installed: pip install torchx-sched-slurm" in (
        one_line_error(status)
    )
    typo = cli.run("run", "-s", "local_cdw", "utils.echo")
    assert "unknown scheduler 'local_cdw' (did you mean 'local_cwd'?)" in one_line_error(typo)


def test_a_j_with_more_min_nodes_than_max_is_one_usage_line(
    cli: Cli, one_line_error: OneLineError
) -> None:
    run = cli.run(
        "run", "--dryrun", "-s", "local_cwd", "dist.ddp", "-j", "3:1x2", "--script", "t.py"
    )
    assert run.returncode == 2
    assert one_line_error(run) == (
        "torchx: error: -j 3:1x2: at least 3 nodes but at most 1; give MIN:MAX with MIN <= MAX,"
        " e.g. 1:3x2 (see `torchx run dist.ddp --help`)"
    )


def test_every_flag_takes_both_spellings(cli: Cli) -> None:
    for flags in (
        ["--max_parallel", "2", "--sweep", "msg=a,b"],
        ["--max-parallel", "2", "--sweep", "msg=a,b"],
        ["--idempotency_key", "k1"],
        ["--idempotency-key", "k1"],
        ["--scheduler-args", "log_dir=/tmp"],
        ["--scheduler_args", "log_dir=/tmp"],
    ):
        run = cli.run("run", "--dryrun", "-s", "local_cwd", *flags, "utils.echo")
        assert run.returncode == 0, (flags, run.stderr)
    helped = cli.run("run", "--help").stdout
    assert "--max_parallel" not in helped  # help shows the declared spelling only


def test_an_unknown_flag_gets_a_did_you_mean(cli: Cli, one_line_error: OneLineError) -> None:
    run = cli.run("run", "--dry-run", "-s", "local_cwd", "utils.echo")
    assert run.returncode == 2
    assert one_line_error(run) == (
        "torchx: error: unrecognized arguments: --dry-run; did you mean --dryrun?"
        " (see `torchx run --help`)"
    )


def _sleeping_run(cli: Cli, stderr: int) -> subprocess.Popen[str]:
    """``torchx run -s local_cwd utils.sh sleep 120``, running (it waits for the app)."""
    return subprocess.Popen(
        [*cli.command, "run", "-s", "local_cwd", "utils.sh", "sleep", "120"],
        cwd=cli.cwd, env=cli._env(None), stdout=subprocess.PIPE, stderr=stderr, text=True,
    )  # fmt: skip


def test_cancel_says_what_it_did(cli: Cli) -> None:
    running = _sleeping_run(cli, subprocess.DEVNULL)
    try:
        assert running.stdout is not None
        handle = running.stdout.readline().strip()
        cancelled = cli.run("cancel", handle)
        assert cancelled.returncode == 0, cancelled.stderr
        assert cancelled.stderr.startswith(f"torchx: cancelled {handle} (it was ")
        running.wait(timeout=60)
        again = cli.run("cancel", handle)
        assert again.returncode == 0
        assert again.stderr == (
            f"torchx: app {handle} already ended CANCELLED: nothing to cancel\n"
        )
    finally:
        running.kill()


def test_utils_sh_help_says_how_to_write_a_dollar(cli: Cli) -> None:
    helped = " ".join(cli.run("run", "utils.sh", "--help").stdout.split())
    assert "`$$` is its escape for a literal `$`" in helped, helped
    ran = cli.run("run", "-s", "local_cwd", "utils.sh", "sh", "-c", "echo pid=$$$$")
    assert ran.returncode == 0, ran.stderr
    assert re.search(r"^sh/0 pid=\d+$", ran.stderr, re.MULTILINE), ran.stderr


def test_detach_starts_a_local_run_and_returns(cli: Cli, one_line_error: OneLineError) -> None:
    run = cli.run("run", "--detach", "-s", "local_cwd", "utils.sh", "sleep", "120")
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip()
    try:
        status = cli.run("status", handle).stdout
        assert "State: RUNNING" in status or "State: PENDING" in status, status
    finally:
        cli.run("cancel", handle)
    both = cli.run("run", "--detach", "--wait", "-s", "local_cwd", "utils.echo")
    assert both.returncode == 2
    assert "--detach returns at once" in one_line_error(both)


def test_a_run_stopped_by_sigterm_says_the_app_keeps_running(cli: Cli) -> None:
    import signal

    running = _sleeping_run(cli, subprocess.PIPE)
    assert running.stdout is not None
    handle = running.stdout.readline().strip()
    try:
        running.send_signal(signal.SIGTERM)
        _, err = running.communicate(timeout=60)
        assert running.returncode == 143, err
        assert f"torchx: terminated; {handle} keeps running (stop it with `torchx cancel" in err
        assert "State: RUNNING" in cli.run("status", handle).stdout
    finally:
        running.kill()
        cli.run("cancel", handle)


TWO_REPLICAS = """\
import torchx.specs as specs


def two(script: str) -> specs.AppDef:
    role = specs.Role(
        "w", image="/", entrypoint="sh", args=["-c", script, "${replica_id}"], num_replicas=2
    )
    return specs.AppDef("two", roles=[role])
"""
# replica 0 writes a long torchelastic error (the echo of a lost rendezvous), then waits;
# replica 1 raises once it has: the root cause, though replica 0's error file came first
ECHO_THEN_CAUSE = r"""
if [ "$0" = 0 ]; then
  python3 -c '
import json, os
trace = "".join(f"  File \"agent.py\", line {n}, in step{n}\n" for n in range(60))
message = {"message": "RendezvousConnectionError: The connection to the C10d store has failed.",
           "extraInfo": {"py_callstack": trace, "timestamp": "1764650000"}}
open(os.environ["TORCHELASTIC_ERROR_FILE"], "w").write(json.dumps({"message": message}))
'
  touch ready; exec sleep 600
fi
while [ ! -e ready ]; do sleep 0.05; done
python3 -c '[][3]'
"""


def test_an_error_that_is_not_the_root_cause_is_one_short_line(cli: Cli) -> None:
    (cli.cwd / "two.py").write_text(TWO_REPLICAS)
    run = cli.run("run", "-s", "local_cwd", "--wait", "./two.py:two", "--script", ECHO_THEN_CAUSE)
    assert run.returncode != 0, run.stderr
    handle = run.stdout.split()[0]
    status = json.loads(cli.run("status", "--json", handle).stdout)
    assert len(status["structured_error_msg"]) > 2500  # kept whole for scripts
    assert status["failure"]["replica_id"] == 1, status["failure"]

    text = cli.run("status", handle).stdout
    assert "IndexError: list index out of range" in text[text.index("Root cause: w[1]") :]
    shown = [line for line in text.splitlines() if "RendezvousConnectionError" in line]
    assert len(shown) == 2 and all(len(line) < 250 for line in shown), shown
    assert all("characters; torchx status --json has it whole)" in line for line in shown)
    assert "py_callstack" not in text and "step59" not in text
