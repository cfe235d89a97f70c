"""The job definition an app becomes: resources, mounts, devices, env, per-node macros."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from torchx import specs
from torchx.schedulers._aws_batch import request as jd
from torchx.schedulers.aws_batch_scheduler import (
    AWSBatchOpts,
    Opts,
    create_scheduler,
    parse_ulimits,
    resource_from_resource_requirements,
    resource_requirements_from_resource,
)


def _role(name: str = "trainer", n: int = 1, **kw: object) -> specs.Role:
    kw.setdefault("resource", specs.Resource(cpu=2, gpu=0, memMB=1024))
    return specs.Role(name=name, image="img:1", entrypoint="python", num_replicas=n, **kw)  # type: ignore[arg-type]


def test_resource_requirements_round_trip() -> None:
    res = specs.Resource(cpu=4, gpu=2, memMB=8192)
    reqs = resource_requirements_from_resource(res)
    assert reqs == [
        {"type": "VCPU", "value": "4"},
        {"type": "MEMORY", "value": "8192"},
        {"type": "GPU", "value": "2"},
    ]
    assert resource_from_resource_requirements(reqs) == specs.Resource(cpu=4, gpu=2, memMB=8192)
    no_gpu = resource_requirements_from_resource(specs.Resource(cpu=0, gpu=0, memMB=512))
    assert no_gpu == [{"type": "VCPU", "value": "1"}, {"type": "MEMORY", "value": "512"}]


def test_memory_is_required() -> None:
    with pytest.raises(ValueError, match="memMB"):
        resource_requirements_from_resource(specs.Resource(cpu=1, gpu=0, memMB=0))


def test_parse_ulimits() -> None:
    assert parse_ulimits(["nofile:65536:1048576", "memlock:-1:-1"]) == [
        {"name": "nofile", "softLimit": 65536, "hardLimit": 1048576},
        {"name": "memlock", "softLimit": -1, "hardLimit": -1},
    ]
    for bad in ("nofile", "nofile:1", "nofile:a:b", ":1:2", "nofile:1:2:3"):
        with pytest.raises(ValueError, match="name:soft:hard"):
            parse_ulimits([bad])


def test_opts_compat_name_and_runopts_order() -> None:
    assert AWSBatchOpts is Opts
    keys = [k for k, _ in create_scheduler("s").run_opts()]
    assert keys[:8] == [
        "queue", "user", "privileged", "share_id", "priority",
        "job_role_arn", "execution_role_arn", "ulimits",
    ]  # fmt: skip
    assert {"image_repo", "quiet"} <= set(keys)


def test_job_names_are_valid_batch_names() -> None:
    name = jd.job_name_for("/weird name!/with:chars", "share1")
    assert name.startswith("weird-name-with-chars-share1-")
    assert all(c.isalnum() or c in "-_" for c in name)
    assert len(jd.job_name_for("x" * 300)) <= 128
    assert jd.job_name_for("///").startswith("app-")


@pytest.mark.parametrize(
    ("target", "expected"), [("0:3", (0, 3)), (":2", (0, 2)), ("4:", (4, 9)), ("7", (7, 7))]
)
def test_target_nodes(target: str, expected: tuple[int, int]) -> None:
    assert jd.parse_target_nodes(target, 10) == expected


def test_one_node_range_per_role_even_for_many_replicas() -> None:
    app = specs.AppDef("big", [_role("a", 8), _role("b", 3)])
    num, ranges = jd.node_ranges(app, "big-x", {})
    assert num == 11
    assert [r["targetNodes"] for r in ranges] == ["0:7", "8:10"]
    envs = [{e["name"]: e["value"] for e in r["container"]["environment"]} for r in ranges]
    assert [(e["TORCHX_ROLE_IDX"], e["TORCHX_ROLE_NAME"]) for e in envs] == [
        ("0", "a"),
        ("1", "b"),
    ]
    assert envs[0]["TORCHX_IMAGE"] == "img:1"


def test_more_than_five_roles_is_refused() -> None:
    app = specs.AppDef("many", [_role(f"r{i}") for i in range(6)])
    with pytest.raises(ValueError, match=r"6 roles.*at most 5"):
        jd.node_ranges(app, "many-x", {})


def test_container_properties() -> None:
    role = _role(
        "t",
        resource=specs.Resource(
            cpu=8,
            gpu=1,
            memMB=4000,
            capabilities={"node.kubernetes.io/instance-type": "p4d.24xlarge"},
            devices={"vpc.amazonaws.com/efa": 2, "aws.amazon.com/neurondevice": 1},
        ),
        mounts=[
            specs.BindMount(src_path="/data", dst_path="/in", read_only=True),
            specs.VolumeMount(src="fs-1234", dst_path="/efs"),
            specs.DeviceMount(src_path="/dev/fuse", dst_path="/dev/fuse", permissions="rw"),
        ],
    )
    _, (r,) = jd.node_ranges(specs.AppDef("a", [role]), "a-x", {"privileged": True})
    c = r["container"]
    assert c["instanceType"] == "p4d.24xlarge"
    assert c["privileged"] is True
    assert c["linuxParameters"]["sharedMemorySize"] == 4000
    assert c["linuxParameters"]["devices"] == [
        {"hostPath": "/dev/fuse", "containerPath": "/dev/fuse", "permissions": ["READ", "WRITE"]},
        *(
            {"hostPath": f"/dev/infiniband/uverbs{i}",
             "containerPath": f"/dev/infiniband/uverbs{i}",
             "permissions": ["READ", "WRITE", "MKNOD"]}
            for i in range(2)
        ),
        {"hostPath": "/dev/neuron0", "containerPath": "/dev/neuron0",
         "permissions": ["READ", "WRITE", "MKNOD"]},
    ]  # fmt: skip
    assert c["volumes"] == [
        {"name": "mount_0", "host": {"sourcePath": "/data"}},
        {"name": "mount_1", "efsVolumeConfiguration": {"fileSystemId": "fs-1234"}},
    ]
    assert c["mountPoints"] == [
        {"containerPath": "/in", "readOnly": True, "sourceVolume": "mount_0"},
        {"containerPath": "/efs", "readOnly": False, "sourceVolume": "mount_1"},
    ]
    assert c["logConfiguration"] == {"logDriver": "awslogs"}
    assert role.mounts[-1].src_path == "/dev/fuse"  # the role is not changed
    assert len(role.mounts) == 3


def test_retry_strategy_counts_retries() -> None:
    # no retries: the job's own failure exits at once; a lost host is retried 3 times
    none = jd.retry_strategy(specs.AppDef("a", [_role(max_retries=0)]))
    assert none == {
        "attempts": 4,
        "evaluateOnExit": [
            {"onStatusReason": "Host EC2*", "action": "RETRY"},
            {"onExitCode": "0", "action": "EXIT"},
            {"onReason": "*", "action": "EXIT"},
        ],
    }
    three = jd.retry_strategy(specs.AppDef("a", [_role(max_retries=3), _role()]))
    assert three["attempts"] == 4 and three["evaluateOnExit"] == none["evaluateOnExit"][:2]
    with pytest.raises(ValueError, match=r"at most|allows"):
        jd.retry_strategy(specs.AppDef("a", [_role(max_retries=10)]))


def test_single_replica_macros_are_resolved_statically() -> None:
    role = _role(
        "solo",
        args=["--rank", specs.macros.replica_id, "--id", specs.macros.app_id],
        env={"HOST_VAR": specs.macros.rank0_env},
    )
    _, (r,) = jd.node_ranges(specs.AppDef("a", [role]), "a-x", {})
    c = r["container"]
    # nothing left to resolve on the node: the role's command as given, no shell
    assert c["command"] == ["python", "--rank", "0", "--id", "a-x"]
    env = {e["name"]: e["value"] for e in c["environment"]}
    assert env["HOST_VAR"] == "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"


def test_every_node_knows_its_attempt() -> None:
    """Batch numbers attempts from 1 (AWS_BATCH_JOB_ATTEMPT); TORCHX_ATTEMPT from 0."""
    role = _role(n=2)
    # a replica id to compute on the node: the node's sh also exports the attempt
    role.entrypoint = "sh"
    role.args = ["-c", 'echo "$TORCHX_ATTEMPT"', specs.macros.replica_id]
    _, (r,) = jd.node_ranges(specs.AppDef("a", [role]), "a-x", {})
    c = r["container"]
    env = {e["name"]: e["value"] for e in c["environment"]}
    assert _run_node(c["command"], env, "1") == "0\n"
    assert _run_node(c["command"], {**env, "AWS_BATCH_JOB_ATTEMPT": "3"}, "0") == "2\n"


def test_a_command_with_nothing_to_resolve_runs_as_given() -> None:
    """No ``/bin/sh`` wrapper where the node has nothing to compute: an image without a
    shell runs, and the job definition shows the role's own command. The attempt is then
    Batch's own ``AWS_BATCH_JOB_ATTEMPT`` (from 1)."""
    role = _role(n=3)
    role.entrypoint, role.args = "/prog", ["it's", "$HOME"]
    role.env = {"PLAIN": "x"}
    _, (r,) = jd.node_ranges(specs.AppDef("a", [role]), "a-x", {})
    assert r["container"]["command"] == ["/prog", "it's", "$HOME"]
    assert jd.role_command(r["container"]["command"]) == ["/prog", "it's", "$HOME"]


