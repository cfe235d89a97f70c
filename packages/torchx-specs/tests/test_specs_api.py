"""The torchx.specs data model: resources, mounts, roles, macros, statuses, run configs."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import stat
import subprocess
import sys
import textwrap
import warnings
from datetime import datetime
from pathlib import Path

import pytest

import torchx.specs as specs
from torchx import settings
from torchx.deprecations import deprecated, deprecated_module
from torchx.specs import (
    ALL,
    MISSING,
    NA,
    NONE,
    NULL_RESOURCE,
    TORCHX_CONTEXT_NAME,
    TORCHX_HOME,
    UNKNOWN,
    AppDef,
    AppDryRunInfo,
    AppState,
    AppStatus,
    AppStatusError,
    BindMount,
    CapabilityKey,
    DeviceMount,
    InvalidRunConfigException,
    MalformedAppHandleException,
    MountType,
    ParsedAppHandle,
    ReplicaState,
    ReplicaStatus,
    Resource,
    RetryPolicy,
    Role,
    RoleStatus,
    UnknownAppException,
    UnknownSchedulerException,
    VolumeMount,
    Workspace,
    app_metadata,
    cases,
    get_type_name,
    is_started,
    is_terminal,
    macros,
    make_app_handle,
    parse_app_handle,
    parse_mounts,
    runopt,
    runopts,
)

# ---------------------------------------------------------------------------- Resource


def test_resource_repr_and_null_resource() -> None:
    assert repr(Resource(cpu=4, gpu=1, memMB=8192)) == (
        "Resource(cpu=4, gpu=1, memMB=8192, capabilities={}, devices={}, tags={})"
    )
    assert (NULL_RESOURCE.cpu, NULL_RESOURCE.gpu, NULL_RESOURCE.memMB) == (-1, -1, -1)


def test_resource_copy_keeps_tags_and_copies_devices() -> None:
    original = Resource(
        cpu=1,
        gpu=2,
        memMB=3,
        capabilities={"a": 1, "b": 2},
        devices={"vpc.amazonaws.com/efa": 4},
        tags={"torchx/named_resources.name": "x"},
    )
    copied = Resource.copy(original, b=20, c=30)
    assert copied.capabilities == {"a": 1, "b": 20, "c": 30}
    assert original.capabilities == {"a": 1, "b": 2}
    assert copied.devices == original.devices
    assert copied.devices is not original.devices
    assert copied.tags == {"torchx/named_resources.name": "x"}
    assert copied.tags is not original.tags
    copied.devices["x"] = 1
    copied.tags["y"] = 1
    assert "x" not in original.devices and "y" not in original.tags


def test_resource_fractional_and_name_tags() -> None:
    plain = Resource(cpu=1, gpu=0, memMB=1)
    assert not plain.is_fractional()
    assert plain.get_resource_name() is None
    tagged = Resource(
        cpu=1,
        gpu=0,
        memMB=1,
        tags={
            "torchx/named_resources.name": "mygpu_4",
            "torchx/named_resources.is_fractional": True,
        },
    )
    assert tagged.is_fractional()
    assert tagged.get_resource_name() == "mygpu_4"


def test_capability_key_typed_access() -> None:
    itype = CapabilityKey("k8s", "instance_type", str)
    count = CapabilityKey("k8s", "count", int)
    res = Resource(cpu=1, gpu=0, memMB=1)
    assert itype.key == "k8s.instance_type"
    assert itype.get(res) is None
    assert itype.get(res, "dflt") == "dflt"
    itype.set(res, "p4d")
    assert res.capabilities == {"k8s.instance_type": "p4d"}
    assert itype.get(res) == "p4d"
    res.capabilities["k8s.count"] = True
    with pytest.raises(TypeError, match=r"k8s\.count"):
        count.get(res)
    res.capabilities["k8s.count"] = "3"
    with pytest.raises(TypeError, match="expected int"):
        count.get(res)
    count.set(res, 3)
    assert count.get(res) == 3


def test_metadata_keys() -> None:
    assert NA == "<<NA>>"
    assert TORCHX_CONTEXT_NAME == "TORCHX_CONTEXT_NAME"
    assert app_metadata.CONTEXT == "torchx/context"
    assert app_metadata.VERSION == "torchx/version"
    assert app_metadata.SCHEDULER == "torchx/scheduler"
    assert app_metadata.ROLES_PREFIX == "torchx/roles."


def test_sentinels() -> None:
    assert (ALL, MISSING, NONE, UNKNOWN) == ("all", "<MISSING>", "<NONE>", "<UNKNOWN>")


# ---------------------------------------------------------------------------- mounts


def test_parse_mounts_all_kinds_and_aliases() -> None:
    cli_value = (
        "type=bind,src=/a,dst=/b,readonly,"
        "type=volume,source=vol,target=/v,read_only=true,"
        "type=device,src=/dev/fuse,"
        "type=device,src=/dev/x,destination=/dev/y,perm=rw,"
        "type=bind,src=/c,destination=/d"
    )
    tokens = cli_value.split(",")
    assert parse_mounts(tokens) == [
        BindMount(src_path="/a", dst_path="/b", read_only=True),
        VolumeMount(src="vol", dst_path="/v", read_only=True),
        DeviceMount(src_path="/dev/fuse", dst_path="/dev/fuse", permissions="rwm"),
        DeviceMount(src_path="/dev/x", dst_path="/dev/y", permissions="rw"),
        BindMount(src_path="/c", dst_path="/d", read_only=False),
    ]
    assert parse_mounts([]) == []
    assert MountType("bind") is MountType.BIND


def test_parse_mounts_expands_home_in_bind_source() -> None:
    (mount,) = parse_mounts(["type=bind", "src=~/data", "dst=/data"])
    assert isinstance(mount, BindMount)
    assert mount.src_path == os.path.expanduser("~/data")
    assert not mount.src_path.startswith("~")


def test_parse_mounts_errors_name_token_and_accepted_keys() -> None:
    with pytest.raises(KeyError) as e:
        parse_mounts(["type=bind", "src=/a", "dst=/b", "colour=red"])
    message = str(e.value)
    assert "colour=red" in message
    for key in ("type", "src", "dst", "readonly", "perm"):
        assert key in message
    with pytest.raises(KeyError, match="type must be specified first"):
        parse_mounts(["src=/a", "type=bind"])
    with pytest.raises(KeyError, match="missing dst"):
        parse_mounts(["type=bind", "src=/a"])
    with pytest.raises(KeyError, match="missing src"):
        parse_mounts(["type=volume", "dst=/a"])
    with pytest.raises(ValueError, match="'rwx'"):
        parse_mounts(["type=device", "src=/dev/fuse", "perm=rwx"])
    with pytest.raises(ValueError, match=r"invalid mount type 'nfs'.*bind, volume, device"):
        parse_mounts(["type=nfs", "src=/a", "dst=/b"])


# ---------------------------------------------------------------------------- Role / AppDef


def test_role_field_order_and_defaults() -> None:
    names = [f.name for f in dataclasses.fields(Role)]
    assert names == [
        "name",
        "image",
        "min_replicas",
        "entrypoint",
        "args",
        "env",
        "num_replicas",
        "max_retries",
        "retry_policy",
        "resource",
        "port_map",
        "metadata",
        "mounts",
        "workspace",
        "overrides",
        "base_image",  # deprecated (seed 003), last so upstream's positional order holds
    ]
    role = Role("trainer", "img")
    assert role.entrypoint == MISSING
    assert role.resource == NULL_RESOURCE
    assert role.retry_policy is RetryPolicy.APPLICATION
    assert role.num_replicas == 1 and role.max_retries == 0
    assert role.workspace is None
    assert role.args == [] and role.args is not Role("x", "y").args
    positional = Role("r", "i", 2, "python")
    assert (positional.min_replicas, positional.entrypoint) == (2, "python")
    assert [p.value for p in RetryPolicy] == ["REPLICA", "APPLICATION", "ROLE"]


def test_appdef_defaults() -> None:
    app = AppDef("app")
    assert app.roles == [] and app.metadata == {}


def test_role_pre_proc_is_identity() -> None:
    info = AppDryRunInfo({"a": 1}, str)
    assert Role("r", "i").pre_proc("local", info) is info


def test_role_overrides_callable_resolved_once() -> None:
    calls = []

    def compute_image() -> str:
        calls.append(1)
        return "resolved-image"

    role = Role("r", "placeholder", overrides={"image": compute_image})
    assert role.image == "resolved-image"
    assert role.image == "resolved-image"
    assert len(calls) == 1
    assert role.name == "r"


def test_role_overrides_awaitable_without_and_with_running_loop() -> None:
    async def compute() -> list[str]:
        await asyncio.sleep(0)
        return ["--x"]

    role = Role("r", "i", overrides={"args": compute()})
    assert role.args == ["--x"]

    async def inside_loop() -> list[str]:
        other = Role("r", "i", overrides={"args": compute()})
        return other.args

    assert asyncio.run(inside_loop()) == ["--x"]


# ---------------------------------------------------------------------------- macros


def test_macro_templates() -> None:
    assert macros.img_root == "${img_root}"
    assert macros.app_id == "${app_id}"
    assert macros.replica_id == "${replica_id}"
    assert macros.rank0_env == "${rank0_env}"
    assert macros.base_img_root == "${base_img_root}"


def test_macros_values_defaults_and_substitute() -> None:
    values = macros.Values(img_root="/root", app_id="app-1", replica_id="0")
    assert values.rank0_env == ""
    assert values.base_img_root == "DEPRECATED"
    full = macros.Values("/root", "app-1", "2", "MASTER_ADDR")
    assert full.to_dict() == {
        "img_root": "/root",
        "app_id": "app-1",
        "replica_id": "2",
        "rank0_env": "MASTER_ADDR",
        "base_img_root": "DEPRECATED",
    }
    assert full.substitute("${app_id}/${replica_id}/${unknown}") == "app-1/2/${unknown}"
    assert full.substitute("$${rank0_env}:29500") == "${rank0_env}:29500"
    shell_ref = "$${" + macros.rank0_env + ":=localhost}"
    assert full.substitute(shell_ref) == "${MASTER_ADDR:=localhost}"


def test_macros_apply_substitutes_args_env_and_nested_metadata() -> None:
    role = Role(
        name="t-${app_id}",
        image="img-${app_id}",
        entrypoint="run-${app_id}",
        args=["--id", macros.app_id, f"{macros.img_root}/x", f"r{macros.replica_id}"],
        env={"A": macros.app_id, "B": "plain"},
        metadata={
            "top": macros.app_id,
            "n": 5,
            "nested": {"deep": [macros.replica_id, {"inner": macros.img_root}, 7]},
            "lst": [macros.app_id, [macros.replica_id]],
        },
    )
    applied = macros.Values(img_root="/root", app_id="app-1", replica_id="3").apply(role)
    assert applied.args == ["--id", "app-1", "/root/x", "r3"]
    assert applied.env == {"A": "app-1", "B": "plain"}
    assert applied.metadata == {
        "top": "app-1",
        "n": 5,
        "nested": {"deep": ["3", {"inner": "/root"}, 7]},
        "lst": ["app-1", ["3"]],
    }
    assert (applied.name, applied.image, applied.entrypoint) == (
        "t-${app_id}",
        "img-${app_id}",
        "run-${app_id}",
    )
    # the original is untouched
    assert role.args[1] == macros.app_id
    assert role.metadata["nested"]["deep"][0] == macros.replica_id


def test_macros_apply_shares_overrides() -> None:
    overrides = {"image": lambda: "late-image"}
    role = Role("r", "i", args=[macros.app_id], overrides=overrides)
    applied = macros.Values("/", "a", "0").apply(role)
    assert applied.overrides is role.overrides
    assert applied.image == "late-image"
    assert applied.args == ["a"]


# ---------------------------------------------------------------------------- states / status


def test_app_state_str_repr_and_predicates() -> None:
    assert [s.value for s in AppState] == list(range(8))
    assert str(AppState.RUNNING) == "RUNNING"
    assert repr(AppState.FAILED) == "FAILED (5)"
    assert ReplicaState is AppState
    terminal = {s for s in AppState if is_terminal(s)}
    assert terminal == {AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED}
    started = {s for s in AppState if is_started(s)}
    assert started == terminal | {AppState.RUNNING}


def test_replica_status_hostaddr_defaults_to_hostname() -> None:
    assert ReplicaStatus(0, AppState.RUNNING, "r", "host0").hostaddr == "host0"
    assert ReplicaStatus(0, AppState.RUNNING, "r", "host0", hostaddr="10.0.0.1").hostaddr == (
        "10.0.0.1"
    )


REPLY = json.dumps(
    {
        "message": {
            "message": "RuntimeError: boom happened here",
            "errorCode": 1,
            "extraInfo": {"timestamp": 1700000000},
        }
    }
)


def golden_status() -> AppStatus:
    return AppStatus(
        state=AppState.FAILED,
        msg="job failed",
        ui_url="file:///tmp/x",
        roles=[
            RoleStatus(
                "trainer",
                [
                    ReplicaStatus(1, AppState.SUCCEEDED, "trainer", "host1"),
                    ReplicaStatus(0, AppState.FAILED, "trainer", "host0", REPLY),
                ],
            )
        ],
    )


def test_app_status_format_golden() -> None:
    timestamp = datetime.fromtimestamp(1700000000)
    expected = (
        "AppStatus:\n"
        "    State: FAILED\n"
        "    Num Restarts: 0\n"
        "    Roles: \n"
        " *trainer[0]:FAILED (exitcode: 1)\n"
        f"        timestamp: {timestamp}\n"
        "        hostname: host0\n"
        "        error_msg: RuntimeError: boom happened here\n"
        "  trainer[1]:SUCCEEDED\n"
        "    Msg: job failed\n"
        "    Structured Error Msg: <NONE>\n"
        "    UI URL: file:///tmp/x\n"
        "    "
    )
    assert golden_status().format() == expected


def test_app_status_format_filter_roles_and_no_reply_file() -> None:
    status = AppStatus(
        AppState.CANCELLED,
        roles=[
            RoleStatus("a", [ReplicaStatus(0, AppState.CANCELLED, "a", "h")]),
            RoleStatus("b", [ReplicaStatus(0, AppState.FAILED, "b", "h")]),
        ],
    )
    text = status.format(filter_roles=["b"])
    assert "a[0]" not in text
    assert "\n *b[0]:FAILED\n" in text
    assert "\n *a[0]:CANCELLED" in status.format() and "reply file" not in status.format()


def test_app_status_format_tolerates_flat_and_foreign_reply_files() -> None:
    flat = json.dumps({"message": "ValueError: flat", "errorCode": 3, "timestamp": 1700000000})
    no_code = json.dumps({"message": "no code here"})
    status = AppStatus(
        AppState.FAILED,
        roles=[
            RoleStatus(
                "r",
                [
                    ReplicaStatus(0, AppState.FAILED, "r", "h0", flat),
                    ReplicaStatus(1, AppState.FAILED, "r", "h1", no_code),
                    ReplicaStatus(2, AppState.FAILED, "r", "h2", "segfault, not json"),
                    ReplicaStatus(3, AppState.FAILED, "r", "h3", json.dumps([1, 2])),
                ],
            )
        ],
    )
    text = status.format()
    assert "*r[0]:FAILED (exitcode: 3)" in text
    assert "error_msg: ValueError: flat" in text
    assert " r[1]:FAILED (exitcode: <N/A>)\n        timestamp: <N/A>\n" in text
    assert "error_msg: no code here" in text
    assert " r[2]:FAILED\n        hostname: h2\n        error_msg: segfault, not json" in text
    assert "error_msg: [1, 2]" in text


def test_app_status_format_wraps_and_trims_error_messages() -> None:
    words = " ".join(f"word{i:02d}" for i in range(40))
    long_reply = json.dumps({"message": {"message": words, "errorCode": 1, "extraInfo": {}}})
    embedded = json.dumps(
        {"message": {"message": "real cause\nException raised from x", "errorCode": 2}}
    )
    rpc_msg = (
        "junk before RuntimeError: On WorkerInfo(id=1, name=trainer:0):\n"
        "remote failure\nTraceback (most recent call last):\n  File x\nValueError: bad"
    )
    rpc = json.dumps({"message": {"message": rpc_msg, "errorCode": 3}})
    status = AppStatus(
        AppState.FAILED,
        roles=[
            RoleStatus(
                "r",
                [
                    ReplicaStatus(0, AppState.FAILED, "r", "h", long_reply),
                    ReplicaStatus(1, AppState.FAILED, "r", "h", embedded),
                    ReplicaStatus(2, AppState.FAILED, "r", "h", rpc),
                ],
            )
        ],
    )
    text = status.format()
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if "error_msg: word00" in line)
    assert lines[first].startswith("        error_msg: word00 ")
    assert lines[first + 1].startswith(" " * len("    error_msg: ") + " word")
    rejoined = lines[first][len("        error_msg: ") :] + "".join(
        line[len("    error_msg: ") :] for line in lines[first + 1 : first + 3]
    )
    assert rejoined.startswith(words[:100])
    assert "error_msg: real cause\n" in text + "\n"
    assert "Exception raised" not in text
    assert "junk before" not in text
    assert "error_msg: RuntimeError: On WorkerInfo(id=1, name=trainer:0):" in text


def test_app_status_to_json() -> None:
    data = golden_status().to_json()
    assert data == {
        "state": "FAILED",
        "num_restarts": 0,
        "roles": [
            {
                "role": "trainer",
                "replicas": [
                    {
                        "id": 1,
                        "state": 4,
                        "role": "trainer",
                        "hostname": "host1",
                        "structured_error_msg": "<NONE>",
                        "hostaddr": "host1",
                    },
                    {
                        "id": 0,
                        "state": 5,
                        "role": "trainer",
                        "hostname": "host0",
                        "structured_error_msg": REPLY,
                        "hostaddr": "host0",
                    },
                ],
            }
        ],
        "msg": "job failed",
        "structured_error_msg": "<NONE>",
        "url": "file:///tmp/x",
        "failure": None,  # no scheduler said why: AppStatus made by hand
        "waiting": None,
        "timeline": [],
        "progress": None,
        "attempts": [],  # none given: AppStatus made by hand
        "array": None,  # not a sweep
    }
    json.dumps(data)
    assert golden_status().to_json(filter_roles=["other"])["roles"] == []


def test_app_status_raise_for_status_and_is_terminal() -> None:
    AppStatus(AppState.SUCCEEDED).raise_for_status()
    failed = golden_status()
    assert failed.is_terminal()
    assert not AppStatus(AppState.RUNNING).is_terminal()
    with pytest.raises(AppStatusError, match="job did not succeed") as e:
        failed.raise_for_status()
    assert e.value.status is failed


def test_app_status_repr_is_yaml_with_decoded_reply() -> None:
    import yaml

    status = golden_status()
    status.structured_error_msg = "not json"
    data = yaml.safe_load(repr(status))["AppStatus"]
    assert data["state"] == "FAILED (5)"
    assert data["structured_error_msg"] == "not json"
    replicas = data["roles"][0]["replicas"]
    assert replicas[1]["state"] == "FAILED (5)"
    assert replicas[1]["structured_error_msg"]["message"]["errorCode"] == 1
    assert replicas[0]["structured_error_msg"] == "<NONE>"


def test_app_status_repr_without_pyyaml_falls_back_to_json() -> None:
    code = textwrap.dedent(
        """
        import sys, json
        sys.modules["yaml"] = None  # makes `import yaml` raise ImportError
        from torchx.specs import AppStatus, AppState
        print(json.dumps(json.loads(repr(AppStatus(AppState.RUNNING, msg="m")))))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out)["AppStatus"]["state"] == "RUNNING (3)"


