"""local_docker's request, options and errors: what can be checked without a daemon.

Runs with the real docker SDK installed; the containers themselves are tested against a
real daemon in tests/docker.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from torchx import specs
from torchx.schedulers import docker_scheduler as ds
from torchx.specs import InvalidRunConfigException
from torchx.workspace.docker_workspace import DockerUnavailableError

IMAGE = "example.com/train:1"


@pytest.fixture
def sched() -> ds.DockerScheduler:
    return ds.create_scheduler("test")


def _dryrun(sched: ds.DockerScheduler, app: specs.AppDef, cfg: dict[str, Any] | None = None) -> Any:
    return sched.submit_dryrun(app, cfg or {}).request


def test_run_options_match_upstream_names_and_defaults(sched: ds.DockerScheduler) -> None:
    opts = sched.run_opts()
    assert [k for k, _ in opts] == [
        "copy_env", "env", "privileged", "image_repo", "quiet", "build_args",
    ]  # fmt: skip
    assert opts.get("privileged").default is False
    assert opts.get("quiet").default is False
    assert ds.DockerOpts is ds.Opts
    resolved = opts.cfg_from_str("env=A:1,B:2;copy_env=AWS_*,HF_*;privileged=True")
    assert resolved == {
        "env": {"A": "1", "B": "2"},
        "copy_env": ["AWS_*", "HF_*"],
        "privileged": True,
    }


def test_one_container_per_replica_with_names_labels_and_env(sched: ds.DockerScheduler) -> None:
    trainer = specs.Role(
        name="trainer",
        image=IMAGE,
        entrypoint="python",
        args=["train.py", "--rank", specs.macros.replica_id, "--app", specs.macros.app_id],
        env={"ROLE_ENV": "r${replica_id}"},
        num_replicas=2,
        resource=specs.Resource(cpu=2, gpu=1, memMB=1024),
        max_retries=2,
    )
    ps = specs.Role(name="ps", image="other:2", entrypoint="ps_main")
    job = _dryrun(sched, specs.AppDef("my app", [trainer, ps]))
    app_id = job.app_id
    assert app_id.startswith("my-app-")
    names = [c.kwargs["name"] for c in job.containers]
    assert names == [f"{app_id}-trainer-0", f"{app_id}-trainer-1", f"{app_id}-ps-0"]
    first, second, third = job.containers
    # a restartable replica counts its attempts in the container, then runs the command
    counting = ds._COUNT_ATTEMPTS
    assert first.command == [*counting, "python", "train.py", "--rank", "0", "--app", app_id]
    assert second.command == [*counting, "python", "train.py", "--rank", "1", "--app", app_id]
    assert third.command == ["ps_main"] and third.image == "other:2"
    assert third.kwargs["environment"]["TORCHX_ATTEMPT"] == "0"
    for container in job.containers:
        assert container.kwargs["hostname"] == container.kwargs["name"]
        assert container.kwargs["network"] == ds.NETWORK == "torchx"
        assert container.kwargs["environment"]["TORCHX_RANK0_HOST"] == f"{app_id}-trainer-0"
    assert second.kwargs["environment"]["ROLE_ENV"] == "r1"
    assert first.kwargs["environment"]["TORCHX_IMAGE"] == IMAGE
    assert (
        second.kwargs["labels"]
        == {
            ds.LABEL_VERSION: second.kwargs["labels"][ds.LABEL_VERSION],
            ds.LABEL_APP_ID: app_id,
            "torchx.pytorch.org/app-name": "my app",  # `torchx list` shows it
            ds.LABEL_ROLE_NAME: "trainer",
            ds.LABEL_REPLICA_ID: "1",
            # `describe` gives the command back exactly (Docker lists it as one string)
            "torchx.pytorch.org/command": json.dumps(second.command[len(counting) :]),
            "torchx.pytorch.org/restartable": "1",
        }
    )
    assert first.kwargs["mem_limit"] == first.kwargs["shm_size"] == "1024m"
    assert first.kwargs["nano_cpus"] == 2_000_000_000
    assert first.kwargs["device_requests"] == [
        {"count": 1, "capabilities": [["compute", "utility"]]}
    ]
    assert first.kwargs["restart_policy"] == {"Name": "on-failure", "MaximumRetryCount": 2}
    # no resource: no limits; no retries: no restart policy
    for key in ("mem_limit", "nano_cpus", "device_requests", "restart_policy"):
        assert key not in third.kwargs


def test_env_precedence_copy_env_then_cfg_then_role(
    sched: ds.DockerScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOO_A", "launcher")
    monkeypatch.setenv("FOO_B", "launcher")
    monkeypatch.setenv("FOO_C", "launcher")
    monkeypatch.setenv("BAR", "not copied")
    role = specs.Role(name="r", image=IMAGE, entrypoint="x", env={"FOO_C": "role"})
    cfg = {"copy_env": ["FOO_*"], "env": {"FOO_B": "cfg", "FOO_C": "cfg"}}
    env = _dryrun(sched, specs.AppDef("e", [role]), cfg).containers[0].kwargs["environment"]
    assert (env["FOO_A"], env["FOO_B"], env["FOO_C"]) == ("launcher", "cfg", "role")
    assert "BAR" not in env


def test_mounts_and_named_devices(sched: ds.DockerScheduler) -> None:
    role = specs.Role(
        name="m",
        image=IMAGE,
        entrypoint="x",
        mounts=[
            specs.BindMount("/data", "/in", read_only=True),
            specs.VolumeMount("cache", "/cache"),
            specs.DeviceMount("/dev/fuse", "/dev/fuse", "rw"),
        ],
        resource=specs.Resource(cpu=1, gpu=0, memMB=512, devices={"vpc.amazonaws.com/efa": 2}),
    )
    kwargs = _dryrun(sched, specs.AppDef("m", [role])).containers[0].kwargs
    assert kwargs["mounts"] == [
        {"Target": "/in", "Source": "/data", "Type": "bind", "ReadOnly": True},
        {"Target": "/cache", "Source": "cache", "Type": "volume", "ReadOnly": False},
    ]
    assert kwargs["devices"] == [
        "/dev/fuse:/dev/fuse:rw",
        "/dev/infiniband/uverbs0:/dev/infiniband/uverbs0:rwm",
        "/dev/infiniband/uverbs1:/dev/infiniband/uverbs1:rwm",
    ]
    assert len(role.mounts) == 3  # the named devices never leak into the caller's role


def test_dryrun_of_many_replicas_renders_each(sched: ds.DockerScheduler) -> None:
    role = specs.Role(
        name="w", image=IMAGE, entrypoint="x", args=[specs.macros.replica_id], num_replicas=10_000
    )
    job = _dryrun(sched, specs.AppDef("big", [role]))
    assert len(job.containers) == 10_000
    assert job.containers[9_999].command == ["x", "9999"]
    assert job.containers[9_999].kwargs["labels"][ds.LABEL_REPLICA_ID] == "9999"
    assert '"image": "example.com/train:1"' in str(job)


def test_bad_env_names_are_rejected(sched: ds.DockerScheduler) -> None:
    role = specs.Role(name="r", image=IMAGE, entrypoint="x")
    with pytest.raises(ValueError, match="invalid env var name 'A=B'"):
        _dryrun(sched, specs.AppDef("e", [role]), {"env": {"A=B": "1"}})
    with pytest.raises(InvalidRunConfigException):
        _dryrun(sched, specs.AppDef("e", [role]), {"env": "A"})
    bad_role = specs.Role(name="r", image=IMAGE, entrypoint="x", env={"": "1"})
    with pytest.raises(ValueError, match="env of role `r`"):
        _dryrun(sched, specs.AppDef("e", [bad_role]))


def test_unreachable_daemon_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/torchx-test.sock")
    sched = ds.create_scheduler("test")
    with pytest.raises(DockerUnavailableError) as e:
        sched.describe("any-app")
    message = str(e.value)
    assert "\n" not in message
    assert "unix:///nonexistent/torchx-test.sock" in message
    assert "DOCKER_HOST" in message
    assert ds.has_docker() is False


def test_registered_as_local_docker() -> None:
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="torchx.schedulers") if e.name == "local_docker"]
    assert ep.value == "torchx.schedulers.docker_scheduler:create_scheduler"


def test_dryrun_imports_no_docker_sdk() -> None:
    code = (
        "import sys\n"
        "from torchx import specs\n"
        "from torchx.schedulers.docker_scheduler import create_scheduler\n"
        "s = create_scheduler('t')\n"
        "role = specs.Role(name='r', image='i', entrypoint='x')\n"
        "s.submit_dryrun(specs.AppDef('a', [role]), {})\n"
        "s.run_opts()\n"
        "print(sorted(m for m in sys.modules if m == 'docker' or m.startswith('docker.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
