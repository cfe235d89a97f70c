"""local_docker against a real Docker daemon: real containers, real network, real logs."""

from __future__ import annotations

import datetime
import json
import math
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import submitted_as_status_says
from torchx_testsupport.docker import IMAGE, REGISTRY, all_torchx_containers, app_containers
from torchx_testsupport.idempotency import check_a_key_is_each_users, per_user_key
from torchx_testsupport.processes import concurrent_handles

from torchx import specs
from torchx.runner import get_runner
from torchx.schedulers import docker_scheduler as ds
from torchx.schedulers.api import Stream
from torchx.specs import AppState

SCHED = "local_docker"


# the backend outlives the test: a key of this run only
KEY_DK_ATTEMPTS = f"dk-attempts-{uuid.uuid4().hex[:8]}"
KEY_DOCKER_K1 = f"docker-k1-{uuid.uuid4().hex[:8]}"
KEY_DOCKER_TOGETHER = f"docker-together-{uuid.uuid4().hex[:8]}"
KEY_DOCKER_RACE = f"docker-race-{uuid.uuid4().hex[:8]}"


def _app(name: str, *roles: specs.Role) -> specs.AppDef:
    return specs.AppDef(name=name, roles=list(roles))


def _role(name: str, script: str, **kwargs: Any) -> specs.Role:
    """A role running ``sh -c script`` in the test image."""
    return specs.Role(name=name, image=IMAGE, entrypoint="sh", args=["-c", script], **kwargs)


def _py(name: str, code: str, *args: str, **kwargs: Any) -> specs.Role:
    return specs.Role(
        name=name, image=IMAGE, entrypoint="python", args=["-c", code, *args], **kwargs
    )


def _run(runner: Any, app: specs.AppDef, cfg: dict[str, Any] | None = None, **kw: Any) -> Any:
    handle = runner.run(app, SCHED, cfg or {}, **kw)
    status = runner.wait(handle, wait_interval=0.5)
    return handle, status


def _app_id(handle: str) -> str:
    return handle.rsplit("/", 1)[-1]


def _log(runner: Any, handle: str, role: str, k: int = 0, **kw: Any) -> list[str]:
    return list(runner.log_lines(handle, role, k, **kw))