# ---------------------------------------------------------------------------- runopts


def kubernetes_like_opts() -> runopts:
    opts = runopts()
    opts.add("queue", type_=str, help="Volcano queue to schedule job in", required=True)
    opts.add(
        "namespace", type_=str, help="Kubernetes namespace to schedule job in", default="default"
    )
    opts.add("service_account", type_=str, help="The service account name")
    opts.add("copy_env", type_=list[str], help="env vars to copy")
    return opts


def test_runopts_repr_golden() -> None:
    assert repr(kubernetes_like_opts()) == (
        "    usage:\n"
        "        queue=QUEUE,[namespace=NAMESPACE],[service_account=SERVICE_ACCOUNT],"
        "[copy_env=COPY_ENV]\n"
        "\n"
        "    required arguments:\n"
        "        queue=QUEUE (str)\n"
        "            Volcano queue to schedule job in\n"
        "\n"
        "    optional arguments:\n"
        "        namespace=NAMESPACE (str, default)\n"
        "            Kubernetes namespace to schedule job in\n"
        "        service_account=SERVICE_ACCOUNT (str, None)\n"
        "            The service account name\n"
        "        copy_env=COPY_ENV (list, None)\n"
        "            env vars to copy"
    )
    assert repr(runopts()) == "    usage:\n        "


