"""status / describe / list / log / cancel / delete on a real app running in the background."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from conftest import Cli, OneLineError


STARTED = "sh/0 started"


@pytest.fixture
def running_app(cli: Cli) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A local_cwd app that prints `started` then sleeps; yields (handle, launcher process)."""
    launcher = cli.popen("run", "-s", "local_cwd", "utils.sh", "sh", "-c", "echo started; sleep 30")
    assert launcher.stdout is not None and launcher.stderr is not None
    handle = launcher.stdout.readline().strip()
    assert re.match(r"^local_cwd://torchx/sh-[\w]+$", handle), handle
    for line in launcher.stderr:  # the launcher streams the app's log: wait for its first line
        if line.startswith(STARTED):
            break
    yield handle, launcher
    if launcher.poll() is None:
        cli.run("cancel", handle)
        launcher.communicate(timeout=60)


def test_lifecycle(
    cli: Cli, one_line_error: OneLineError, running_app: tuple[str, subprocess.Popen[str]]
) -> None:
    handle, launcher = running_app

    status = cli.run("status", handle)
    assert status.returncode == 0, status.stderr
    assert "State: RUNNING" in status.stdout
    assert " *sh[0]:RUNNING" in status.stdout

    as_json = json.loads(cli.run("status", "--json", handle).stdout)
    assert as_json["state"] == "RUNNING"
    assert [r["role"] for r in as_json["roles"]] == ["sh"]
    filtered = json.loads(cli.run("status", "--json", "--roles", "sh", handle).stdout)
    assert [r["role"] for r in filtered["roles"]] == ["sh"]
    unknown = cli.run("status", "--json", "--roles", "other", handle)
    assert "has no role 'other'; its roles: sh" in one_line_error(unknown)

    described = cli.run("describe", handle)
    assert described.returncode == 0, described.stderr
    assert "'name': 'sh'" in described.stdout
    app = json.loads(cli.run("describe", "--json", handle).stdout)
    assert app["roles"][0]["name"] == "sh"
    assert app["roles"][0]["num_replicas"] == 1

    listed = cli.run("list", "-s", "local_cwd")
    assert listed.returncode == 0, listed.stderr
    header, _rule, *rows = listed.stdout.splitlines()
    assert header.split() == ["APP", "HANDLE", "APP", "NAME", "APP", "STATUS"]
    assert any(row.split()[0] == handle and row.split()[-1] == "RUNNING" for row in rows)
    listed_json = json.loads(cli.run("list", "--json").stdout)
    assert {"app_handle": handle, "state": "RUNNING"}.items() <= next(
        a for a in listed_json if a["app_handle"] == handle
    ).items()

    for identifier in (handle, f"{handle}/sh", f"{handle}/sh/0"):
        log = cli.run("log", identifier)
        assert log.returncode == 0, log.stderr
        assert log.stdout.splitlines()[0] == STARTED

    filtered_log = cli.run("log", "--regex", "^nomatch$", handle)
    assert filtered_log.returncode == 0 and filtered_log.stdout == ""

    wrong_role = cli.run("log", f"{handle}/trainer")
    assert wrong_role.returncode == 1
    assert "has no role 'trainer'; its roles: sh" in one_line_error(wrong_role)

    follower = cli.popen("log", "--tail", handle)
    cancel = cli.run("cancel", handle)
    assert cancel.returncode == 0, cancel.stderr
    followed, _ = follower.communicate(timeout=60)
    assert follower.returncode == 0
    assert followed.splitlines()[0] == STARTED

    _, launcher_err = launcher.communicate(timeout=60)
    assert launcher.returncode == 1
    assert f"app {handle} finished CANCELLED" in launcher_err
    assert json.loads(cli.run("status", "--json", handle).stdout)["state"] == "CANCELLED"

    deleted = cli.run("delete", handle)
    assert deleted.returncode == 0, deleted.stderr
    gone = cli.run("status", handle)
    assert gone.returncode == 1
    assert f"app '{handle}' not found" in one_line_error(gone)


@pytest.mark.parametrize("command", ["status", "describe"])
def test_unknown_app(cli: Cli, one_line_error: OneLineError, command: str) -> None:
    proc = cli.run(command, "local_cwd://torchx/echo-doesnotexist")
    assert proc.returncode == 1
    assert "app 'local_cwd://torchx/echo-doesnotexist' not found" in one_line_error(proc)