def _torchx(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    script = Path(sys.executable).parent / "torchx"
    return subprocess.run(
        [str(script), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


# -- lifecycle -----------------------------------------------------------------------------


def test_exit_codes_decide_the_state(runner: Any) -> None:
    handle, status = _run(runner, _app("ok", _role("main", "echo fine")))
    assert status.state == AppState.SUCCEEDED
    handle, status = _run(runner, _app("bad", _role("main", "echo oops >&2; exit 3")))
    assert status.state == AppState.FAILED
    replica = status.roles[0].replicas[0]
    assert replica.state == AppState.FAILED
    assert "exit code 3" in status.msg
    assert _log(runner, handle, "main") == ["oops\n"]


def test_replicas_reach_rank0_by_hostname(runner: Any) -> None:
    code = """
import os, socket, sys, time
rid = int(sys.argv[1])
print("host", socket.gethostname(), flush=True)
if rid == 0:
    srv = socket.create_server(("0.0.0.0", 29555))
    conn, _ = srv.accept()
    print("got", conn.recv(100).decode(), flush=True)
else:
    deadline = time.time() + 60
    while True:
        try:
            s = socket.create_connection((os.environ["TORCHX_RANK0_HOST"], 29555), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
    s.sendall(b"hello from " + str(rid).encode())
"""
    app = _app("net", _py("net", code, specs.macros.replica_id, num_replicas=2))
    handle, status = _run(runner, app)
    assert status.state == AppState.SUCCEEDED, status
    rank0 = _log(runner, handle, "net", 0)
    app_id = _app_id(handle)
    assert rank0 == [f"host {app_id}-net-0\n", "got hello from 1\n"]
    assert _log(runner, handle, "net", 1) == [f"host {app_id}-net-1\n"]
    hosts = [r.hostname for r in status.roles[0].replicas]
    assert hosts == [f"{app_id}-net-0", f"{app_id}-net-1"]


def test_job_id_inside_the_job_is_the_handle(runner: Any) -> None:
    handle, status = _run(runner, _app("jobid", _role("j", 'echo "$TORCHX_JOB_ID"')))
    assert status.state == AppState.SUCCEEDED
    assert _log(runner, handle, "j") == [f"{handle}\n"]


def test_env_and_macros_per_replica(runner: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_DKT_COPIED", "from-launcher")
    monkeypatch.setenv("TORCHX_DKT_OVERRIDDEN", "launcher-loses")
    code = (
        "import os, sys; keys = ['TORCHX_DKT_COPIED', 'TORCHX_DKT_OVERRIDDEN', 'FROM_CFG',"
        " 'RID', 'TORCHX_RANK0_HOST', 'TORCHX_IMAGE'];"
        " print(sys.argv[1:], [os.environ.get(k) for k in keys])"
    )
    role = _py(
        "env",
        code,
        specs.macros.app_id,
        specs.macros.replica_id,
        num_replicas=2,
        env={"RID": f"r{specs.macros.replica_id}", "TORCHX_DKT_OVERRIDDEN": "role-wins"},
    )
    cfg = {"copy_env": ["TORCHX_DKT_*"], "env": {"FROM_CFG": "cfg", "TORCHX_DKT_OVERRIDDEN": "x"}}
    handle, status = _run(runner, _app("env", role), cfg)
    assert status.state == AppState.SUCCEEDED
    app_id = _app_id(handle)
    rank0 = f"{app_id}-env-0"
    for rid in (0, 1):
        expected = [
            [app_id, str(rid)],
            ["from-launcher", "role-wins", "cfg", f"r{rid}", rank0, IMAGE],
        ]
        assert _log(runner, handle, "env", rid) == [f"{expected[0]} {expected[1]}\n"]


def test_env_names_a_shell_cannot_use_reach_the_container(runner: Any) -> None:
    """As upstream passed them: ``TORCH_CUDA_SANITIZER=1`` as a name (a real project's
    typo) gives TORCH_CUDA_SANITIZER='1=1'; ``MY-VAR`` is set as given."""
    code = "import os; print(os.environ['TORCH_CUDA_SANITIZER'], os.environ['MY-VAR'])"
    role = _py("names", code, env={"TORCH_CUDA_SANITIZER=1": "1", "MY-VAR": "m"})
    handle, status = _run(runner, _app("names", role))
    assert status.state == AppState.SUCCEEDED
    assert _log(runner, handle, "names") == ["1=1 m\n"]


def test_mounts_bind_volume_and_device(runner: Any, docker_client: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "in.txt").write_text("from host\n")
    ro = tmp_path / "ro"
    ro.mkdir()
    volume = "torchx-dkt-volume"
    docker_client.api.create_volume(volume)
    try:
        script = (
            "cat /data/in.txt; echo written > /data/out.txt;"
            " (echo x > /ro/f.txt) 2>/dev/null && echo ro-writable || echo ro-refused;"
            " echo kept > /vol/v.txt; cat /vol/v.txt;"
            " test -c /dev/torchx-null && echo device-ok"
        )
        role = _role(
            "m",
            script,
            mounts=[
                specs.BindMount(str(data), "/data"),
                specs.BindMount(str(ro), "/ro", read_only=True),
                specs.VolumeMount(volume, "/vol"),
                specs.DeviceMount("/dev/null", "/dev/torchx-null", "rw"),
            ],
        )
        handle, status = _run(runner, _app("mnt", role))
        assert status.state == AppState.SUCCEEDED, status
        assert _log(runner, handle, "m") == [
            "from host\n",
            "ro-refused\n",
            "kept\n",
            "device-ok\n",
        ]
        assert (data / "out.txt").read_text() == "written\n"
        assert not (ro / "f.txt").exists()
    finally:
        for handle in runner.test_handles:  # the volume is in use until its container goes
            runner.delete(handle)
        docker_client.api.remove_volume(volume, force=True)


def test_retries_use_the_restart_policy(runner: Any, tmp_path: Path) -> None:
    script = (
        "n=$(cat /state/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > /state/count;"
        " echo attempt $n; [ $n -ge 3 ]"
    )
    ok_dir = tmp_path / "ok"
    ok_dir.mkdir()
    role = _role("r", script, max_retries=2, mounts=[specs.BindMount(str(ok_dir), "/state")])
    handle, status = _run(runner, _app("retry", role))
    assert status.state == AppState.SUCCEEDED
    assert (ok_dir / "count").read_text() == "3\n"
    assert _log(runner, handle, "r") == ["attempt 1\n", "attempt 2\n", "attempt 3\n"]

    fail_dir = tmp_path / "fail"
    fail_dir.mkdir()
    role = _role("r", script, max_retries=1, mounts=[specs.BindMount(str(fail_dir), "/state")])
    handle, status = _run(runner, _app("retry", role))
    assert status.state == AppState.FAILED
    assert (fail_dir / "count").read_text() == "2\n"
    assert status.num_restarts == 1  # not -1
    assert status.msg == "r/0: exit code 1"  # role/replica, not a container name cut short


def test_every_attempt_sees_its_number(runner: Any) -> None:
    script = 'echo "attempt $TORCHX_ATTEMPT $TORCHX_RUN_ID"; [ "$TORCHX_ATTEMPT" -ge 2 ] || exit 3'
    handle, status = _run(
        runner, _app("attempts", _role("r", script, max_retries=2)), idempotency_key=KEY_DK_ATTEMPTS
    )
    assert (status.state, status.num_restarts) == (AppState.SUCCEEDED, 2)
    assert _log(runner, handle, "r") == [f"attempt {k} {KEY_DK_ATTEMPTS}\n" for k in range(3)]
    # each attempt on record, from the container's start and die events
    assert [(a.attempt, a.state, a.exit_code) for a in status.attempts] == [
        (0, AppState.FAILED, 3),
        (1, AppState.FAILED, 3),
        (2, AppState.SUCCEEDED, 0),
    ], status.attempts
    assert all(a.start is not None and a.end is not None for a in status.attempts)
    assert status.attempts[0].end <= status.attempts[1].start  # type: ignore[operator]
    # no retries asked for: the own failure is final, and the attempt is 0 all the same
    handle, status = _run(
        runner, _app("once", _role("r", 'echo "attempt $TORCHX_ATTEMPT"; exit 3'))
    )
    assert (status.state, status.num_restarts) == (AppState.FAILED, 0)
    assert _log(runner, handle, "r") == ["attempt 0\n"]


SCRATCH_PROGRAM = """package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("attempt", os.Getenv("TORCHX_ATTEMPT"), os.Args[1:])
	if _, err := os.Stat("/state/ran"); err != nil {
		os.WriteFile("/state/ran", []byte("1"), 0o644)
		os.Exit(1)
	}
}
"""


@pytest.fixture(scope="module")
def scratch_image(docker_client: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A ``FROM scratch`` image holding one static program and no shell, as distroless
    and scratch-based images are."""
    import shutil

    go = shutil.which("go") or "/usr/local/go/bin/go"
    build = tmp_path_factory.mktemp("scratch")
    (build / "main.go").write_text(SCRATCH_PROGRAM)
    (build / "go.mod").write_text("module scratchprog\n\ngo 1.21\n")
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}
    subprocess.run([go, "build", "-o", "prog", "."], cwd=build, env=env, check=True)
    (build / "Dockerfile").write_text("FROM scratch\nCOPY prog /prog\n")
    tag = "torchx-test/scratch:2"
    docker_client.images.build(path=str(build), tag=tag, rm=True)
    return tag


def test_a_role_with_retries_runs_in_an_image_without_a_shell(
    runner: Any, scratch_image: str, tmp_path: Path
) -> None:
    """A restartable replica's command ran through /bin/sh (to count attempts), so a
    distroless or scratch image could not start: it runs as the role gives it."""
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o777)
    role = specs.Role(
        name="r", image=scratch_image, entrypoint="/prog", args=["a b", "$HOME"],
        max_retries=1, mounts=[specs.BindMount(str(state), "/state")],
    )  # fmt: skip
    handle, status = _run(runner, _app("noshell", role))
    assert (status.state, status.num_restarts) == (AppState.SUCCEEDED, 1), status
    # no shell to count in: every attempt sees 0 (docs/differences.md)
    assert _log(runner, handle, "r") == ["attempt 0 [a b $HOME]\n"] * 2


def test_a_container_stopped_from_outside_is_not_its_own_failure(
    runner: Any, docker_client: Any
) -> None:
    role = _role("r", 'echo "attempt $TORCHX_ATTEMPT"; exec sleep 600', max_retries=2)
    handle = runner.run(_app("stopped", role), SCHED, {})
    deadline = time.monotonic() + 60
    while _log(runner, handle, "r") != ["attempt 0\n"]:
        assert time.monotonic() < deadline, "the container never started"
        time.sleep(0.2)
    (container,) = app_containers(docker_client, _app_id(handle))
    docker_client.api.kill(container["Id"])  # as `docker kill`, the daemon or the host would
    status = runner.wait(handle, wait_interval=0.5)
    assert (status.state, status.num_restarts) == (AppState.FAILED, 0), status
    assert "stopped from outside (SIGKILL" in status.msg, status.msg
    assert status.failure is not None
    assert (status.failure.cause, status.failure.signal) == ("preempted", "SIGKILL")
    assert _log(runner, handle, "r") == ["attempt 0\n"]


def test_cancel_keeps_containers_and_delete_removes_them(runner: Any, docker_client: Any) -> None:
    handle = runner.run(_app("sleepy", _role("s", "echo started; sleep 300")), SCHED, {})
    app_id = _app_id(handle)
    for line in runner.log_lines(handle, "s", 0, should_tail=True):
        assert line == "started\n"
        break
    assert runner.status(handle).state == AppState.RUNNING
    runner.cancel(handle)
    cancelled = runner.status(handle)
    assert cancelled.state == AppState.CANCELLED
    assert cancelled.roles[0].replicas[0].state == AppState.CANCELLED  # not FAILED
    assert cancelled.num_restarts == 0
    rows = {r.app_id: r for r in runner._scheduler(SCHED).list()}
    assert (rows[app_id].state, rows[app_id].name) == (AppState.CANCELLED, "sleepy")
    submitted_as_status_says(rows[app_id], cancelled)
    (role,) = runner.describe(handle).roles
    assert (role.entrypoint, role.args) == ("sh", ["-c", "echo started; sleep 300"])
    kept = app_containers(docker_client, app_id)
    assert [c["State"] for c in kept] == ["exited"]
    assert _log(runner, handle, "s") == ["started\n"]  # still inspectable

    runner.delete(handle)
    assert app_containers(docker_client, app_id) == []
    assert runner.status(handle) is None
    volumes = docker_client.api.volumes(filters={"label": [f"torchx.pytorch.org/app-id={app_id}"]})
    assert not volumes.get("Volumes")


# -- logs ----------------------------------------------------------------------------------


def test_log_streams_and_exact_lines(runner: Any) -> None:
    code = (
        "import sys\n"
        "for i in range(3000):\n"
        "    sys.stdout.write(f'out {i} ' + 'x' * (i % 700) + '\\n')\n"
        "    if i % 500 == 0:\n"
        "        sys.stderr.write(f'err {i}\\n'); sys.stderr.flush()\n"
        "sys.stdout.write('no newline at end')\n"
    )
    handle, status = _run(runner, _app("logs", _py("p", code)))
    assert status.state == AppState.SUCCEEDED
    out = _log(runner, handle, "p", streams=Stream.STDOUT)
    expected = [f"out {i} " + "x" * (i % 700) + "\n" for i in range(3000)]
    assert out == [*expected, "no newline at end"]
    err = _log(runner, handle, "p", streams=Stream.STDERR)
    assert err == [f"err {i}\n" for i in range(0, 3000, 500)]
    combined = _log(runner, handle, "p")
    assert sorted(combined) == sorted(out + err)
    assert _log(runner, handle, "p", regex=r"^err 1") == ["err 1000\n", "err 1500\n"]


def test_tail_follows_and_since_until_bound_by_time(runner: Any) -> None:
    script = "echo first; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo second"
    handle = runner.run(_app("tail", _role("t", script)), SCHED, {})
    api = runner._scheduler(SCHED)._docker_client.api
    container = app_containers(runner._scheduler(SCHED)._docker_client, _app_id(handle))[0]
    followed: list[str] = []
    boundary = None
    for line in runner.log_lines(handle, "t", 0, should_tail=True):
        followed.append(line)
        if line == "first\n":
            # Docker's since/until are whole seconds: let a second boundary pass, then make
            # the app write its second line while this iterator follows the log.
            boundary_ts = math.floor(time.time()) + 1
            time.sleep(boundary_ts - time.time() + 0.05)
            boundary = datetime.datetime.fromtimestamp(boundary_ts)
            api.exec_start(api.exec_create(container["Id"], ["touch", "/tmp/go"]))
    assert followed == ["first\n", "second\n"]
    assert runner.wait(handle, wait_interval=0.5).state == AppState.SUCCEEDED
    assert _log(runner, handle, "t", until=boundary) == ["first\n"]
    assert _log(runner, handle, "t", since=boundary) == ["second\n"]


def test_status_and_logs_from_another_process(runner: Any, tmp_path: Path) -> None:
    handle, status = _run(runner, _app("second", _role("main", "echo visible everywhere")))
    assert status.state == AppState.SUCCEEDED
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = _torchx("status", handle, cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert "SUCCEEDED" in result.stdout
    result = _torchx("log", handle, cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert "main/0 visible everywhere" in result.stdout
    result = _torchx("list", "-s", SCHED, cwd=elsewhere)
    assert handle in result.stdout


def test_cli_run_returns_once_started(runner: Any, tmp_path: Path) -> None:
    result = _torchx(
        "run", "-s", SCHED, "--workspace", "", "utils.sh", "--image", IMAGE, "sleep", "300",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    handle = result.stdout.strip()
    runner.test_handles.append(handle)
    assert runner.status(handle).state == AppState.RUNNING  # it outlived `torchx run`
    cancel = _torchx("cancel", handle, cwd=tmp_path)
    assert cancel.returncode == 0, cancel.stderr
    assert runner.status(handle).state == AppState.CANCELLED


def test_run_wait_streams_logs_and_exit_code(tmp_path: Path, docker_client: Any) -> None:
    result = _torchx(
        "run", "--wait", "-s", SCHED, "--workspace", "", "utils.echo", "--image", IMAGE,
        "--msg", "hello docker", cwd=tmp_path,
    )  # fmt: skip
    handle = result.stdout.strip()
    try:
        assert result.returncode == 0, result.stderr
        assert "echo/0 hello docker" in result.stderr
    finally:
        _torchx("delete", handle, cwd=tmp_path)


# -- workspaces ----------------------------------------------------------------------------


def test_workspace_is_built_once_and_rebuilt_on_change(
    runner: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "hello.txt").write_text("hello from the workspace\n")
    (ws / "pkg" / "unique.txt").write_text(f"{time.time_ns()}\n")  # no image of earlier runs
    (ws / "secret.txt").write_text("do not ship\n")
    (ws / ".dockerignore").write_text("secret.txt\n")
    role = _role("w", "cat pkg/hello.txt; test -e secret.txt && echo leaked || echo ignored")

    handle, status = _run(runner, _app("ws", role), workspace=str(ws))
    assert status.state == AppState.SUCCEEDED
    assert _log(runner, handle, "w") == ["hello from the workspace\n", "ignored\n"]
    first_image = runner.describe(handle).roles[0].image
    built = capfd.readouterr().err
    assert "building workspace" in built
    assert "were not consumed" not in built  # WORKSPACE is passed only when declared

    os.utime(ws / "pkg" / "hello.txt", (1, 1))  # touched, not changed: still the same image
    handle, status = _run(runner, _app("ws", role), workspace=str(ws))
    assert status.state == AppState.SUCCEEDED
    assert runner.describe(handle).roles[0].image == first_image
    assert "building workspace" not in capfd.readouterr().err

    (ws / "pkg" / "hello.txt").write_text("changed\n")
    handle, status = _run(runner, _app("ws", role), workspace=str(ws))
    assert _log(runner, handle, "w") == ["changed\n", "ignored\n"]
    assert runner.describe(handle).roles[0].image != first_image


def test_workspace_given_as_an_fsspec_url(runner: Any) -> None:
    """Upstream's 2026 Workspace takes any fsspec URL: the files are fetched through fsspec
    (with the same .dockerignore rules) and built like a local folder."""
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe(
        {
            "/ws-url/pkg/hello.txt": b"hello from memory://\n",
            "/ws-url/secret.txt": b"do not ship\n",
            "/ws-url/.dockerignore": b"secret.txt\n",
        }
    )
    role = _role("u", "cat pkg/hello.txt; test -e secret.txt && echo leaked || echo ignored")
    handle, status = _run(runner, _app("wsurl", role), workspace="memory://ws-url")
    assert status.state == AppState.SUCCEEDED
    assert _log(runner, handle, "u") == ["hello from memory://\n", "ignored\n"]


def test_workspace_build_args_and_own_base_without_pull(runner: Any, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    # names another base than the role's image, which does not exist anywhere (#630)
    (ws / "Dockerfile.torchx").write_text(
        f'FROM {IMAGE}\nARG GREETING\nRUN echo "$GREETING" > /greeting.txt\nCOPY . .\n'
    )
    (ws / "data.txt").write_text("d\n")
    role = specs.Role(
        name="b",
        image="registry.invalid/never/pulled:1",
        entrypoint="sh",
        args=["-c", "cat /greeting.txt data.txt"],
    )
    cfg = {"build_args": {"GREETING": "hi from a build arg"}, "quiet": True}
    handle, status = _run(runner, _app("bargs", role), cfg, workspace=str(ws))
    assert status.state == AppState.SUCCEEDED, status
    assert _log(runner, handle, "b") == ["hi from a build arg\n", "d\n"]


def test_push_to_local_registry_and_run_the_pushed_image(
    runner: Any, docker_client: Any, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pushed.txt").write_text(f"pushed {time.time()}\n")
    sched = runner._scheduler(SCHED)
    role = _role("p", "cat pushed.txt")
    role.workspace = specs.Workspace.from_str(str(ws))
    app = _app("push", role)
    sched.build_workspaces(app.roles, {"quiet": True})
    local_id = role.image
    assert local_id.startswith("sha256:")

    repo = f"{REGISTRY}/torchx-dkt"
    plan = sched.dryrun_push_images(app, {"image_repo": repo})
    assert plan == {local_id: (repo, local_id.removeprefix("sha256:"))}
    assert role.image == f"{repo}:{local_id.removeprefix('sha256:')}"
    sched.push_images(plan)
    with urllib.request.urlopen(f"http://{REGISTRY}/v2/torchx-dkt/tags/list") as resp:
        assert local_id.removeprefix("sha256:") in json.load(resp)["tags"]

    docker_client.api.remove_image(local_id, force=True)  # gone locally: the run must pull
    role.workspace = None
    handle, status = _run(runner, app)
    assert status.state == AppState.SUCCEEDED, status
    assert _log(runner, handle, "p") == [(ws / "pushed.txt").read_text()]


# -- bad input -----------------------------------------------------------------------------


def _one_line_error(result: Any) -> str:
    """The error line; besides it only progress (INFO) lines may appear, no traceback."""
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    lines = [line for line in lines if not (line.startswith("torchx ") and " INFO " in line)]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("torchx: error:"), lines[0]
    assert "Traceback" not in result.stderr
    return lines[0]


def test_bad_input_gives_one_line_and_leaves_nothing(docker_client: Any, tmp_path: Path) -> None:
    before = all_torchx_containers(docker_client)
    run = ("run", "-s", SCHED, "--workspace", "", "utils.echo")
    down = _torchx(
        *run, "--image", IMAGE, cwd=tmp_path, env={"DOCKER_HOST": "unix:///tmp/no-such.sock"}
    )
    assert "cannot reach the Docker daemon at unix:///tmp/no-such.sock" in _one_line_error(down)

    unknown = _torchx(*run, "--image", "registry.invalid/nope/nothing:1", cwd=tmp_path)
    assert "cannot be pulled" in _one_line_error(unknown)

    bad_env = _torchx(*run, "--image", IMAGE, "-cfg", "env=NOVALUE", cwd=tmp_path)
    assert "env" in _one_line_error(bad_env)

    bad_ws = _torchx(
        "run", "-s", SCHED, "--workspace", str(tmp_path / "missing"), "utils.echo",
        "--image", IMAGE, cwd=tmp_path,
    )  # fmt: skip
    assert "not a directory" in _one_line_error(bad_ws)

    for command in ("status", "log", "describe"):
        unknown_handle = _torchx(command, "local_docker://torchx/nosuch-dkt123", cwd=tmp_path)
        assert "nosuch-dkt123" in _one_line_error(unknown_handle), command
    cancelled = _torchx("cancel", "local_docker://torchx/nosuch-dkt123", cwd=tmp_path)
    assert cancelled.returncode == 0 and "nothing to cancel" in cancelled.stderr  # idempotent

    assert all_torchx_containers(docker_client) == before


def test_failed_start_removes_the_containers_already_created(
    runner: Any, docker_client: Any
) -> None:
    before = all_torchx_containers(docker_client)
    good = _role("good", "sleep 300", num_replicas=2)
    bad_device = _role("bad", "true", mounts=[specs.DeviceMount("/dev/torchx-missing", "/dev/x")])
    with pytest.raises(
        ds.ContainerStartError, match=r"could not start container .*bad-0.*removed the 3"
    ):
        runner.run(_app("half", good, bad_device), SCHED, {})
    bad_bind = _role("bad", "true", mounts=[specs.BindMount("/nonexistent/torchx-dkt", "/x")])
    with pytest.raises(RuntimeError, match="bind source path does not exist"):
        runner.run(_app("half", good, bad_bind), SCHED, {})
    assert all_torchx_containers(docker_client) == before


# -- distributed ---------------------------------------------------------------------------


@pytest.mark.slow
def test_ddp_across_two_containers_with_gloo(runner: Any, tmp_path: Path) -> None:
    """torchrun in two containers rendezvous through rank 0's hostname and all-reduce."""
    pytest.importorskip("torch")
    venv = sys.prefix
    base = os.path.realpath(sys.base_prefix)
    script_dir = tmp_path / "train"
    script_dir.mkdir()
    (script_dir / "train.py").write_text(
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.tensor([dist.get_rank() + 1.0])\n"
        "dist.all_reduce(t)\n"
        "print('rank', dist.get_rank(), 'of', dist.get_world_size(), 'sum', t.item())\n"
        # without it gloo's threads may abort the interpreter at exit (SIGABRT), and the
        # other node's torchrun then waits out its exit barrier
        "dist.destroy_process_group()\n"
    )
    args = [
        "--script", "/train/train.py", "-j", "2x1", "--image", IMAGE,
        "--env", f"PATH={venv}/bin:/usr/bin:/bin,PYTHONUNBUFFERED=1",
        "--mounts",
        f"type=bind,src={venv},dst={venv},readonly,"
        f"type=bind,src={base},dst={base},readonly,"
        f"type=bind,src={script_dir},dst=/train,readonly",
    ]  # fmt: skip
    handle = runner.run_component("dist.ddp", args, SCHED, {})
    runner.test_handles.append(handle)
    status = runner.wait(handle, wait_interval=1)
    role = runner.describe(handle).roles[0].name
    logs = [_log(runner, handle, role, k) for k in (0, 1)]
    assert status.state == AppState.SUCCEEDED, (status, logs)
    joined = "".join(logs[0] + logs[1])
    assert "rank 0 of 2 sum 3.0" in joined
    assert "rank 1 of 2 sum 3.0" in joined


def test_failed_workspace_build_is_one_line(docker_client: Any, tmp_path: Path) -> None:
    before = all_torchx_containers(docker_client)
    (tmp_path / "Dockerfile.torchx").write_text("ARG IMAGE\nFROM $IMAGE\nRUN exit 7\n")
    result = _torchx(
        "run", "-s", SCHED, "-cfg", "quiet=True", "--workspace", str(tmp_path), "utils.echo",
        "--image", IMAGE, cwd=tmp_path,
    )  # fmt: skip
    line = _one_line_error(result)
    assert "building workspace" in line
    assert "returned a non-zero code: 7" in line
    assert all_torchx_containers(docker_client) == before


# -- the docker SDK path -------------------------------------------------------------------


def test_lifecycle_through_an_explicit_docker_sdk_client(docker_client: Any) -> None:
    """A scheduler given a docker SDK client (as upstream's create_scheduler takes) uses it
    for every call; the light client is only the default for local and plain-TCP daemons."""
    sched = ds.create_scheduler("sdk", docker_client=docker_client)
    assert sched._api.unwrapped is docker_client.api  # the SDK's, with outages ridden out
    app = _app("sdk", _role("s", "echo via sdk; echo oops >&2; exit 4", num_replicas=2))
    app_id = sched.submit(app, {})
    try:
        while (desc := sched.describe(app_id)).state.name not in ("SUCCEEDED", "FAILED"):
            sched.wait_for_change(app_id, 5)
        assert desc.state == AppState.FAILED
        assert "exit code 4" in desc.msg
        assert list(sched.log_iter(app_id, "s", 1, streams=Stream.STDOUT)) == ["via sdk\n"]
        assert list(sched.log_iter(app_id, "s", 0, streams=Stream.STDERR)) == ["oops\n"]
        assert [r.app_id for r in sched.list() if r.app_id == app_id] == [app_id]
    finally:
        sched.delete(app_id)
    assert sched.describe(app_id) is None


def test_create_kwargs_beyond_torchx_own_go_through_the_sdk(runner: Any) -> None:
    """A role's pre_proc may add any `containers.create` keyword (here working_dir)."""

    def pre_proc(scheduler: str, info: Any) -> Any:
        for container in info.request.containers:
            container.kwargs["working_dir"] = "/tmp"
        return info

    role = _role("w", "pwd")
    role.pre_proc = pre_proc  # type: ignore[method-assign]
    handle, status = _run(runner, _app("wd", role))
    assert status.state == AppState.SUCCEEDED
    assert _log(runner, handle, "w") == ["/tmp\n"]


def test_status_log_cancel_do_not_import_the_docker_sdk(runner: Any, tmp_path: Path) -> None:
    handle, _ = _run(runner, _app("light", _role("l", "echo light")))
    probe = (
        "import sys\nfrom torchx.cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('SDK' if 'docker' in sys.modules else 'no SDK', file=sys.stderr)\n"
    )
    for argv in (["status", handle], ["log", handle], ["cancel", handle], ["list", "-s", SCHED]):
        proc = subprocess.run(
            [sys.executable, "-c", probe, *argv], cwd=tmp_path, capture_output=True, text=True
        )
        assert proc.stderr.strip().splitlines()[-1] == "no SDK", (argv, proc.stderr)


def test_unchanged_workspace_run_does_not_import_the_docker_sdk(
    runner: Any, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text("print('trained')\n")
    role = _role("w", "cat train.py")
    _run(runner, _app("wsl", role), {"quiet": True}, workspace=str(ws))  # builds (SDK)
    probe = (
        "import sys\nfrom torchx.cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('SDK' if 'docker' in sys.modules else 'no SDK', file=sys.stderr)\n"
    )
    argv = ["run", "--wait", "-s", SCHED, "-cfg", "quiet=True", "utils.sh", "--image", IMAGE]
    proc = subprocess.run(
        [sys.executable, "-c", probe, *argv, "cat", "train.py"],
        cwd=ws,  # the default workspace: the current directory
        capture_output=True,
        text=True,
    )
    runner.test_handles.append(proc.stdout.strip())
    assert "trained" in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "no SDK", proc.stderr


def test_a_second_run_with_the_key_returns_the_first_handle(runner: Any) -> None:
    app = _app("keyed", _role("r", "echo run=$TORCHX_RUN_ID"))
    first, status = _run(runner, app, idempotency_key=KEY_DOCKER_K1)
    assert status.state == AppState.SUCCEEDED
    again = runner.run(app, SCHED, idempotency_key=KEY_DOCKER_K1)
    assert again == first and runner.found_by_idempotency_key(again)
    assert [a.app_id for a in runner.list(SCHED) if a.app_id.endswith(_app_id(first))] == [
        _app_id(first)
    ]
    assert _log(runner, first, "r") == [f"run={KEY_DOCKER_K1}\n"]


def test_a_key_is_each_users_on_a_shared_daemon(
    runner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two users of one Docker daemon run the same key: neither's run takes the other's
    containers."""
    key = per_user_key()
    app = _app("peruser", _role("r", "true"))
    check_a_key_is_each_users(lambda: runner.run(app, SCHED, idempotency_key=key), monkeypatch)


def test_concurrent_runs_with_one_key_submit_once(tmp_path: Path) -> None:
    """Four processes at once: the host's lock lets one submit; the others find it."""
    handles = concurrent_handles(
        [
            str(Path(sys.executable).parent / "torchx"),
            "run",
            "--idempotency-key",
            KEY_DOCKER_TOGETHER,
            "-s",
            SCHED,
            "utils.sh",
            "--image",
            IMAGE,
            "sleep",
            "20",
        ],
        4,
        cwd=tmp_path,
    )
    [handle] = handles
    with get_runner() as runner:
        assert sum(a.app_id == _app_id(handle) for a in runner.list(SCHED)) == 1
        runner.cancel(handle)
        runner.delete(handle)


def test_a_second_host_with_the_key_meets_the_name_docker_refuses(runner: Any) -> None:
    """Without the host's lock (another machine), the second submission's container name
    is taken: Docker refuses it and the run finds the first app."""
    app = _app("keyed", _role("r", "sleep 20"))
    first = runner.run(app, SCHED, idempotency_key=KEY_DOCKER_RACE)
    sched = runner._scheduler(SCHED)  # another host: it does not see the app when it looks
    real_find = sched.find_by_idempotency_key
    calls = []

    def find_late(key: str, cfg: Any = None) -> Any:
        calls.append(key)
        return None if len(calls) == 1 else real_find(key, cfg)

    sched.find_by_idempotency_key = find_late
    try:
        second = runner.run(app, SCHED, idempotency_key=KEY_DOCKER_RACE)
    finally:
        del sched.find_by_idempotency_key
    assert second == first and calls == [KEY_DOCKER_RACE, KEY_DOCKER_RACE]
    runner.cancel(first)