def test_runopts_add_validation_iteration_and_merge() -> None:
    opts = runopts()
    with pytest.raises(ValueError, match="must not have a default"):
        opts.add("x", type_=str, help="h", default="d", required=True)
    with pytest.raises(TypeError, match=r"'y'.*int"):
        opts.add("y", type_=int, help="h", default="nope")
    opts.add("a", type_=int, help="h", default=1)
    opts.add("a", type_=int, help="again", default=2)
    assert len(opts) == 1
    assert [(k, o.default, o.help) for k, o in opts] == [("a", 2, "again")]
    other = runopts()
    other.add("a", type_=int, help="other", default=3)
    other.add("b", type_=str, help="b")
    merged = opts | other
    assert [k for k, _ in merged] == ["a", "b"]
    assert merged.get("a").default == 3  # type: ignore[union-attr]
    assert len(opts) == 1
    opts.update(other)
    assert len(opts) == 2


def test_runopts_get_accepts_camel_case() -> None:
    opts = runopts()
    opts.add("cluster_name", type_=str, help="h")
    assert opts.get("cluster_name") is opts.get("clusterName")
    assert opts.get("clusterName") is not None
    assert opts.get("nope") is None


def test_runopts_resolve() -> None:
    opts = kubernetes_like_opts()
    opts.add("retries", type_=int, help="h", default=3)
    cfg = {"queue": "q", "serviceAccount": "sa", "retries": None, "extra": "kept"}
    # a key no option has is refused by name, with the nearest option (upstream's head)
    with pytest.raises(InvalidRunConfigException, match="unknown run option 'extra'") as e:
        opts.resolve(cfg)
    assert e.value.cfg_key == "extra"
    with pytest.raises(InvalidRunConfigException, match="did you mean 'namespace'"):
        opts.resolve({"queue": "q", "namespce": "x"})
    # a facade scheduler hands unknown keys on
    resolved = opts.resolve(cfg, ignore_unknown=True)
    assert resolved == {
        "queue": "q",
        "namespace": "default",
        "service_account": "sa",
        "copy_env": None,
        "retries": None,
        "extra": "kept",
    }
    assert "serviceAccount" in cfg and "namespace" not in cfg  # input untouched