@pytest.mark.parametrize("command", ["cancel", "delete"])
def test_cancel_and_delete_are_idempotent(cli: Cli, command: str) -> None:
    """Like Runner.cancel (and upstream's CLI): an app that is gone leaves nothing to
    cancel or delete, so cleanup scripts under `set -e` keep going."""
    handle = cli.run("run", "-s", "local_cwd", "utils.echo").stdout.strip()
    assert cli.run("delete", handle).returncode == 0
    for gone in (handle, "local_cwd://torchx/echo-doesnotexist"):
        proc = cli.run(command, gone)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.strip().splitlines() == [
            f"torchx: app {gone} was not found (it ended and was removed, or never existed):"
            f" nothing to {command}"
        ]


@pytest.mark.parametrize("command", ["status", "describe", "cancel", "delete"])
def test_malformed_handle(cli: Cli, one_line_error: OneLineError, command: str) -> None:
    proc = cli.run(command, "not-a-handle")
    assert proc.returncode == 2  # a usage error (docs/cli.md)
    line = one_line_error(proc)
    assert "malformed app handle 'not-a-handle'" in line
    assert "SCHEDULER://SESSION/APP_ID" in line


def test_handle_with_unknown_scheduler(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("status", "foo://torchx/app")
    assert proc.returncode == 1
    assert "unknown scheduler in app handle 'foo'" in one_line_error(proc)


def test_log_errors(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("log", "nonsense")
    assert proc.returncode == 2
    assert "malformed log identifier 'nonsense'" in one_line_error(proc)

    proc = cli.run("log", "local_cwd://torchx/echo-doesnotexist")
    assert proc.returncode == 1
    assert "not found" in one_line_error(proc)

    proc = cli.run("log", "--since", "yesterday-ish", "local_cwd://torchx/echo-x")
    assert proc.returncode == 2
    assert "invalid time 'yesterday-ish'" in one_line_error(proc)

    proc = cli.run("log", "--regex", "(", "local_cwd://torchx/echo-x")
    assert proc.returncode == 2
    assert "invalid --regex '('" in one_line_error(proc)


def test_log_of_finished_app_with_time_window_and_streams(cli: Cli) -> None:
    run = cli.run("run", "-s", "local_cwd", "utils.sh", "sh", "-c", "echo out; echo err >&2")
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip()
    stdout_only = cli.run("log", "--streams", "stdout", "--since", "1h", handle)
    assert stdout_only.returncode == 0, stdout_only.stderr
    assert stdout_only.stdout == "sh/0 out\n"
    stderr_only = cli.run("log", "--streams", "stderr", "--until", "2999-01-01T00:00:00", handle)
    assert stderr_only.stdout == "sh/0 err\n"


def test_log_to_closed_pipe_is_quiet(cli: Cli) -> None:
    run = cli.run("run", "-s", "local_cwd", "utils.sh", "seq", "20000")
    handle = run.stdout.strip()
    log = subprocess.run(
        f"{shlex.join(cli.command)} log {handle} | head -1",
        shell=True,
        env=cli._env(None),
        cwd=cli.cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert log.stdout == "sh/0 1\n"
    assert "Traceback" not in log.stderr and "Error" not in log.stderr


def test_list_scheduler_and_cfg_errors(cli: Cli, one_line_error: OneLineError) -> None:
    (cli.cwd / ".torchxconfig").write_text("[cli:list]\nscheduler = nope\n")
    from_config = cli.run("list")
    assert from_config.returncode == 1
    assert "unknown scheduler 'nope'" in one_line_error(from_config)

    bad_cfg = cli.run("list", "-s", "local_cwd", "-cfg", "bogus=1")
    assert bad_cfg.returncode == 1
    assert "unknown run option 'bogus' for scheduler 'local_cwd'" in one_line_error(bad_cfg)


def test_describe_masks_secret_looking_env_values(cli: Cli) -> None:
    run = cli.run(
        "run", "-s", "local_cwd", "utils.sh", "--env",
        "AWS_SECRET_ACCESS_KEY=s3cr3t,HF_TOKEN=hf_abc,PLAIN=visible", "true",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip()
    for extra in ([], ["--json"]):
        shown = cli.run("describe", *extra, handle)
        assert shown.returncode == 0, shown.stderr
        assert "s3cr3t" not in shown.stdout and "hf_abc" not in shown.stdout
        assert "****" in shown.stdout and "visible" in shown.stdout
    revealed = cli.run("describe", "--show-secrets", handle)
    assert "s3cr3t" in revealed.stdout and "hf_abc" in revealed.stdout


def test_describe_masks_by_name_and_by_value(cli: Cli) -> None:
    """Names the first audit's short list missed, and credentials inside any value."""
    secrets = {
        "MY_PASS": "pw-one",
        "GITHUB_PAT": "pat-two",
        "API_AUTH": "auth-three",
        "DB_CREDS": "creds-four",
        "DB_URL": "postgres://app:pw-five@db.internal/prod",
        "NOTES": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "TRACKING": "http://tok-six@mlflow.internal/?access_token=tok-seven",
    }
    env = ",".join(f'{k}="{v}"' if "=" in v else f"{k}={v}" for k, v in secrets.items())
    run = cli.run("run", "-s", "local_cwd", "utils.sh", "--env", f"{env},PATH_HINT=visible", "true")
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip()
    for extra in ([], ["--json"]):
        shown = cli.run("describe", *extra, handle).stdout
        for leaked in ("pw-one", "pat-two", "auth-three", "creds-four", "pw-five", "ghp_abc",
                       "tok-six", "tok-seven"):  # fmt: skip
            assert leaked not in shown, (leaked, shown)
        assert "db.internal/prod" in shown and "mlflow.internal" in shown
        assert "visible" in shown  # PATH_HINT: PAT is a part of a name, not of a word


def test_describe_masks_credentials_by_the_shape_of_the_value(cli: Cli) -> None:
    """Values whose names say nothing: a header, a key file's text, a pair, a webhook."""
    component = cli.cwd / "shapes.py"
    component.write_text(
        "from torchx import specs\n"
        "def main() -> specs.AppDef:\n"
        "    env = {\n"
        "        'CURL_HEADER': 'Authorization: Bearer bearer-one-1234',\n"
        "        'DEPLOY': '-----BEGIN OPENSSH PRIVATE KEY-----\\npem-two\\n'\n"
        "        '-----END OPENSSH PRIVATE KEY-----',\n"
        "        'DSN': 'host=db password=pair-three user=app',\n"
        "        'NOTIFY': 'https://hooks.slack.com/services/T0/B0/hook-four',\n"
        "        'LR': '0.1',\n"
        "    }\n"
        "    role = specs.Role('r', image='.', entrypoint='true', env=env)\n"
        "    return specs.AppDef('shapes', roles=[role])\n"
    )
    run = cli.run("run", "-s", "local_cwd", f"{component}:main")
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip()
    for extra in ([], ["--json"]):
        shown = cli.run("describe", *extra, handle).stdout
        for leaked in ("bearer-one", "pem-two", "pair-three", "hook-four"):
            assert leaked not in shown, (leaked, shown)
        assert "hooks.slack.com" in shown and "0.1" in shown


def test_errors_and_debug_tracebacks_mask_credentials(cli: Cli) -> None:
    """A component that fails with a URL holding a password: neither the one-line error
    nor the traceback --log_level debug prints shows it."""
    component = cli.cwd / "leaky.py"
    component.write_text(
        'raise RuntimeError("cannot reach http://user:pw-eight@db.internal/x")\n'
        "def main() -> None: ...\n"
    )
    for debug in ([], ["--log_level", "DEBUG"]):
        bad = cli.run(*debug, "run", "-s", "local_cwd", f"{component}:main")
        assert bad.returncode == 1
        assert "pw-eight" not in bad.stderr, bad.stderr
        assert "http://***@db.internal/x" in bad.stderr.splitlines()[-1]
        assert ("Traceback" in bad.stderr) == bool(debug)


def test_job_id_inside_the_job_is_the_handle(cli: Cli) -> None:
    run = cli.run("run", "-s", "local_cwd", "utils.sh", "sh", "-c", 'echo "id=$TORCHX_JOB_ID"')
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip()
    assert f"id={handle}" in run.stderr  # the streamed log


def test_a_failed_app_names_its_root_cause_in_status_and_log(cli: Cli) -> None:
    """status --json's "failure", the text status' Root cause block, log --failed."""
    component = cli.cwd / "two.py"
    component.write_text(
        "import sys\n"
        "from torchx import specs\n"
        "def main() -> specs.AppDef:\n"
        "    ok = specs.Role('ok', image='.', entrypoint='sh', args=['-c', 'echo fine'])\n"
        "    code = \"print('loading'); raise KeyError('missing shard 7')\"\n"
        "    bad = specs.Role('bad', image='.', entrypoint=sys.executable, args=['-c', code])\n"
        "    return specs.AppDef('two', roles=[ok, bad])\n"
    )
    run = cli.run("run", "-s", "local_cwd", f"{component}:main")
    assert run.returncode == 1
    handle = run.stdout.strip().splitlines()[0]
    doc = json.loads(cli.run("status", "--json", handle).stdout)
    failure = doc["failure"]
    assert sorted(failure) == sorted(
        ["role", "replica_id", "rank", "cause", "exit_code", "signal", "message", "traceback",
         "log_tail", "time"]
    )  # fmt: skip
    assert (failure["role"], failure["cause"]) == ("bad", "exception")
    assert failure["message"] == "KeyError: 'missing shard 7'"
    text = cli.run("status", handle).stdout
    assert "Root cause: bad[0]: a Python exception\n        KeyError: 'missing shard 7'" in text
    logs = cli.run("log", "--failed", handle)
    assert logs.returncode == 0, logs.stderr
    assert "torchx: root cause: bad[0]: KeyError: 'missing shard 7'" in logs.stderr
    assert "bad/0 loading" in logs.stdout and "ok/0" not in logs.stdout
    ok = cli.run("run", "-s", "local_cwd", "utils.echo")
    assert json.loads(cli.run("status", "--json", ok.stdout.split()[0]).stdout)["failure"] is None


def test_a_stop_from_outside_reads_preempted_in_status_and_describe(cli: Cli) -> None:
    """SIGTERM sent to a replica from outside TorchX (as a preemption or a drain sends) is
    an attempt that was preempted, named with its signal; it does not spend max_retries
    (0 here): the next attempt runs and the app succeeds."""
    script = 'echo "pid $$$$ attempt $TORCHX_ATTEMPT"; [ "$TORCHX_ATTEMPT" != 0 ] || exec sleep 600'
    launcher = cli.popen("run", "-s", "local_cwd", "utils.sh", "sh", "-c", script)
    assert launcher.stdout is not None and launcher.stderr is not None
    handle = launcher.stdout.readline().strip()
    for line in launcher.stderr:
        if "attempt 0" in line:
            os.kill(int(line.split("pid ")[1].split()[0]), signal.SIGTERM)
            break
    _, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 0, err

    status = cli.run("status", handle)
    assert "Attempts: 0 FAILED (preempted by SIGTERM), 1 SUCCEEDED" in status.stdout, status
    described = json.loads(cli.run("describe", "--json", handle).stdout)
    first, second = described["attempts"]
    assert (first["cause"], first["signal"], first["exit_code"]) == ("preempted", "SIGTERM", None)
    assert second["state"] == "SUCCEEDED"

    text = cli.run("describe", handle, env={"TZ": "Asia/Kolkata"}).stdout
    attempts = text[text.index("attempts (local time):") :].splitlines()[1:]
    os.environ["TZ"] = "Asia/Kolkata"  # the reader's clock: +05:30, not UTC's
    time.tzset()
    try:
        for line, attempt in zip(attempts, (first, second), strict=True):
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(attempt["start"]))
            ended = time.strftime("%H:%M:%S", time.localtime(attempt["end"]))
            assert line.startswith(f"  {attempt['attempt']}  {attempt['state']}"), line
            assert f"{started} → {ended} (" in line, line
    finally:
        del os.environ["TZ"]
        time.tzset()
    assert attempts[0].endswith("s)  preempted by SIGTERM"), attempts
