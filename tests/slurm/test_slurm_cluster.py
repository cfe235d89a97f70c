"""Real jobs through `torchx run -s slurm` and the Runner on a real Slurm cluster.

The cluster is Debian's Slurm 22.05 with 4 virtual nodes on localhost (tools/slurm-up.sh);
a heterogeneous job needs one node per replica.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import terminal_status

from torchx.schedulers.api import Stream
from torchx.specs import AppDef, AppState, Resource, Role, Workspace, macros

TORCHX = str(Path(sys.executable).parent / "torchx")
SMALL = Resource(cpu=1, gpu=0, memMB=256)


# the backend outlives the test: a key of this run only
KEY_RETRIED_RUN = f"retried-run-{uuid.uuid4().hex[:8]}"


def cli(
    *args: str, cwd: str | Path | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [TORCHX, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"torchx {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def wait(runner: Any, handle: str, timeout: float = 60) -> Any:
    return terminal_status(runner, handle, timeout)


def logs(runner: Any, handle: str, role: str, k: int = 0, streams: Any = None) -> str:
    return "".join(runner.log_lines(handle, role, k, streams=streams))


def app(*roles: Role, name: str = "t") -> AppDef:
    return AppDef(name=name, roles=list(roles))


def sh(script: str, name: str = "sh", n: int = 1, **kwargs: Any) -> Role:
    return Role(
        name=name,
        image=os.getcwd(),
        entrypoint="bash",
        args=["-c", script],
        num_replicas=n,
        resource=SMALL,
        **kwargs,
    )


def test_success_and_job_names(runner: Any, workdir: Path) -> None:
    handle = runner.run(app(sh("echo hello; echo oops >&2"), name="greet"), "slurm")
    status = wait(runner, handle)
    assert status.state == AppState.SUCCEEDED
    job_id = handle.rsplit("/", 1)[1]
    assert (workdir / f"slurm-{job_id}-sh-0.out").read_text() == "hello\n"
    assert logs(runner, handle, "sh") == "hello\noops\n"  # both streams by default
    assert logs(runner, handle, "sh", streams=Stream.STDOUT) == "hello\n"
    assert logs(runner, handle, "sh", streams=Stream.STDERR) == "oops\n"
    name = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-j", job_id, "--format=JobName"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    squeue = json.loads(subprocess.run(["squeue", "--json"], capture_output=True).stdout)
    names = [j["name"] for j in squeue["jobs"] if str(j["job_id"]) == job_id]
    assert (names or name) == ["greet:sh-0"]


def test_failure_reports_the_exit_code(runner: Any) -> None:
    handle = runner.run(app(sh("echo dying >&2; exit 3")), "slurm")
    status = wait(runner, handle)
    assert status.state == AppState.FAILED
    assert "exit code 3" in status.msg
    assert logs(runner, handle, "sh") == "dying\n"


def test_two_roles_het_job_with_env_and_macros(runner: Any) -> None:
    dump = 'echo "$ROLE $RID app=$APP host=$(hostname) rank0=${!R0}"'
    trainer = sh(dump, name="trainer", n=2)
    trainer.env = {"ROLE": "trainer", "RID": macros.replica_id, "APP": macros.app_id}
    trainer.env["R0"] = macros.rank0_env
    ps = sh(dump, name="ps")
    ps.env = {"ROLE": "ps", "RID": macros.replica_id, "APP": macros.app_id, "R0": macros.rank0_env}
    handle = runner.run(app(trainer, ps), "slurm")
    status = wait(runner, handle)
    assert status.state == AppState.SUCCEEDED, status
    job_id = handle.rsplit("/", 1)[1]
    for role, k in (("trainer", 0), ("trainer", 1), ("ps", 0)):
        assert logs(runner, handle, role, k).startswith(f"{role} {k} app={job_id} ")
        assert logs(runner, handle, role, k).rstrip().endswith("rank0=n1")
    desc = runner._scheduler("slurm").describe(job_id)
    hosts = [r.hostname for rs in desc.roles_statuses for r in rs.replicas]
    assert [rs.role for rs in desc.roles_statuses] == ["trainer", "ps"]
    assert len(set(hosts)) == 3  # one node per het component


def test_cli_wait_log_streams_and_exits_nonzero(workdir: Path, slurm_cluster: None) -> None:
    proc = cli(
        "run", "-s", "slurm", "--wait", "--log", "utils.sh", "bash", "-c",
        "echo first; sleep 1; echo second >&2; exit 4",
        check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr  # the CLI streams replica logs to stderr
    assert "sh/0 first\nsh/0 second\n" in out
    assert "exit code 4" in out


def test_cancel(runner: Any) -> None:
    handle = runner.run(app(sh("echo started; sleep 120")), "slurm")
    for line in runner.log_lines(handle, "sh", 0, should_tail=True):
        assert line == "started\n"
        break
    runner.cancel(handle)
    assert wait(runner, handle).state == AppState.CANCELLED
    job_id = handle.rsplit("/", 1)[1]
    record = Path(os.environ["TORCHX_HOME"], "slurm", f"{job_id}.record")
    assert record.exists()
    runner.delete(handle)  # Slurm keeps the job and its logs: so do status, list and log
    assert record.exists()
    assert runner.status(handle).state == AppState.CANCELLED
    assert logs(runner, handle, "sh").startswith("started\n")


def test_second_process_in_another_directory(runner: Any, tmp_path: Path) -> None:
    handle = runner.run(app(sh("echo from-the-job"), name="elsewhere"), "slurm")
    assert wait(runner, handle).state == AppState.SUCCEEDED
    other = tmp_path / "other"
    other.mkdir()
    status = cli("status", handle, cwd=other)
    assert "SUCCEEDED" in status.stdout
    assert cli("log", f"{handle}/sh/0", cwd=other).stdout == "sh/0 from-the-job\n"
    described = cli("describe", handle, cwd=other).stdout
    assert "sh" in described
    job_id = handle.rsplit("/", 1)[1]
    listed = cli("list", "-s", "slurm", cwd=other).stdout
    assert job_id in listed


def test_list_with_an_array_job_not_submitted_by_torchx(runner: Any, workdir: Path) -> None:
    """sacct names array tasks ``<id>_<task>`` (and pending arrays ``<id>_[1-2]``): list
    shows the array as one row, its id in job-id order (``int("12_1")`` would read 121)."""
    array = subprocess.run(
        ["sbatch", "--parsable", "--array=1-2", "--wrap", "true"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    handle = runner.run(app(sh("true"), name="beside-array"), "slurm")
    assert wait(runner, handle).state == AppState.SUCCEEDED
    deadline = time.monotonic() + 60
    while not {f"{array}_1|COMPLETED", f"{array}_2|COMPLETED"} <= set(subprocess.run(
        ["sacct", "-n", "--parsable2", "--allocations", "--format=JobID,State", "-j", array],
        capture_output=True, text=True, check=False,
    ).stdout.split()):  # fmt: skip
        assert time.monotonic() < deadline, "accounting never recorded the array tasks"
        time.sleep(0.5)
    listed = cli("list", "-s", "slurm").stdout
    ids = [line.split()[0].rsplit("/", 1)[-1] for line in listed.splitlines() if "://" in line]
    job_id = handle.rsplit("/", 1)[1]
    assert ids.index(array) < ids.index(job_id), ids
    assert not any(i.startswith(f"{array}_") for i in ids), ids  # its tasks are the array


def test_retry_by_requeue(runner: Any) -> None:
    role = sh(
        'echo "attempt ${SLURM_RESTART_COUNT:-0} $TORCHX_RUN_ID";'
        ' test "${SLURM_RESTART_COUNT:-0}" -ge 1'
    )
    role.max_retries = 1
    handle = runner.run(app(role), "slurm", idempotency_key=KEY_RETRIED_RUN)
    job_id = handle.rsplit("/", 1)[1]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = runner.status(handle)
        # AppStatus.msg says why it waits, straight from squeue
        if status.state == AppState.PENDING and status.msg.startswith("pending again"):
            break
        assert not status.is_terminal(), status
        time.sleep(0.2)
    assert status.num_restarts == 1
    assert "the last one ended: FAILED (exit code 1; retry 1 of 1)" in status.msg, status
    # Slurm holds a requeued job for 120 s (BeginTime); release it 2 s from now: slurmd
    # rejects a credential issued in the same second as the requeue revoked the old one
    # ("Job credential revoked"), and the job would fail instead of starting again
    subprocess.run(["scontrol", "update", f"jobid={job_id}", "starttime=now+2"], check=True)
    final = wait(runner, handle)
    batch_log = Path(f"slurm-{job_id}.out")
    detail = f"{final}\n{logs(runner, handle, 'sh')}\n{batch_log.read_text()}"
    assert (final.state, final.num_restarts) == (AppState.SUCCEEDED, 1), detail
    # nothing overwritten; the second attempt marked
    out = logs(runner, handle, "sh", streams=Stream.STDOUT)
    # one run id across the attempts: the key
    assert (
        out
        == f"attempt 0 {KEY_RETRIED_RUN}\n=== torchx: attempt 1 ===\nattempt 1 {KEY_RETRIED_RUN}\n"
    )
    first, last = final.attempts
    assert (first.attempt, first.state, first.cause, first.exit_code) == (
        0, AppState.FAILED, "exit_code", 1
    ), final.attempts  # fmt: skip
    assert (last.attempt, last.state) == (1, AppState.SUCCEEDED), final.attempts


def test_job_dir_workspace(
    runner: Any, tmp_path: Path, workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO")
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "run.sh").write_text('echo "in $(pwd)"; ls -1\n')
    (project / "data" / "big.bin").write_text("x")
    (project / ".torchxignore").write_text("data\n")
    job_dir = tmp_path / "job"
    role = sh("bash run.sh")
    role.workspace = Workspace({str(project): ""})
    handle = runner.run(app(role), "slurm", cfg={"job_dir": str(job_dir)})
    assert wait(runner, handle).state == AppState.SUCCEEDED
    assert f"Copied workspace {project} of role `sh` into {job_dir}" in caplog.text
    assert "ghcr.io" not in caplog.text  # no image Slurm does not use
    lines = logs(runner, handle, "sh").splitlines()
    assert lines[0] == f"in {job_dir}"
    assert "run.sh" in lines and "data" not in lines
    job_id = handle.rsplit("/", 1)[1]
    assert (job_dir / f"slurm-{job_id}-sh-0.out").exists()
    assert not list(workdir.iterdir())  # nothing written to the submit directory


NASTY = [
    "$(touch pwned)",
    "`touch pwned`",
    "it's",
    'say "hi"',
    "two  spaces",
    "line1\nline2",
    "ünïcødé ✓",
    ":",
    "; rm -rf x",
    "$HOME",
    "",
    "a\\b",
]


def test_injection_round_trip(runner: Any, workdir: Path) -> None:
    value = "v $(touch pwned) `id` 'q' \"d\"\nnext ü ; :"
    dump = "import sys, os, json; print(json.dumps([sys.argv[1:], os.environ['NASTY']]))"
    role = Role(
        name="py",
        image=str(workdir),
        entrypoint=sys.executable,
        args=["-c", dump, *NASTY],
        env={"NASTY": value},
        resource=SMALL,
    )
    handle = runner.run(app(role), "slurm")
    assert wait(runner, handle).state == AppState.SUCCEEDED
    got = json.loads(logs(runner, handle, "py", streams=_stdout()))
    assert got == [NASTY, value]
    assert not (workdir / "pwned").exists()


def test_env_names_a_shell_cannot_use_reach_the_replica(runner: Any, workdir: Path) -> None:
    """As upstream's Slurm passed them: a real project sets ``TORCH_CUDA_SANITIZER=1`` as a
    name; the replica sees TORCH_CUDA_SANITIZER='1=1'. Names stay data, never shell text."""
    show = "import os, json; print(json.dumps([os.environ['A'], os.environ['MY-VAR']]))"
    role = Role(
        name="py",
        image=str(workdir),
        entrypoint=sys.executable,
        args=["-c", show],
        env={"A=1;touch pwned;B": "x", "MY-VAR": "m"},
        resource=SMALL,
    )
    handle = runner.run(app(role), "slurm")
    assert wait(runner, handle).state == AppState.SUCCEEDED
    assert json.loads(logs(runner, handle, "py", streams=_stdout())) == ["1;touch pwned;B=x", "m"]
    assert not (workdir / "pwned").exists()


def _stdout() -> Any:
    from torchx.schedulers.api import Stream

    return Stream.STDOUT


def test_bad_input_one_line_and_nothing_left(
    slurm_cluster: None, workdir: Path, tmp_path: Path
) -> None:
    job_dir = tmp_path / "jd"
    cases = [
        (["-cfg", f"partition=nope,job_dir={job_dir}"], "Invalid partition name"),
        (["-cfg", "time=1h"], "is not a Slurm time limit"),
        (["-cfg", f"job_dir={workdir}"], "already exists"),
    ]
    for cfg, expected in cases:
        proc = cli("run", "-s", "slurm", *cfg, "utils.echo", "--msg", "x", check=False)
        assert proc.returncode != 0
        errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
        assert len(errors) == 1 and expected in errors[0], proc.stderr
        assert proc.stderr.strip().splitlines()[-1] == errors[0]  # no traceback after it
    assert not job_dir.exists()
    assert not os.path.exists(os.path.join(os.environ["TORCHX_HOME"], "slurm"))
    for handle, expected in (
        ("slurm://torchx/99999999", "not found"),
        ("slurm://torchx/abc", "not a Slurm job id"),
        ("slurm:/oops", "slurm:/oops"),
    ):
        proc = cli("status", handle, check=False)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode != 0 and len(lines) == 1 and expected in lines[0], proc.stderr


def test_missing_script_is_reported_before_queueing(slurm_cluster: None, workdir: Path) -> None:
    proc = cli("run", "-s", "slurm", "utils.python", "--script", "nope.py", check=False)
    assert proc.returncode != 0
    assert "script 'nope.py'" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_no_sbatch_on_path(slurm_cluster: None, workdir: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink("/bin/echo", bin_dir / "echo")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{bin_dir}"}
    # a missing script and a missing entrypoint are found too, but sbatch is the fix
    for component in (["utils.echo", "--msg", "x"], ["utils.python", "--script", "nope.py"],
                      ["utils.binary", "--entrypoint", "no-such-tool"]):  # fmt: skip
        proc = subprocess.run(
            [TORCHX, "run", "-s", "slurm", *component],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert proc.returncode != 0
        assert proc.stderr.strip() == (
            "torchx: error: sbatch not found: install Slurm's client tools or run on a login node"
        ), component


@pytest.mark.slow
def test_ddp_torchrun_with_gloo_on_two_nodes(workdir: Path, slurm_cluster: None) -> None:
    pytest.importorskip("torch")
    (workdir / "train.py").write_text(
        "import os, torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.tensor([dist.get_rank() + 1.0])\n"
        "dist.all_reduce(t)\n"
        "print(f'rank {dist.get_rank()}/{dist.get_world_size()} sum {int(t.item())}')\n"
        "dist.destroy_process_group()\n"
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(
        [TORCHX, "run", "-s", "slurm", "--wait", "--log", "dist.ddp", "-j", "2x1",
         "--cpu", "1", "--memMB", "1024", "--script", "train.py"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    out = proc.stdout + proc.stderr  # replica logs are streamed to stderr
    assert proc.returncode == 0, out
    assert "rank 0/2 sum 3" in out and "rank 1/2 sum 3" in out


def test_torchxconfig_cannot_inject_commands_into_the_batch_script(
    slurm_cluster: None, workdir: Path
) -> None:
    """An INI continuation line made a comment end the `# Run with:` line and run as shell
    on the node; now the value is refused in one line and nothing is queued."""
    pwned = workdir / "pwned"
    (workdir / ".torchxconfig").write_text(f"[slurm]\ncomment = x\n    touch {pwned} #\n")
    proc = cli("run", "-s", "slurm", "utils.echo", "--msg", "x", check=False)
    assert proc.returncode != 0
    (line,) = proc.stderr.strip().splitlines()  # the INI comment " #" is not part of it
    assert line == (
        f"torchx: error: run option comment='x\\ntouch {pwned}' contains a line break or"
        " control character; give a comment on one line (set in"
        f" {workdir}/.torchxconfig [slurm] comment)"
    )
    assert not pwned.exists()
    (workdir / ".torchxconfig").write_text("[slurm]\nmail-user = a@b.c\n    touch pwned\n")
    proc = cli("run", "-s", "slurm", "utils.echo", check=False)
    assert proc.returncode != 0 and "mail-user=" in proc.stderr
    assert not os.path.exists(os.path.join(os.environ["TORCHX_HOME"], "slurm"))


def test_comment_with_blanks_and_quotes_reaches_slurm(runner: Any) -> None:
    comment = """run 7: lr=0.1 "warm" it's $(nothing) `here`"""
    handle = runner.run(app(sh("echo ok")), "slurm", cfg={"comment": comment})
    assert wait(runner, handle).state == AppState.SUCCEEDED
    job_id = handle.rsplit("/", 1)[1]
    shown = subprocess.run(
        ["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, check=True
    )
    assert f" Comment={comment} " in shown.stdout


@pytest.mark.parametrize("dirname", ["my project", 'it\'s "quoted" #1 $HOME'])
def test_log_dir_with_blanks_and_quotes(runner: Any, tmp_path: Path, dirname: str) -> None:
    """Slurm can be used from `~/my project`: the #SBATCH --output path is quoted."""
    job_dir = tmp_path / dirname / "job"
    job_dir.parent.mkdir()
    role = sh('echo "in $(pwd)"')
    role.workspace = Workspace({str(tmp_path / dirname): ""})
    handle = runner.run(app(role), "slurm", cfg={"job_dir": str(job_dir)})
    assert wait(runner, handle).state == AppState.SUCCEEDED
    assert logs(runner, handle, "sh") == f"in {job_dir}\n"
    job_id = handle.rsplit("/", 1)[1]
    assert (job_dir / f"slurm-{job_id}.out").exists()  # the batch script's own log


def test_log_dir_with_a_line_break_is_refused(runner: Any, tmp_path: Path) -> None:
    job_dir = tmp_path / "a\ntouch pwned"
    with pytest.raises(ValueError, match=r"job_dir=.* a control character .a line break"):
        runner.run(app(sh("true")), "slurm", cfg={"job_dir": str(job_dir)})
    assert not job_dir.exists()


def test_job_dir_script_and_logs_are_private(runner: Any, tmp_path: Path) -> None:
    """torchx-sbatch.sh holds --env values (secrets) in clear: job_dir is 0700, its files
    and Slurm's logs 0600, as TORCHX_HOME is."""
    import stat

    job_dir = tmp_path / "private" / "job"  # missing parents are created
    role = sh("echo ok", env={"AWS_SECRET_ACCESS_KEY": "s3cr3t"})
    role.workspace = Workspace({str(tmp_path / "project"): ""})
    (tmp_path / "project").mkdir()
    handle = runner.run(app(role), "slurm", cfg={"job_dir": str(job_dir)})
    assert wait(runner, handle).state == AppState.SUCCEEDED
    assert stat.S_IMODE(job_dir.stat().st_mode) == 0o700
    made = sorted(job_dir.iterdir())
    assert {p.name.split("-")[0] for p in made} >= {"torchx", "slurm"}
    for path in made:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def _unreachable_confs(tmp_path: Path) -> dict[str, str]:
    """SLURM_CONF values under which Slurm cannot be reached: no configuration at all, and
    a controller that does not answer (a port nothing listens on, short timeouts)."""
    base = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf")).read_text()
    kept = [
        line
        for line in base.splitlines()
        if not line.startswith(("SlurmctldPort", "MessageTimeout", "TCPTimeout"))
    ]
    down = tmp_path / "down.conf"
    down.write_text("\n".join([*kept, "SlurmctldPort=6999", "MessageTimeout=1", "TCPTimeout=1"]))
    empty = tmp_path / "empty.conf"  # a missing file makes Slurm retry for 60 s first
    empty.write_text("")
    return {"unconfigured": str(empty), "controller down": str(down)}


def test_unreachable_slurm_is_not_reported_as_a_missing_job(
    runner: Any, tmp_path: Path, workdir: Path
) -> None:
    handle = runner.run(app(sh("echo ok")), "slurm")
    assert wait(runner, handle).state == AppState.SUCCEEDED
    for why, conf in _unreachable_confs(tmp_path).items():
        env = {**os.environ, "SLURM_CONF": conf}
        for command in (["status", handle], ["describe", handle], ["cancel", handle],
                        ["log", f"{handle}/sh/0"], ["list", "-s", "slurm"]):  # fmt: skip
            proc = subprocess.run(
                [TORCHX, *command], env=env, capture_output=True, text=True, timeout=120
            )
            lines = proc.stderr.strip().splitlines()
            assert proc.returncode != 0, (why, command, proc.stdout)
            assert len(lines) == 1 and "Slurm could not be reached" in lines[0], (why, lines)
            assert "not found" not in proc.stderr and "scontrol ping" in lines[0]
        run = subprocess.run(
            [TORCHX, "run", "-s", "slurm", "utils.echo"], env=env, capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip
        assert run.returncode != 0 and "could not be reached" in run.stderr, run.stderr


def test_job_id_inside_the_job_is_the_handle(runner: Any) -> None:
    handle = runner.run(app(sh('echo "$TORCHX_JOB_ID"')), "slurm")
    assert wait(runner, handle).state == AppState.SUCCEEDED
    assert logs(runner, handle, "sh") == f"{handle}\n"


def test_log_since_warns_in_one_plain_line(runner: Any) -> None:
    handle = runner.run(app(sh("echo hi")), "slurm")
    assert wait(runner, handle).state == AppState.SUCCEEDED
    proc = cli("log", "--since", "5m", f"{handle}/sh/0")
    assert proc.stdout.endswith("hi\n")
    assert proc.stderr.splitlines() == [
        "torchx: warning: this scheduler keeps no times with its log lines: since/until are"
        " ignored and every line is returned"
    ]


def test_run_wait_says_why_a_job_is_queued_and_ctrl_c_says_it_still_is(
    runner: Any, workdir: Path
) -> None:
    """With every node taken, `run --wait` prints the pending reason (explained) and, on
    Ctrl-C, that the job is still queued: not that it "keeps running"."""
    import signal

    blocking = sh("sleep 120", n=4)
    blocking.resource = Resource(cpu=2, gpu=0, memMB=256)  # a whole node each
    blocker = runner.run(app(blocking, name="blocker"), "slurm")
    proc = subprocess.Popen(
        [TORCHX, "run", "--wait", "-s", "slurm", "utils.sh", "--cpu", "2", "echo", "late"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None and proc.stdout is not None
        handle = proc.stdout.readline().strip()
        waiting = proc.stderr.readline()  # "pending" until Slurm has looked at the job once
        while waiting == f"torchx: {handle} is waiting: pending\n":
            waiting = proc.stderr.readline()
        assert waiting.startswith(f"torchx: {handle} is waiting: pending: "), waiting
        assert "Resources (waiting for nodes to become free)" in waiting or "Priority" in waiting
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
        assert rest.strip().splitlines()[-1] == (
            f"torchx: stopped waiting; {handle} is still queued (remove it with"
            f" `torchx cancel {handle}`)"
        )
        assert proc.returncode == 130
        runner.cancel(handle)
    finally:
        proc.kill()
        runner.cancel(blocker)


def test_list_filters(runner: Any, workdir: Path) -> None:
    """--state, --name and --limit filter the listing; --since narrows Slurm's own
    accounting window and the queue (a job submitted before it is left out)."""
    import json
    import time

    old = runner.run(app(sh("true"), name="oldjob"), "slurm")
    assert wait(runner, old).state == AppState.SUCCEEDED
    time.sleep(1.1)  # squeue's submit times have a resolution of one second
    cutoff = time.time()
    time.sleep(1.1)
    ok = runner.run(app(sh("true"), name="newok"), "slurm")
    bad = runner.run(app(sh("exit 3"), name="newbad"), "slurm")
    for handle in (ok, bad):
        wait(runner, handle)
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(cutoff))

    def listed(*args: str) -> list[str]:
        proc = cli("list", "-s", "slurm", "--json", *args)
        return [row["app_handle"] for row in json.loads(proc.stdout)]

    recent = listed("--since", since)
    assert ok in recent and bad in recent and old not in recent
    assert listed("--since", since, "--state", "failed") == [bad]
    assert listed("--since", since, "--name", "newo*") == [ok]
    assert listed("--since", since, "--limit", "1") == [recent[-1]]
    assert old in listed("--since", "1h")