def test_runopts_canonical_spellings() -> None:
    opts = kubernetes_like_opts()
    assert opts.canonical_key("serviceAccount") == "service_account"
    assert opts.canonical_key("service_account") == "service_account"
    assert opts.canonical_key("nope") == "nope"
    same = opts.resolve({"queue": "q", "serviceAccount": "sa", "service_account": "sa"})
    assert same["service_account"] == "sa"  # one value under two spellings
    with pytest.raises(InvalidRunConfigException, match="given twice") as e:
        opts.resolve({"queue": "q", "serviceAccount": "a", "service_account": "b"})
    assert "'serviceAccount'='a'" in str(e.value) and "'service_account'='b'" in str(e.value)
    assert opts.cfg_from_str("queue=q,serviceAccount=sa") == {
        "queue": "q",
        "service_account": "sa",
    }
    with pytest.raises(InvalidRunConfigException, match="did you mean 'queue'"):
        opts.cfg_from_str("queeu=q")
    with pytest.raises(InvalidRunConfigException, match="unknown run option 'nope'"):
        opts.cfg_from_json_repr('{"queue": "q", "nope": 1}')
    assert opts.cfg_from_json_repr('{"serviceAccount": "sa"}') == {"service_account": "sa"}


def test_runopts_resolve_errors() -> None:
    opts = kubernetes_like_opts()
    with pytest.raises(InvalidRunConfigException, match="Required run option: queue") as e:
        opts.resolve({})
    assert e.value.cfg_key == "queue"
    assert "Given: <EMPTY>" in str(e.value)
    with pytest.raises(InvalidRunConfigException, match="Required run option: queue"):
        opts.resolve({"queue": None})
    with pytest.raises(
        InvalidRunConfigException, match=r"Run option: namespace, must be of type: str"
    ) as e:
        opts.resolve({"queue": "q", "namespace": 1})
    assert "but was: 1 (int)" in str(e.value)
    with pytest.raises(InvalidRunConfigException, match="copy_env"):
        opts.resolve({"queue": "q", "copy_env": ["a", 1]})  # type: ignore[list-item]
    ints = runopts()
    ints.add("n", type_=int, help="h")
    ints.add("f", type_=float, help="h")
    with pytest.raises(InvalidRunConfigException, match="must be of type: int"):
        ints.resolve({"n": True})
    assert ints.resolve({"f": 2}) == {"n": None, "f": 2}


