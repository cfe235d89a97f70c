"""Submitting from a laptop through a login node: ``slurm -cfg ssh=...`` on the real cluster.

The laptop is an unprivileged user with no Slurm tools on PATH and no access to the job's
files; the login node is an OpenSSH server on 127.0.0.1 (tools/sshd-up.sh), whose account
submits to the cluster of tools/slurm-up.sh. Everything goes through the ``torchx`` CLI of
the laptop, as a user would type it.
"""

from __future__ import annotations

import os
import re
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx_testsupport import laptop, one_error_line

HANDLE = re.compile(r"slurm://torchx/(\d+)@" + re.escape(laptop.LOGIN_NODE))


@pytest.fixture
def workspace(client: None) -> Iterator[Path]:
    ws = laptop.own_dir(f"ws-{uuid.uuid4().hex[:8]}")
    (ws / "train.py").write_text(
        "import os, socket\nprint('hello from', socket.gethostname(), os.getcwd(),"
        " os.environ['TORCHX_ATTEMPT'])\n"
    )
    os.chown(ws / "train.py", *_ids(laptop.USER))
    yield ws


def _ids(user: str) -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


def _torchx(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[str, str]:
    proc = laptop.run("torchx", *args, cwd=cwd or laptop.HOME, env=env)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout, proc.stderr


def _until(handle: str, state: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out, _ = _torchx("status", handle)
        if f"State: {state}" in out:
            return
        time.sleep(0.5)
    raise AssertionError(f"{handle} never {state}: {out}")


def test_submit_wait_log_status_and_list_from_a_laptop(workspace: Path) -> None:
    which = laptop.run("python", "-c", "import shutil; print(shutil.which('sbatch'))")
    assert which.stdout.strip() == "None"  # no Slurm tools on the laptop
    run_dir = f"runs/{workspace.name}"
    out, err = _torchx(
        "run", "--wait", "--log", "-s", "slurm",
        "-cfg", f"ssh={laptop.LOGIN_NODE},job_dir=~/{run_dir}",
        "utils.sh", "python3", "train.py",
        cwd=workspace,
        env={"SLURM_UMASK": "0077"},  # the laptop's: it must reach sbatch on the login node
    )  # fmt: skip
    match = HANDLE.search(out)
    assert match, out
    handle, job_id = match.group(0), match.group(1)
    job_dir = laptop.LOGIN_HOME / run_dir
    hello = f"hello from {os.uname().nodename} {job_dir} 0"
    assert f"sh/0 {hello}" in err and "finished SUCCEEDED" in err, err

    # the job's files are on the cluster, private to its account: the laptop cannot read them
    log = job_dir / f"slurm-{job_id}-sh-0.out"
    assert log.read_text() == hello + "\n"
    assert (job_dir / "train.py").is_file()  # the workspace went there
    assert job_dir.stat().st_uid == _ids(laptop.LOGIN_USER)[0]
    assert not job_dir.stat().st_mode & stat.S_IRWXO
    assert log.stat().st_mode & 0o777 == 0o600  # SLURM_UMASK=0077 was applied there
    readable = laptop.run("python", "-c", f"import os; print(os.access({str(log)!r}, os.R_OK))")
    assert readable.stdout.strip() == "False"

    # the handle alone reaches the login node again, from any directory
    status, _ = _torchx("status", handle)
    assert "State: SUCCEEDED" in status
    described, _ = _torchx("describe", handle)
    assert f"'name': '{job_id}@{laptop.LOGIN_NODE}'" in described
    assert f"'image': '{job_dir}'" in described
    assert f"UI URL: sftp://{laptop.LOGIN_NODE}{job_dir}" in status
    logs, _ = _torchx("log", handle)
    assert logs == f"sh/0 {hello}\n"
    listed, _ = _torchx("list", "-s", "slurm", "-cfg", f"ssh={laptop.LOGIN_NODE}")
    assert handle in listed

    # without the laptop's record (another laptop), the job's directory comes from Slurm
    record = laptop.HOME / ".torchx" / "slurm" / f"{job_id}@{laptop.LOGIN_NODE}.record"
    assert record.is_file()
    record.unlink()
    logs, _ = _torchx("log", handle)
    assert logs == f"sh/0 {hello}\n"


def test_cancel_a_running_job_from_the_laptop(workspace: Path) -> None:
    # the login node from the project's .torchxconfig, as a team would set it once
    config = workspace / ".torchxconfig"
    config.write_text(f"[slurm]\nssh = {laptop.LOGIN_NODE}\n")
    os.chown(config, *_ids(laptop.USER))
    out, _ = _torchx(
        "run", "-s", "slurm", "utils.sh", "sh", "-c", "echo started; sleep 300", cwd=workspace
    )  # fmt: skip
    handle = HANDLE.search(out).group(0)  # type: ignore[union-attr]
    try:
        _until(handle, "RUNNING")
        _torchx("cancel", handle)
        _until(handle, "CANCELLED")
        logs, _ = _torchx("log", handle)
        assert logs.startswith("sh/0 started\n")  # ran in the home of the login account
        assert (
            laptop.LOGIN_HOME / f"slurm-{handle.split('/')[-1].split('@')[0]}-sh-0.out"
        ).is_file()
        _torchx("delete", handle)  # Slurm keeps the job: status and logs stay readable
        _until(handle, "CANCELLED")
    finally:
        laptop.run("torchx", "cancel", handle)


def test_progress_from_the_laptop(workspace: Path) -> None:
    """The job reports by the line protocol on the cluster; ``status`` on the laptop reads
    the end of its log over the same ssh connection (``tail -c`` on the login node)."""
    import json

    from torchx_testsupport.progress import SHELL_REPORTER

    out, _ = _torchx(
        "run", "-s", "slurm", "-cfg", f"ssh={laptop.LOGIN_NODE}",
        "utils.sh", "sh", "-c", SHELL_REPORTER, cwd=workspace,
    )  # fmt: skip
    handle = HANDLE.search(out).group(0)  # type: ignore[union-attr]
    try:
        deadline = time.monotonic() + 60
        progress = None
        while time.monotonic() < deadline:
            progress = json.loads(_torchx("status", "--json", handle)[0])["progress"]
            if progress is not None and progress["step"] == 3:
                break
            time.sleep(0.5)
        assert progress is not None, "no progress within 60 s"
        assert (progress["step"], progress["total"], progress["fraction"]) == (3, 4, 0.75)
        assert progress["metrics"] == {"loss": 0.33}
        text, _ = _torchx("status", handle)
        assert "Progress: 75% (3/4)" in text, text
    finally:
        laptop.run("torchx", "cancel", handle)


@pytest.mark.parametrize(
    "target, says",
    [
        (f"127.0.0.1:{laptop.PORT + 1}", "cannot reach 127.0.0.1 over ssh (ssh: connect to host"),
        (f"root@127.0.0.1:{laptop.PORT}", "ssh to 127.0.0.1 was refused ("),
        (
            f"torchx-bare@127.0.0.1:{laptop.PORT}",
            "sbatch not found on 127.0.0.1 (its PATH for commands run over ssh)",
        ),
    ],
)
def test_a_login_node_that_cannot_take_the_job_is_one_line(
    workspace: Path, target: str, says: str
) -> None:
    proc = laptop.run(
        "torchx", "run", "-s", "slurm", "-cfg", f"ssh={target}", "utils.sh", "true", cwd=workspace
    )
    line = one_error_line(proc)
    assert line.startswith(f"torchx: error: {says}"), line
    check = laptop.run("torchx", "check", "-s", "slurm", "-cfg", f"ssh={target}")
    assert check.returncode == 1 and "not ready" in check.stdout


def test_an_existing_job_dir_is_refused_on_the_login_node(workspace: Path) -> None:
    cfg = f"ssh={laptop.LOGIN_NODE},job_dir=~/runs/{workspace.name}-taken"
    _torchx("run", "-s", "slurm", "-cfg", cfg, "utils.sh", "true", cwd=workspace)
    proc = laptop.run(
        "torchx", "run", "-s", "slurm", "-cfg", cfg, "utils.sh", "true", cwd=workspace
    )
    line = one_error_line(proc, alone=False)  # the workspace copy logs a line first
    assert line == (
        f"torchx: error: job_dir 'runs/{workspace.name}-taken' already exists on"
        f" {laptop.LOGIN_NODE}; pass a new directory (each job gets its own)"
    )


def test_check_through_the_login_node(client: None) -> None:
    out, _ = _torchx("check", "-s", "slurm", "-cfg", f"ssh={laptop.LOGIN_NODE}")
    assert f"ssh {laptop.LOGIN_NODE}: connected in batch mode" in out
    assert "on torchx-login-node's PATH" in out and "is UP" in out