def _run_node(command: list[str], env: dict[str, str], node_index: str | None) -> str:
    """Runs a node's command the way Batch does (exec form, Batch's env) with this host's sh."""
    full_env = {"PATH": os.environ["PATH"], **env}
    if node_index is not None:
        full_env["AWS_BATCH_JOB_NODE_INDEX"] = node_index
    proc = subprocess.run(command, env=full_env, capture_output=True, text=True, check=False)
    return proc.stdout if proc.returncode == 0 else f"rc={proc.returncode} {proc.stderr}"


def test_replica_id_is_resolved_per_node_within_its_role() -> None:
    """Batch sets AWS_BATCH_JOB_NODE_INDEX (global) on each node; moto does not, so the
    generated commands run here with that variable set as Batch documents it."""
    tricky = 'it\'s $HOME; `x` "q"'
    first = _role("first", 2)
    second = specs.Role(
        name="second",
        image="img:1",
        entrypoint="printf",
        args=["%s|%s|%s|%s\\n", f"r={specs.macros.replica_id}", tricky, "$MYVAR"],
        env={"MYVAR": f"v-{specs.macros.replica_id}-{tricky}", "PLAIN": "p"},
        num_replicas=3,
        resource=specs.Resource(cpu=1, gpu=0, memMB=64),
    )
    _, ranges = jd.node_ranges(specs.AppDef("a", [first, second]), "a-x", {})
    c = ranges[1]["container"]
    assert c["command"][:2] == ["/bin/sh", "-c"]
    env = {e["name"]: e["value"] for e in c["environment"]}
    assert "MYVAR" not in env and env["PLAIN"] == "p"
    # nodes 2, 3, 4 are replicas 0, 1, 2 of the second role
    for node, replica in (("2", 0), ("4", 2)):
        out = _run_node(c["command"], env, node)
        assert out == f"r={replica}|{tricky}|$MYVAR|\n"
    printenv = [*c["command"][:2], c["command"][2].replace(" printf ", " printenv MYVAR # ", 1)]
    assert _run_node(printenv, env, "3") == f"v-1-{tricky}\n"
    assert "AWS_BATCH_JOB_NODE_INDEX" in _run_node(c["command"], env, None)


def test_env_names_a_shell_cannot_use_stay_data_on_the_node(tmp_path: Path) -> None:
    """Per-replica env is set in `/bin/sh -c` on the node, each `NAME=VALUE` one quoted word
    for `env`: a name such as `A=1;touch pwned;B` runs nothing, and reaches the process
    as upstream passed it (the OS splits at the first '=')."""
    pwned = tmp_path / "pwned"
    bad = f"A=1;touch {pwned};B"
    role = _role(n=2, env={bad: f"x{specs.macros.replica_id}", "MY-VAR": "m"})
    role.entrypoint, role.args = "printenv", []
    _, (r,) = jd.node_ranges(specs.AppDef("a", [role]), "a-x", {})
    c = r["container"]
    env = {e["name"]: e["value"] for e in c["environment"]}
    out = _run_node(c["command"], env, "1")
    assert f"A=1;touch {pwned};B=x1\n" in out and "MY-VAR=m\n" in out
    assert not pwned.exists()