def test_runopt_cast_to_type() -> None:
    flag = runopt(None, bool, False, "h")
    for word in ("true", "True", "1", "YES", "on"):
        assert flag.cast_to_type(word) is True
    for word in ("false", "0", "No", "off"):
        assert flag.cast_to_type(word) is False
    with pytest.raises(ValueError, match=r"'maybe'.*true/1/yes/on.*false/0/no/off"):
        flag.cast_to_type("maybe")
    lst = runopt(None, list[str], False, "h")
    assert lst.is_type_list_of_str
    assert lst.cast_to_type("a,b;c,,") == ["a", "b", "c"]
    dct = runopt(None, dict[str, str], False, "h")
    assert dct.is_type_dict_of_str
    assert dct.cast_to_type("a:1,b:x:y;c:") == {"a": "1", "b": "x:y", "c": ""}
    with pytest.raises(ValueError, match="'nocolon'"):
        dct.cast_to_type("nocolon")
    assert runopt(None, int, False, "h").cast_to_type("42") == 42
    assert runopt(None, float, False, "h").cast_to_type("1.5") == 1.5
    with pytest.raises(ValueError, match="'x'"):
        runopt(None, int, False, "h").cast_to_type("x")
    with pytest.raises(ValueError):
        runopt(None, None, False, "h").cast_to_type("x")


