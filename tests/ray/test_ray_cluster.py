"""The ray scheduler on a real two-node Ray cluster (tools/ray-up.sh), through the CLI and
the Runner: results, replica placement, env and macros, logs, cancel, workspaces, the
pending reason and dist.ddp across both nodes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import submitted_as_status_says, wait_until
from torchx_testsupport.processes import pid_from, running
from torchx_testsupport.ray import (
    DASHBOARD,
    GCS_ADDRESS,
    LOGS,
    NODE_LOGS,
    RAY_PYTHON,
    alive_actors,
    dashboard_get,
)

from torchx.schedulers._ray import client as ray_client
from torchx.schedulers._ray.client import RayJobsClient, address_in_app_id, split_app_id
from torchx.schedulers._ray.status import events
from torchx.specs import AppDef, AppState, Resource, Role, macros

TORCHX = str(Path(sys.executable).parent / "torchx")


# the backend outlives the test: a key of this run only
KEY_RAY_RETRY = f"ray-retry-{uuid.uuid4().hex[:8]}"
KEY_RAY_K1 = f"ray-k1-{uuid.uuid4().hex[:8]}"


def job_id(handle: str) -> str:
    """The Ray submission id in an app handle (``ray://torchx/host:port-<id>``)."""
    return split_app_id(handle.rsplit("/", 1)[1])[1]


def cli(
    *args: str, cwd: Path | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [TORCHX, *args], capture_output=True, text=True, timeout=300, cwd=cwd, check=False
    )
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def sh(name: str, script: str, replicas: int = 1, **resource: Any) -> Role:
    return Role(
        name=name,
        image="unused",
        entrypoint="sh",
        args=["-c", script],
        num_replicas=replicas,
        resource=Resource(cpu=resource.pop("cpu", 1), gpu=0, memMB=128, **resource),
    )


WAIT_S = 150  # these apps end within seconds; a minute or two covers a loaded machine


class _Late(Exception):
    pass


def wait(runner: Any, handle: str) -> Any:
    """The app's final status. An app still going after WAIT_S fails the test with what
    TorchX and Ray say of it: its status, the driver's events and Ray's placement groups
    and resources (what a hang needs to be understood)."""
    deadline = time.monotonic() + WAIT_S

    def on_status(_: Any) -> None:
        if time.monotonic() > deadline:
            raise _Late

    try:
        status = runner.wait(handle, wait_interval=0.5, on_status=on_status)
    except _Late:
        pytest.fail(f"{handle} still going after {WAIT_S} s:\n{ray_view(runner, handle)}")
    assert status is not None
    return status


def ray_view(runner: Any, handle: str) -> str:
    """What TorchX and the dashboard say of an app: for a failure message."""
    parts = [f"status: {runner.status(handle)}"]
    try:
        parts.append("driver log:\n" + RayJobsClient(DASHBOARD).driver_log(job_id(handle)))
        for path in (
            "/api/v0/placement_groups?detail=1&limit=100",
            "/api/v0/actors?detail=1&limit=100",
            "/api/cluster_status",
        ):
            parts.append(f"{path}: {json.dumps(dashboard_get(path)['data'])[:20000]}")
    except Exception as e:  # the view is for the message only
        parts.append(f"(the dashboard did not answer: {e})")
    return "\n".join(parts)


def test_success_and_logs_through_the_cli(workdir: Path, ray_cluster: str) -> None:
    proc = cli("run", "-s", "ray", "--wait", "--log", "utils.echo", "--msg", "hello ray")
    handle = proc.stdout.strip()
    assert handle.startswith(f"ray://torchx/{address_in_app_id(ray_cluster)}-echo-")
    assert "echo/0 hello ray" in proc.stderr
    assert "finished SUCCEEDED" in proc.stderr
    # from another process and directory
    elsewhere = workdir.parent
    status = cli("status", handle, cwd=elsewhere).stdout
    assert "State: SUCCEEDED" in status
    assert cli("log", f"{handle}/echo/0", cwd=elsewhere).stdout == "echo/0 hello ray\n"
    assert handle in cli("list", "-s", "ray", cwd=elsewhere).stdout
    assert handle in cli("list", "-s", "ray", "--since", "10m", "--name", "echo").stdout
    assert handle not in cli("list", "-s", "ray", "--state", "failed").stdout
    assert "'name': 'echo'" in cli("describe", handle, cwd=elsewhere).stdout


def test_commands_reach_the_cluster_the_job_went_to(
    workdir: Path, ray_cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handle carries the dashboard given at submit: every later command, from another
    process and directory, reaches that cluster whatever RAY_ADDRESS says (here: nothing
    listens there), and without RAY_ADDRESS at all."""
    monkeypatch.setenv("RAY_ADDRESS", "http://127.0.0.1:9")
    address = f"dashboard_address={ray_cluster}"
    done = cli("run", "-s", "ray", "-cfg", address, "--wait", "utils.echo", "--msg", "far")
    handle = done.stdout.strip()
    assert "finished SUCCEEDED" in done.stderr
    elsewhere = workdir.parent
    assert "State: SUCCEEDED" in cli("status", handle, cwd=elsewhere).stdout
    assert cli("log", f"{handle}/echo/0", cwd=elsewhere).stdout == "echo/0 far\n"
    assert "'name': 'echo'" in cli("describe", handle, cwd=elsewhere).stdout
    assert handle in cli("list", "-s", "ray", "-cfg", address).stdout
    monkeypatch.delenv("RAY_ADDRESS")
    long = cli("run", "-s", "ray", "-cfg", address, "utils.sh", "sleep", "600").stdout.strip()
    monkeypatch.setenv("RAY_ADDRESS", "http://127.0.0.1:9")
    cli("cancel", long, cwd=elsewhere)
    assert "State: CANCELLED" in cli("status", long, cwd=elsewhere).stdout
    cli("delete", long, cwd=elsewhere)
    assert job_id(long) not in {j.get("submission_id") for j in dashboard_get("/api/jobs/")}


def test_failure_keeps_the_exit_code(runner: Any) -> None:
    handle = runner.run(AppDef("bad", [sh("main", "echo before; exit 3")]), "ray")
    status = wait(runner, handle)
    assert status.state == AppState.FAILED
    assert status.msg == "replica main/0 exited with code 3"
    (replica,) = status.roles[0].replicas
    assert replica.state == AppState.FAILED and replica.structured_error_msg == "exit code 3"


def test_two_roles_spread_over_both_nodes_with_env_and_macros(runner: Any) -> None:
    role_a = sh("a", 'echo "a $TORCHX_REPLICA_ID of ${app_id} rank0=$TORCHX_RANK0_HOST $LR"', 2)
    role_a.args[1] = role_a.args[1].replace("${app_id}", macros.app_id)
    role_a.env = {"LR": "0.1"}
    role_b = sh("b", f"echo b {macros.replica_id}", 2, devices={"worker_node": 1})
    handle = runner.run(
        AppDef("spread", [role_a, role_b]), "ray", cfg={"placement_strategy": "SPREAD"}
    )
    status = wait(runner, handle)
    assert status.state == AppState.SUCCEEDED, status
    app_id = job_id(handle)
    for k in (0, 1):
        (line,) = list(runner.log_lines(handle, "a", k))
        assert line.startswith(f"a {k} of {app_id} rank0=") and line.endswith(" 0.1\n")
        assert list(runner.log_lines(handle, "b", k)) == [f"b {k}\n"]
    # what Ray says: the b replicas ran on the worker node (its custom resource), and the
    # app as a whole used both nodes
    actors = dashboard_get("/api/v0/actors?detail=1&limit=10000")["data"]["result"]["result"]
    mine = {
        a["name"]: a["node_id"] for a in actors if str(a.get("name", "")).startswith(app_id + "/")
    }
    nodes = dashboard_get("/nodes?view=summary")["data"]["summary"]
    worker = {
        n["raylet"]["nodeId"]
        for n in nodes
        if "workerNode" in n["raylet"].get("resourcesTotal", {})
    }
    assert {mine[f"{app_id}/b/0/0"], mine[f"{app_id}/b/1/0"]} <= worker
    assert len(set(mine.values())) == 2


def test_streams_and_filters(runner: Any) -> None:
    from datetime import datetime, timedelta, timezone

    from torchx.schedulers.api import Stream

    script = "echo out1; echo err1 >&2; sleep 1; echo out2; echo err2 >&2"
    handle = runner.run(AppDef("streams", [sh("s", script)]), "ray")
    assert wait(runner, handle).state == AppState.SUCCEEDED
    assert list(runner.log_lines(handle, "s", 0, streams=Stream.STDOUT)) == ["out1\n", "out2\n"]
    assert list(runner.log_lines(handle, "s", 0, streams=Stream.STDERR)) == ["err1\n", "err2\n"]
    # stdout and stderr are merged by the time each line was written: lines written within
    # the same instant may come in either order, lines a second apart may not
    combined = list(runner.log_lines(handle, "s", 0))
    assert sorted(combined[:2]) == ["err1\n", "out1\n"]
    assert sorted(combined[2:]) == ["err2\n", "out2\n"]
    assert sorted(runner.log_lines(handle, "s", 0, regex="2$")) == ["err2\n", "out2\n"]
    future = datetime.now(timezone.utc) + timedelta(hours=1)
    assert list(runner.log_lines(handle, "s", 0, since=future)) == []
    assert len(list(runner.log_lines(handle, "s", 0, until=future))) == 4


def test_logs_still_read_once_ray_moved_them_to_old(runner: Any) -> None:
    """Ray's log monitor moves an ended worker's log files into ``logs/old/`` when it
    likes, one file at a time: done here by hand (the same move) for each of the replica's
    two files, its lines are still all there."""
    handle = runner.run(AppDef("moved", [sh("m", "echo out; echo err >&2")]), "ray")
    assert wait(runner, handle).state == AppState.SUCCEEDED
    log = RayJobsClient(DASHBOARD).driver_log(job_id(handle))
    (running,) = [e for e in events(log) if e["event"] == "running"]
    for name in (running["log_out"], running["log_err"]):
        [logs] = [d for d in NODE_LOGS if (d / name).exists() or (d / "old" / name).exists()]
        (logs / "old").mkdir(exist_ok=True)
        with contextlib.suppress(FileNotFoundError):  # Ray's monitor may have been first
            (logs / name).rename(logs / "old" / name)
        assert (logs / "old" / name).exists()
    assert sorted(runner.log_lines(handle, "m", 0)) == ["err\n", "out\n"]


def test_a_moved_log_file_is_read_whatever_ray_answers_for_where_it_was() -> None:
    """A read of a file just moved away is answered by Ray with a 500 or, now and then,
    an empty 200: files moved into ``old/`` one after the other (as its log monitor does)
    are read whole each time, not as empty."""
    client = RayJobsClient(DASHBOARD)
    nodes = dashboard_get("/api/v0/nodes?detail=1")["data"]["result"]["result"]
    (head,) = [n["node_id"] for n in nodes if n.get("is_head_node")]
    (LOGS / "old").mkdir(exist_ok=True)
    for i in range(40):
        name = f"torchx-test-moved-{os.getpid()}-{i}.out"
        content = f":header\nline {i}\n".encode()
        (LOGS / name).write_bytes(content)
        (LOGS / name).rename(LOGS / "old" / name)
        try:
            assert client.node_log(head, name) == content, f"read {i}"
        finally:
            (LOGS / "old" / name).unlink()


def test_follow_a_running_replica(runner: Any) -> None:
    handle = runner.run(
        AppDef("follow", [sh("f", "for i in 1 2 3; do echo line $i; sleep 1; done")]), "ray"
    )
    lines = list(runner.log_lines(handle, "f", 0, should_tail=True))
    assert lines == ["line 1\n", "line 2\n", "line 3\n"]
    assert wait(runner, handle).state == AppState.SUCCEEDED


def background(pid_file: Path, then: str) -> str:
    """A replica script that starts a process in the background (a grandchild of the
    actor, as a launcher's workers are), writes its pid to ``pid_file``, then runs ``then``."""
    return f"sleep 600 & echo $! > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}; {then}"


def test_cancel_ends_cancelled_and_every_process_of_the_replica(
    runner: Any, tmp_path: Path
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    handle = runner.run(AppDef("long", [sh("l", background(pid_file, "wait"))]), "ray")
    grandchild = pid_from(pid_file, 120)
    runner.cancel(handle)
    status = runner.status(handle)
    assert status.state == AppState.CANCELLED
    assert status.roles[0].replicas[0].state == AppState.CANCELLED
    # the driver went with the stop, its actors with it, and the keeper of the replica's
    # process group took what the replica had started (SIGTERM: sleep goes at once)
    wait_until(lambda: not running(grandchild), f"pid {grandchild} to end with the app", 30)
    wait_until(lambda: not alive_actors(job_id(handle)), "the app's actors to go", 30, 0.2)


def test_what_a_replica_leaves_running_ends_with_it(runner: Any, tmp_path: Path) -> None:
    """The replica's command exits while a process it started in the background still holds
    its output: the replica ends there (no wait on that process) and so does the process."""
    pid_file = tmp_path / "left.pid"
    handle = runner.run(AppDef("left", [sh("s", background(pid_file, "echo done"))]), "ray")
    assert wait(runner, handle).state == AppState.SUCCEEDED
    left = pid_from(pid_file, 5)
    wait_until(lambda: not running(left), f"pid {left} to end with the replica", 30)
    assert list(runner.log_lines(handle, "s", 0)) == ["done\n"]


def test_a_driver_left_without_its_job_supervisor_ends_its_app(runner: Any, tmp_path: Path) -> None:
    """What a stop that races the job's start leaves behind (Ray signals the shell it
    started the entrypoint in, and the driver under it runs on): the driver sees the process
    it was started from go, stops its replicas and exits. Here the driver is started under
    a shell the test then kills, on the real cluster."""
    pid_file = tmp_path / "grandchild.pid"
    app = AppDef("orphan", [sh("o", background(pid_file, "wait"))])
    job = runner.dryrun(app, "ray").request
    env = {**os.environ, "TORCHX_RAY_JOB": json.dumps(job.spec), "RAY_ADDRESS": GCS_ADDRESS}
    driver = Path(ray_client.__file__).with_name("driver.py")  # imports ray: not here
    # `; exit $?` keeps the shell above the driver (no exec), as Ray's own shell was
    shell = subprocess.Popen(
        ["sh", "-c", '"$0" "$1"; exit $?', str(RAY_PYTHON), str(driver)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert shell.stdout is not None
    try:
        for line in shell.stdout:  # up to the replica's start
            if '"event": "running"' in line:
                break
        grandchild = pid_from(pid_file, 60)
        shell.kill()
        shell.wait()
        rest: list[str] = []
        reader = threading.Thread(target=lambda: rest.extend(shell.stdout or []), daemon=True)
        reader.start()
        reader.join(timeout=60)  # EOF: the driver is gone
        assert not reader.is_alive(), "the driver outlived the process it was started from"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGKILL)  # the driver, if it is still there
    events = [json.loads(line[len("[torchx] ") :]) for line in rest if line.startswith("[")]
    assert [e["event"] for e in events] == ["orphaned", "stopped", "finished"], rest
    wait_until(lambda: not running(grandchild), f"pid {grandchild} to end with the app", 30)
    wait_until(lambda: not alive_actors(job.submission_id), "the app's actors to go", 30, 0.2)


def test_pending_says_what_it_waits_for_then_cancel(runner: Any) -> None:
    handle = runner.run(AppDef("huge", [sh("h", "true", cpu=64)]), "ray")
    deadline = time.monotonic() + 60
    status = runner.status(handle)
    while "waiting for resources" not in status.msg and time.monotonic() < deadline:
        time.sleep(0.5)
        status = runner.status(handle)
    assert status.state == AppState.PENDING
    assert status.msg.startswith("waiting for resources: 1 replica bundle(s) (1 x {CPU 64,")
    assert "the cluster has CPU 4" in status.msg
    runner.cancel(handle)
    assert runner.status(handle).state == AppState.CANCELLED


def test_placement_timeout_fails_with_the_reason(runner: Any) -> None:
    handle = runner.run(
        AppDef("never", [sh("n", "true", cpu=64)]), "ray", cfg={"placement_timeout_s": 3}
    )
    status = wait(runner, handle)
    assert status.state == AppState.FAILED
    assert status.msg.startswith("resources never became free: 1 replica bundle(s)")


def test_retries_restart_a_failed_replica(runner: Any, workdir: Path) -> None:
    # the marker is per app: jobs with the same package share its unpacked working dir
    marker = f".done-{macros.app_id}"
    script = (
        f"if [ -e {marker} ]; then echo second $TORCHX_RUN_ID; else touch {marker};"
        " echo first $TORCHX_RUN_ID; exit 1; fi"
    )
    role = sh("r", script)
    role.max_retries = 1
    handle = runner.run(AppDef("retry", [role]), "ray", idempotency_key=KEY_RAY_RETRY)
    status = wait(runner, handle)
    # each attempt runs in a fresh actor whose working dir is the job's: the marker survives
    assert status.state == AppState.SUCCEEDED, status
    assert list(runner.log_lines(handle, "r", 0)) == [
        f"first {KEY_RAY_RETRY}\n",
        f"second {KEY_RAY_RETRY}\n",
    ]
    assert runner.describe(handle) is not None
    first, last = status.attempts
    assert (first.attempt, first.state, first.cause, first.exit_code) == (
        0, AppState.FAILED, "exit_code", 1
    ), status.attempts  # fmt: skip
    assert (last.attempt, last.state) == (1, AppState.SUCCEEDED), status.attempts
    assert first.end is not None and last.start is not None and first.end <= last.start


def test_a_second_run_with_the_key_returns_the_first_handle(runner: Any, workdir: Path) -> None:
    app = AppDef("keyed", [sh("r", "echo run=$TORCHX_RUN_ID")])
    first = runner.run(app, "ray", idempotency_key=KEY_RAY_K1)
    assert wait(runner, first).state == AppState.SUCCEEDED
    again = runner.run(app, "ray", idempotency_key=KEY_RAY_K1)
    assert again == first and runner.found_by_idempotency_key(again)
    suffix = first.rsplit("-", 1)[1]
    (row,) = [a for a in runner.list("ray") if a.app_id.endswith(suffix)]
    submitted_as_status_says(row, runner.status(first))
    assert list(runner.log_lines(first, "r", 0)) == [f"run={KEY_RAY_K1}\n"]


def test_logs_without_a_role_are_the_jobs_whole_log(runner: Any, workdir: Path) -> None:
    """codeflare's ``job.logs()`` (and its operator's e2e test) ask for the log of no
    role: the job's whole log, as upstream's Ray scheduler gives it, every role's lines
    in it; followed, it ends with the job."""
    app = AppDef("whole", [sh("a", "echo from-a"), sh("b", "echo from-b")])
    handle = runner.run(app, "ray")
    followed = "".join(runner.log_lines(handle, None, should_tail=True))
    assert wait(runner, handle).state == AppState.SUCCEEDED
    whole = "".join(runner.log_lines(handle, None))
    for text in (followed, whole):
        assert "from-a" in text and "from-b" in text, text
    sched = runner._scheduler("ray")
    assert "from-a" in "".join(sched.log_iter(handle.rsplit("/", 1)[1], None))


def test_a_key_is_each_users_on_a_shared_cluster(
    runner: Any, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two users of one Ray cluster run the same key: neither's run takes the other's job."""
    from torchx_testsupport.idempotency import check_a_key_is_each_users, per_user_key

    key = per_user_key()
    app = AppDef("peruser", [sh("r", "true")])
    check_a_key_is_each_users(lambda: runner.run(app, "ray", idempotency_key=key), monkeypatch)


def test_a_replica_lost_with_its_actor_restarts_as_the_next_attempt(
    runner: Any, tmp_path: Path
) -> None:
    """The replica's actor is killed (as when its node goes) the instant after the replica
    wrote a line: the line is kept, and the replica restarts with TORCHX_ATTEMPT 1 although
    max_retries is 0 (its own failure would have ended the app)."""
    go = tmp_path / "actor.pid"  # where the test puts the pid of attempt 0's actor
    script = (
        f'[ "$TORCHX_ATTEMPT" = 0 ] && until [ -e {go} ]; do sleep 0.05; done && read actor < {go};'
        f' echo "attempt $TORCHX_ATTEMPT"; [ "$TORCHX_ATTEMPT" != 0 ] && exit 0;'
        " kill -9 $actor; exec sleep 300"  # (builtins: nothing between the line and the kill)
    )
    handle = runner.run(AppDef("lost", [sh("r", script)]), "ray")
    actor = f"{job_id(handle)}/r/0/0"
    wait_until(lambda: alive_actors(job_id(handle)).get(actor), f"actor {actor}", 120, 0.2)
    (tmp_path / "pid.tmp").write_text(str(alive_actors(job_id(handle))[actor]))
    (tmp_path / "pid.tmp").rename(go)
    status = wait(runner, handle)
    assert (status.state, status.num_restarts) == (AppState.SUCCEEDED, 1), status
    assert list(runner.log_lines(handle, "r", 0)) == ["attempt 0\n", "attempt 1\n"]


def test_workspace_script_runs(workdir: Path) -> None:
    (workdir / "train.py").write_text(
        "import os\nprint('trained in', os.path.basename(os.getcwd()))\n"
    )
    (workdir / ".torchxignore").write_text("secret.txt\n")
    (workdir / "secret.txt").write_text("do not ship")
    (workdir / "check.py").write_text(
        "import os\nprint('secret shipped:', os.path.exists('secret.txt'))\n"
    )
    proc = cli("run", "-s", "ray", "--wait", "--log", "utils.python", "--script", "train.py")
    assert "python/0 trained in _ray_pkg_" in proc.stderr
    proc = cli("run", "-s", "ray", "--wait", "--log", "utils.python", "--script", "check.py")
    assert "python/0 secret shipped: False" in proc.stderr
    assert not (workdir / ".torchx_ray").exists(), "the driver must not land in the user's dir"


def test_unknown_job_and_bad_address_are_one_line(workdir: Path, tmp_path: Path) -> None:
    proc = cli("status", "ray://torchx/no-such-job", check=False)
    assert proc.returncode != 0 and proc.stderr.strip().count("\n") == 0
    assert "not found" in proc.stderr
    env = {**os.environ, "RAY_ADDRESS": "http://127.0.0.1:1"}
    proc = subprocess.run(
        [TORCHX, "run", "-s", "ray", "utils.echo"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == (
        "torchx: error: cannot reach the Ray dashboard at http://127.0.0.1:1 (from RAY_ADDRESS:"
        " connection refused); start the cluster, or point -cfg dashboard_address="
        "http://HOST:8265 (or RAY_API_SERVER_ADDRESS) at its dashboard"
    )


def test_check_reports_the_cluster(ray_cluster: str) -> None:
    from torchx_testsupport import torchx_check

    entry = torchx_check("-s", "ray")["ray"]
    assert entry["status"] == "ready"
    assert entry["checks"]["dashboard"][1] == f"Ray 2.60.0 at {ray_cluster} (from RAY_ADDRESS)"
    assert entry["checks"]["nodes"][1].startswith("2 alive: CPU 4")
    down = torchx_check("-s", "ray", env={"RAY_ADDRESS": "http://127.0.0.1:1"})["ray"]
    assert down["status"] == "not ready" and down["exit"] == 1


@pytest.mark.slow
def test_ddp_with_gloo_across_the_two_nodes(workdir: Path) -> None:
    (workdir / "train.py").write_text(
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.tensor([dist.get_rank() + 1.0])\n"
        "dist.all_reduce(t)\n"
        "print(f'rank {dist.get_rank()}/{dist.get_world_size()} sum {int(t.item())}')\n"
        "dist.destroy_process_group()\n"
    )
    probe = subprocess.run(
        [TORCHX, "run", "-s", "ray", "--wait", "--log", "utils.python", "-c", "import torch"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(
            "the Ray cluster's Python has no torch (tools/ray-up.sh installs torch==2.13.0 there)"
        )
    proc = cli(
        "run", "-s", "ray", "-cfg", "placement_strategy=STRICT_SPREAD", "--wait", "--log",
        "dist.ddp", "-j", "2x1", "--cpu", "1", "--memMB", "512", "--script", "train.py",
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert "rank 0/2 sum 3" in out and "rank 1/2 sum 3" in out


def test_delete_removes_the_job(runner: Any) -> None:
    handle = runner.run(AppDef("gone", [sh("g", "echo bye")]), "ray")
    assert wait(runner, handle).state == AppState.SUCCEEDED
    runner.delete(handle)
    assert runner.describe(handle) is None
    app_id = job_id(handle)
    assert app_id.startswith("gone-")
    assert app_id not in {j.get("submission_id") for j in dashboard_get("/api/jobs/")}
