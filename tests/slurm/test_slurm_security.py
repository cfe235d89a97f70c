"""The third hostile-input audit's findings on the real cluster and login node: what a
submission over ssh may delete or run, what other users of the cluster can read or do,
and what a login shell that is not POSIX makes of the commands TorchX sends.

The laptop is the unprivileged ``torchx-laptop`` account (tools/sshd-up.sh); "another
user" is ``torchx-login``, submitting with Slurm's own ``sbatch``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx_testsupport import laptop, one_error_line

HANDLE = re.compile(r"slurm://torchx/(\d+)(@\S+)?")


@pytest.fixture
def workspace(client: None) -> Iterator[Path]:
    ws = laptop.own_dir(f"sec-{uuid.uuid4().hex[:8]}")
    (ws / "train.py").write_text("print('trained')\n")
    _give(ws / "train.py")
    yield ws


def _give(path: Path, user: str = laptop.USER) -> None:
    import shutil

    shutil.chown(path, user, user)


def _torchx(*args: str, cwd: Path, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        laptop.argv(["torchx", *args]),
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _as_login(*argv: str) -> subprocess.CompletedProcess[str]:
    """A command of the other user (the login node's account), from its home."""
    return subprocess.run(
        ["runuser", "-u", laptop.LOGIN_USER, "--", *argv],
        cwd=laptop.LOGIN_HOME,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# -- what a submission over ssh may delete ------------------------------------------------


@pytest.mark.parametrize("suffix", ["\n", " "])
def test_a_job_dir_read_back_as_an_existing_one_deletes_nothing(
    workspace: Path, suffix: str
) -> None:
    """``job_dir`` ``keep\\n`` was made, read back as ``keep`` (the existing results
    directory), filled with the workspace and then removed when sbatch refused."""
    keep = f"runs/{workspace.name}-keep"
    made = _as_login("sh", "-c", f'mkdir -p "{keep}" && echo 1,2 > "{keep}/results.csv"')
    assert made.returncode == 0, made.stderr
    request = {
        "scheduler": "slurm",
        "scheduler_args": {},
        "scheduler_cfg": {
            "ssh": laptop.LOGIN_NODE,
            "job_dir": f"~/{keep}{suffix}",
            "partition": "no-such-partition",  # sbatch refuses: the cleanup path
        },
        "component_name": "utils.sh",
        "component_args_str": ["true"],
    }
    proc = _torchx("run", "--stdin", cwd=workspace, input=json.dumps(request))
    line = one_error_line(proc, alone=False)
    assert "blanks around it or a control character" in line, line
    assert (laptop.LOGIN_HOME / keep / "results.csv").read_text() == "1,2\n"
    assert sorted(os.listdir(laptop.LOGIN_HOME / keep)) == ["results.csv"]


def test_a_refused_submission_removes_only_the_directory_it_made(workspace: Path) -> None:
    job_dir = f"runs/{workspace.name}-refused"
    proc = _torchx(
        "run", "-s", "slurm",
        "-cfg", f"ssh={laptop.LOGIN_NODE},job_dir=~/{job_dir},partition=no-such-partition",
        "utils.sh", "true",
        cwd=workspace,
    )  # fmt: skip
    assert "sbatch refused the job" in one_error_line(proc, alone=False)
    assert not (laptop.LOGIN_HOME / job_dir).exists()  # made by it, marked, removed


def test_a_workspace_link_cannot_replace_the_batch_script(workspace: Path) -> None:
    """A link named ``torchx-sbatch.sh`` made sbatch run the linked file and TorchX report
    SUCCEEDED; now the workspace is refused before anything is sent or queued, and no copy
    of it is left in the temp dir."""
    os.symlink("/tmp/not-the-script.sh", workspace / "torchx-sbatch.sh")
    tmp = laptop.own_dir(f"tmp-{workspace.name}")
    job_dir = f"runs/{workspace.name}-link"
    proc = subprocess.run(
        laptop.argv(
            ["torchx", "run", "-s", "slurm", "-cfg",
             f"ssh={laptop.LOGIN_NODE},job_dir=~/{job_dir}", "utils.sh", "true"],
            env={"TMPDIR": str(tmp)},
        ),
        cwd=workspace, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    line = one_error_line(proc, alone=False)
    assert "holds 'torchx-sbatch.sh', a name TorchX writes into the job's directory" in line
    assert not (laptop.LOGIN_HOME / job_dir).exists()
    assert os.listdir(tmp) == []


def test_a_submission_refused_after_the_copy_leaves_none_in_the_temp_dir(
    workspace: Path,
) -> None:
    """Over ssh the workspace is copied here first; a run option refused after that (a
    malformed time limit) left the copy behind."""
    tmp = laptop.own_dir(f"tmp-{workspace.name}")
    proc = subprocess.run(
        laptop.argv(
            ["torchx", "run", "-s", "slurm", "-cfg",
             f"ssh={laptop.LOGIN_NODE},job_dir=~/runs/{workspace.name}-t,time=soon",
             "utils.sh", "true"],
            env={"TMPDIR": str(tmp)},
        ),
        cwd=workspace, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert "time='soon' is not a Slurm time limit" in one_error_line(proc, alone=False)
    assert os.listdir(tmp) == []


def test_the_workspace_is_streamed_not_held_in_memory(workspace: Path) -> None:
    """A 160 MiB workspace file reaches the login node while the laptop's torchx stays far
    below its size (the whole tar was held in memory: 329 MB for 300 MB)."""
    big = workspace / "weights.bin"
    with open(big, "wb") as f:  # real data (not a hole): all of it crosses the connection
        for _ in range(160):
            f.write(b"\x01" * (1 << 20))
    _give(big)
    job_dir = f"runs/{workspace.name}-big"
    measure = (
        "import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]);"
        " print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)"
    )
    proc = laptop.run(
        "python", "-c", measure, "torchx", "run", "-s", "slurm",
        "-cfg", f"ssh={laptop.LOGIN_NODE},job_dir=~/{job_dir}", "utils.sh", "true",
        cwd=workspace, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    peak_mb = int(proc.stdout.split()[-1]) / 1024
    assert (laptop.LOGIN_HOME / job_dir / "weights.bin").stat().st_size == 160 << 20
    assert peak_mb < 120, f"torchx (or ssh) peaked at {peak_mb:.0f} MB for a 160 MiB workspace"


def test_a_sparse_file_reaches_the_login_node_sparse(workspace: Path) -> None:
    """A preallocated 1 GiB checkpoint with data only at its ends is neither sent nor
    written at its full size on the cluster."""
    sparse = workspace / "ckpt.bin"
    with open(sparse, "wb") as f:
        f.write(b"head")
        f.seek(1 << 30)
        f.write(b"tail")
    _give(sparse)
    job_dir = f"runs/{workspace.name}-sparse"
    out = _torchx(
        "run", "--wait", "-s", "slurm", "-cfg", f"ssh={laptop.LOGIN_NODE},job_dir=~/{job_dir}",
        "utils.sh", "true", cwd=workspace,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    there = laptop.LOGIN_HOME / job_dir / "ckpt.bin"
    assert there.stat().st_size == (1 << 30) + 4
    # holes kept: a few MiB at most (the local copy writes data in 1 MiB chunks), not 1 GiB
    assert there.stat().st_blocks * 512 < 8 << 20
    with open(there, "rb") as f:
        assert f.read(4) == b"head"
        f.seek(1 << 30)
        assert f.read() == b"tail"


# -- what other users of the cluster can read or do -------------------------------------


def test_role_env_is_not_on_any_command_line_slurm_records(workspace: Path) -> None:
    """``sacct``'s SubmitLine (and ``ps``) showed the srun line, env values included, to
    every user of the cluster; the values still reach the replica."""
    out = _torchx(
        "run", "--wait", "--log", "-s", "slurm",
        "-cfg", f"ssh={laptop.LOGIN_NODE},job_dir=~/runs/{workspace.name}-env",
        "utils.sh", "--env", "HF_TOKEN=hf-visible-to-nobody,DB_URL=db two",
        "sh", "-c", 'echo "token=$HF_TOKEN db=$DB_URL"',
        cwd=workspace,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "sh/0 token=hf-visible-to-nobody db=db two" in out.stderr
    job_id = HANDLE.search(out.stdout).group(1)  # type: ignore[union-attr]
    recorded = subprocess.run(
        ["sacct", "-n", "-P", "-j", job_id, "--format=JobID,SubmitLine%2000"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "srun " in recorded, recorded  # the steps' lines are recorded
    assert "hf-visible-to-nobody" not in recorded and "db two" not in recorded
    # the env file is gone with the attempt, and was private while it lived
    assert not list((laptop.LOGIN_HOME / "runs" / f"{workspace.name}-env").glob(".torchx-env-*"))


@pytest.fixture
def others_job(slurm_cluster: None) -> Iterator[str]:
    """A pending job of another user, named with a terminal escape sequence."""
    name = "\x1b]0;owned\x07x"
    proc = _as_login(
        "sbatch", "--parsable", "--hold", "-o", "/dev/null", f"--job-name={name}",
        "--wrap", "sleep 60",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    job_id = proc.stdout.strip()
    yield job_id
    subprocess.run(["scancel", job_id], check=False)


def test_list_shows_only_ones_own_jobs_and_cancel_refuses_anothers(
    others_job: str, tmp_path: Path
) -> None:
    env = {**os.environ, "TORCHX_HOME": str(tmp_path)}
    torchx = ["python3", "-m", "torchx.cli.main"]
    listed = subprocess.run(
        [*torchx, "list", "-s", "slurm"], capture_output=True, text=True, env=env, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert f"slurm://torchx/{others_job}" not in listed.stdout
    cancel = subprocess.run(
        [*torchx, "cancel", f"slurm://torchx/{others_job}"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    line = one_error_line(cancel)
    assert f"belongs to {laptop.LOGIN_USER}, not to root" in line
    state = subprocess.run(
        ["squeue", "-h", "-j", others_job, "-o", "%T"], capture_output=True, text=True
    )
    assert state.stdout.strip() == "PENDING"  # still there: root's scancel would have obeyed


def test_job_names_from_the_cluster_reach_the_terminal_escaped(
    slurm_cluster: None, tmp_path: Path
) -> None:
    name = "\x1b[2J\x1b]0;owned\x07mine"
    job_id = subprocess.run(
        ["sbatch", "--parsable", "--hold", "-o", "/dev/null", f"--job-name={name}",
         "--wrap", "sleep 60"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    ).stdout.strip()  # fmt: skip
    try:
        env = {**os.environ, "TORCHX_HOME": str(tmp_path)}
        for args in (["list", "-s", "slurm"], ["status", f"slurm://torchx/{job_id}"]):
            shown = subprocess.run(
                ["python3", "-m", "torchx.cli.main", *args],
                capture_output=True, text=True, env=env, timeout=60,
            )  # fmt: skip
            assert shown.returncode == 0, shown.stderr
            assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
        assert "\\x1b[2J\\x1b]0;owned\\x07mine" in listed_name(job_id, env)
    finally:
        subprocess.run(["scancel", job_id], check=False)


def listed_name(job_id: str, env: dict[str, str]) -> str:
    shown = subprocess.run(
        ["python3", "-m", "torchx.cli.main", "list", "-s", "slurm", "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    rows = json.loads(shown.stdout)
    (row,) = [r for r in rows if r["app_handle"].endswith(f"/{job_id}")]
    return str(row["name"])


# -- login shells that are not POSIX --------------------------------------------------------


@pytest.mark.parametrize("account", ["torchx-tcsh", "torchx-fish"])
def test_a_login_node_account_with_a_csh_or_fish_shell(workspace: Path, account: str) -> None:
    """Every command reaches the login node's programs word for word whatever the account's
    login shell; the job's TORCHX_JOB_ID is the handle `run` printed, login node included."""
    target = f"{account}@127.0.0.1:{laptop.PORT}"
    message = "it's a \\ test! $HOME `id` ;x"
    out = _torchx(
        "run", "--wait", "--log", "-s", "slurm",
        "-cfg", f"ssh={target},job_dir=~/runs/{workspace.name}",
        "utils.sh", "sh", "-c", 'printf "%s|%s\\n" "$1" "$TORCHX_JOB_ID"', "sh", message,
        cwd=workspace,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    handle = out.stdout.strip().splitlines()[-1]
    assert handle.endswith(f"@{target}"), out.stdout
    assert f"sh/0 {message}|{handle}" in out.stderr, out.stderr
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # accounting records the job a moment after it ends
        listed = _torchx("list", "-s", "slurm", "-cfg", f"ssh={target}", cwd=workspace)
        if handle in listed.stdout:
            break
        time.sleep(0.5)
    assert handle in listed.stdout, listed.stdout + listed.stderr


# -- another user of a shared job directory and the role env files -----------------------

SECRET = "hf_" + uuid.uuid4().hex
_ENV_COMPONENT = f'''
from torchx.specs import AppDef, Resource, Role


def train(lr: float = 0.1) -> AppDef:
    role = Role(
        name="train",
        image="/tmp",
        entrypoint="sh",
        args=["-c", 'echo "token seen: ${{HF_TOKEN:+yes}}"'],
        env={{"HF_TOKEN": "{SECRET}"}},
        resource=Resource(cpu=1, gpu=0, memMB=128),
    )
    return AppDef(name="envsweep", roles=[role])
'''


def _last_job_id() -> int:
    """The id Slurm gave the job submitted just now (the next ones follow it)."""
    out = subprocess.run(
        ["sbatch", "--parsable", "--output=/dev/null", "--wrap", "true"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    return int(out.strip().split(";")[0])


def _pre_make(shared: Path, names: list[str]) -> None:
    """The other user makes ``.torchx-env-*`` directories for the next job ids, open to
    all, each holding the files a replica would source, whose lines run its own command."""
    script = "\n".join(
        f'mkdir -m 777 "{shared}/{name}" && for f in sh-0 envsweep_train-0; do '
        f'printf "touch {shared}/pwned-{name}\\n" > "{shared}/{name}/$f"; '
        f'chmod 666 "{shared}/{name}/$f"; done'
        for name in names
    )
    made = _as_login("sh", "-ec", script)
    assert made.returncode == 0, made.stderr


@pytest.mark.parametrize("kind", ["job", "sweep"])
def test_a_pre_made_env_directory_neither_reads_the_secret_nor_runs_its_lines(
    slurm_cluster: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    kind: str,
) -> None:
    """Another user who can write the submit directory (sticky and open to all, as /tmp or
    a shared /scratch) pre-makes ``.torchx-env-<id>`` for the next job ids: the job refuses
    to write the role's env there, the secret stays with the submitter, and none of that
    user's lines runs."""
    import shutil

    from torchx_testsupport import terminal_status

    from torchx.runner import get_runner
    from torchx.specs import AppDef, AppState, Resource, Role

    shared = Path("/tmp") / f"torchx-shared-{uuid.uuid4().hex[:8]}"  # every user reaches it
    shared.mkdir()
    shared.chmod(0o1777)
    request.addfinalizer(lambda: shutil.rmtree(shared, ignore_errors=True))
    monkeypatch.chdir(shared)  # no job_dir: the job and its logs are in the submit dir
    after = _last_job_id()
    ids = range(after + 1, after + 40)
    _pre_make(
        shared,
        [f".torchx-env-{i}" for i in ids] + [f".torchx-env-{i}-{p}" for i in ids for p in (0, 1)],
    )
    runner = get_runner()
    try:
        if kind == "job":
            role = Role(
                name="sh", image="/tmp", entrypoint="sh",
                args=["-c", 'echo "token seen: ${HF_TOKEN:+yes}"'],
                env={"HF_TOKEN": SECRET}, resource=Resource(cpu=1, gpu=0, memMB=128),
            )  # fmt: skip
            handle = runner.run(AppDef(name="envjob", roles=[role]), "slurm")
        else:
            component = tmp_path / "envsweep.py"
            component.write_text(_ENV_COMPONENT)
            handle = runner.run_sweep(f"{component}:train", [], {"lr": [0.1, 0.2]}, "slurm")
        status = terminal_status(runner, handle, 120)
    finally:
        runner.close()
    assert status.state == AppState.FAILED, status
    written = "".join(
        p.read_text(errors="replace")
        for p in shared.rglob("*")
        if p.is_file() and p.stat().st_uid != 0
    )
    assert SECRET not in written  # nothing of the job's env in the other user's files
    logs = "".join(p.read_text(errors="replace") for p in shared.glob("slurm-*.out"))
    assert "is not this job's own private directory" in logs, logs
    assert "token seen: yes" not in logs
    assert not list(shared.glob("pwned-*"))  # the other user's lines never ran