def test_runopts_cfg_from_str() -> None:
    opts = kubernetes_like_opts()
    opts.add("debug", type_=bool, help="h", default=False)
    cfg = opts.cfg_from_str("queue=q,copy_env=A,B,debug=true,serviceAccount=sa")
    assert cfg == {"queue": "q", "copy_env": ["A", "B"], "debug": True, "service_account": "sa"}
    with pytest.raises(InvalidRunConfigException, match="unknown run option 'bogus'"):
        opts.cfg_from_str("queue=q,bogus=1")  # refused, as upstream's head does
    assert opts.cfg_from_str("") == {}
    assert opts.resolve(cfg)["service_account"] == "sa"


def test_runopts_cfg_from_json_repr() -> None:
    opts = kubernetes_like_opts()
    opts.add("env", type_=dict[str, str], help="h")
    opts.add("n", type_=int, help="h")
    cfg = opts.cfg_from_json_repr(
        json.dumps({"queue": "q", "copy_env": [1, "b"], "env": {"A": 1}, "n": 2, "namespace": None})
    )
    assert cfg == {
        "queue": "q",
        "copy_env": ["1", "b"],
        "env": {"A": "1"},
        "n": 2,
        "namespace": None,
    }


def test_get_type_name() -> None:
    import typing

    assert get_type_name(str) == "str"
    assert get_type_name(list[str]) == "list"
    assert get_type_name(typing.List[str]) == "typing.List[str]"  # noqa: UP006


def test_cases() -> None:
    assert cases.snake_to_camel("a_b_c") == "aBC"
    assert cases.snake_to_camel("hpc_identity") == "hpcIdentity"
    assert cases.snake_to_camel("plain") == "plain"
    assert cases.camel_to_snake("fooBar") == "foo_bar"
    assert cases.camel_to_snake("clusterName2X") == "cluster_name2_x"


# ---------------------------------------------------------------------------- dryrun info


def test_app_dryrun_info() -> None:
    info = AppDryRunInfo({"cmd": ["echo"]}, lambda r: f"REQ {r['cmd']}")
    assert repr(info) == "REQ ['echo']"
    assert str(info) == "REQ ['echo']"
    assert info.app is None and dict(info.cfg) == {} and info._scheduler is None
    app = AppDef("a")
    info = AppDryRunInfo({"cmd": ["echo"]}, str)
    info._app = app
    info._cfg = {"k": "v"}
    assert info.app is app
    assert info.cfg["k"] == "v"
    # plain assignable attributes, as upstream's head has them (#1400)
    other, cfg = AppDef("b"), {"k": "w"}
    info.app, info.cfg = other, cfg
    assert info.app is other and info._app is other
    assert info.cfg is cfg and info._cfg is cfg  # the object itself, not a copy


def test_app_def_get_role() -> None:
    trainer = Role("trainer", image="img")
    app = AppDef("train", [trainer, Role("ps", image="img")])
    assert app.get_role("trainer") is trainer and app["trainer"] is trainer
    with pytest.raises(KeyError, match="app `train` has no role named `x`; its roles: trainer, ps"):
        app.get_role("x")
    with pytest.raises(TypeError):
        iter(app)  # type: ignore[call-overload]  # app.roles is meant
    from torchx.specs.api import CfgT

    assert CfgT.__name__ == "CfgT"


# ---------------------------------------------------------------------------- handles / errors


def test_app_handles() -> None:
    handle = make_app_handle("local_cwd", "torchx", "echo-abc")
    assert handle == "local_cwd://torchx/echo-abc"
    assert parse_app_handle(handle) == ParsedAppHandle("local_cwd", "torchx", "echo-abc")
    assert parse_app_handle("k8s:///foo") == ("k8s", "", "foo")
    parsed = parse_app_handle("k8s://a/b/c")
    assert (parsed.session_name, parsed.app_id) == ("a/b", "c")
    assert parse_app_handle("kubernetes://s/ns:job").app_id == "ns:job"


@pytest.mark.parametrize("bad", ["", "foo", "local://", "local://session", "://s/a"])
def test_parse_app_handle_rejects_malformed(bad: str) -> None:
    with pytest.raises(MalformedAppHandleException) as e:
        parse_app_handle(bad)
    assert repr(bad) in str(e.value)
    assert "<scheduler>://<session>/<app_id>" in str(e.value)


def test_exceptions() -> None:
    e = InvalidRunConfigException("bad value", "k", {"k": 1})
    assert str(e) == "bad value. Given: {'k': 1}" and e.cfg_key == "k"
    unknown = UnknownSchedulerException("nope", available=["local_cwd", "slurm"])
    assert isinstance(unknown, KeyError)
    assert str(unknown) == "Unknown scheduler 'nope'; registered schedulers: local_cwd, slurm"
    assert "nope" in str(UnknownSchedulerException("nope"))
    assert "local_cwd://x/y" in str(UnknownAppException("local_cwd://x/y"))


# ---------------------------------------------------------------------------- Workspace


@pytest.mark.parametrize(
    ("text", "projects"),
    [
        (None, {}),
        ("", {}),
        ("  ", {}),
        ("~/proj", {"~/proj": ""}),
        (".", {".": ""}),
        ("{~/a: a, ~/b: b, ~/c: }", {"~/a": "a", "~/b": "b", "~/c": ""}),
        ("~/a: a\n~/b: \n", {"~/a": "a", "~/b": ""}),
    ],
)
def test_workspace_from_str(text: str | None, projects: dict[str, str]) -> None:
    assert Workspace.from_str(text).projects == projects


def test_workspace_from_str_without_pyyaml() -> None:
    code = textwrap.dedent(
        """
        import sys, json
        sys.modules["yaml"] = None
        from torchx.specs import Workspace
        print(json.dumps([
            Workspace.from_str("~/proj").projects,
            Workspace.from_str("{~/a: a, '~/b': b, ~/c: }").projects,
            Workspace.from_str("~/a: a\\n# note\\n~/b:\\n").projects,
            Workspace.from_str("").projects,
        ]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == [
        {"~/proj": ""},
        {"~/a": "a", "~/b": "b", "~/c": ""},
        {"~/a": "a", "~/b": ""},
        {},
    ]


def test_workspace_from_str_rejects_lists() -> None:
    with pytest.raises(ValueError, match="expected a path or a mapping"):
        Workspace.from_str("[a, b]")


def test_workspace_value_semantics() -> None:
    single = Workspace({"/src": ""})
    assert single and not Workspace({})
    assert single.is_unmapped_single_project()
    assert not Workspace({"/src": "sub"}).is_unmapped_single_project()
    assert not Workspace({"/a": "", "/b": ""}).is_unmapped_single_project()
    assert single == Workspace({"/src": ""}) and single != Workspace({"/src": "x"})
    assert len({single, Workspace({"/src": ""})}) == 1
    assert str(single) == "/src"
    assert str(Workspace({"/a": "x", "/b": ""})) == "/a:x;/b"
    assert Role("r", "i", workspace=single).workspace == single


def test_workspace_merge_into(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg" / "a.py").write_text("a")
    single = tmp_path / "single.txt"
    single.write_text("s")
    out = tmp_path / "out"
    out.mkdir()
    Workspace({str(proj): "", str(single): "", str(proj / "pkg"): "nested/pkg"}).merge_into(out)
    assert (out / "pkg" / "a.py").read_text() == "a"
    assert (out / "single.txt").read_text() == "s"
    assert (out / "nested" / "pkg" / "a.py").read_text() == "a"
    with pytest.raises(FileNotFoundError, match="missing"):
        Workspace({str(tmp_path / "missing"): ""}).merge_into(out)


# ---------------------------------------------------------------------------- TORCHX_HOME


def test_torchx_home_from_env_creates_private_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    path = TORCHX_HOME("cache", "x")
    assert path == tmp_path / "home" / "cache" / "x"
    assert path.is_dir()
    for p in (tmp_path / "home", tmp_path / "home" / "cache", path):
        assert stat.S_IMODE(p.stat().st_mode) == 0o700
    assert TORCHX_HOME() == tmp_path / "home"


def test_torchx_home_defaults_to_dot_torchx(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TORCHX_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert TORCHX_HOME() == tmp_path / ".torchx"
    assert (tmp_path / ".torchx").is_dir()


# ---------------------------------------------------------------------------- exports, settings


def test_specs_exports() -> None:
    for name in specs.__all__:
        assert getattr(specs, name) is not None, name
    assert specs.materialize_appdef.__name__ == "materialize_appdef"
    from torchx.specs import api

    for name in api.__all__:
        assert getattr(api, name) is not None, name
    assert api.AppStatus is AppStatus and api.is_terminal is is_terminal
    with pytest.raises(AttributeError):
        _ = specs.does_not_exist
    with pytest.raises(AttributeError):
        _ = api.does_not_exist


def test_settings_names() -> None:
    assert settings.ENV_TORCHX_TRACKERS == "TORCHX_TRACKERS"
    assert settings.ENV_TORCHX_PARENT_RUN_ID == "TORCHX_PARENT_RUN_ID"
    assert settings.ENV_TORCHX_JOB_ID == "TORCHX_JOB_ID"
    assert settings.ENV_TORCHXCONFIG == "TORCHXCONFIG"
    assert settings.ENV_TORCHX_INTERNAL_SESSION_ID == "TORCHX_INTERNAL_SESSION_ID"
    assert settings.ENV_TORCHX_IMAGE == "TORCHX_IMAGE"


def test_deprecation_helpers() -> None:
    @deprecated(replacement="new_fn")
    def old_fn(x: int) -> int:
        """Doc."""
        return x + 1

    @deprecated()
    class Old:
        def __init__(self, v: int) -> None:
            self.v = v

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert old_fn(1) == 2
        assert Old(3).v == 3
        deprecated_module("torchx.old", "torchx.new")
    messages = [str(w.message) for w in caught]
    assert all(w.category is UserWarning for w in caught)
    assert any("[Deprecated] `" in m and "old_fn" in m and "`new_fn`" in m for m in messages)
    assert any("Old" in m and "is deprecated" in m for m in messages)
    assert any("torchx.old" in m and "torchx.new" in m for m in messages)
    assert old_fn.__doc__ == "Doc." and old_fn.__name__ == "old_fn"


def test_role_base_image_is_a_deprecated_readable_field() -> None:
    """Seed 003 documents `Role(..., base_image=None, ...)`: code that passes, reads, copies
    or lists it keeps working; passing a value warns."""
    import dataclasses

    with pytest.warns(UserWarning, match=r"Role\(base_image=\.\.\.\)` is ignored"):
        role = Role("trainer", "img:1", base_image="base:1", entrypoint="train.py")
    assert (role.image, role.entrypoint, role.base_image) == ("img:1", "train.py", "base:1")
    assert "base_image" in [f.name for f in dataclasses.fields(Role)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = Role("trainer", "img:1", None, "train.py")  # positional order unchanged
        assert plain.base_image is None
        copied = dataclasses.replace(plain, image="img:2")
        assert (copied.image, copied.base_image) == ("img:2", None)
    with pytest.warns(UserWarning, match="base_image"):
        assert dataclasses.replace(plain, base_image="b:1").base_image == "b:1"
