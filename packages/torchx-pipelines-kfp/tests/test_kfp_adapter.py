"""The KFP adapter compiled by KFP's own compiler: what each built-in component's step
holds (image, command, args, env, resources, retries), macros as placeholders, and the
apps that cannot be one step."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kfp import compiler, dsl

from torchx.components import dist, utils
from torchx.pipelines.kfp.adapter import (
    UnsupportedAppError,
    component_from_app,
    component_spec_from_app,
    container_from_app,
)
from torchx.specs import AppDef, Resource, Role, macros

IMAGE = "registry.example.com/team/trainer:1"


def _compiled(pipeline: Any, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "pipeline.yaml"
    compiler.Compiler().compile(pipeline, str(path))
    return yaml.safe_load(path.read_text())


def _executors(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: executor["container"]
        for name, executor in spec["deploymentSpec"]["executors"].items()
    }


def test_echo_and_sh_steps(tmp_path: Path) -> None:
    @dsl.pipeline(name="two-steps")
    def pipeline():  # no annotations: KFP reads them as the pipeline's outputs
        first = container_from_app(utils.echo(msg="hello", image=IMAGE))
        container_from_app(utils.sh("echo", "world", image=IMAGE)).after(first)

    spec = _compiled(pipeline, tmp_path)
    containers = list(_executors(spec).values())
    assert [c["image"] for c in containers] == [IMAGE, IMAGE]
    echo, sh = containers
    assert echo["command"] == ["echo"] and echo["args"] == ["hello"]
    assert sh["command"] == ["sh"] and sh["args"] == ["-c", "exec echo world"]
    tasks = spec["root"]["dag"]["tasks"]
    second = next(t for t in tasks.values() if t.get("dependentTasks"))
    assert second["dependentTasks"] == [
        next(k for k, t in tasks.items() if not t.get("dependentTasks"))
    ]


def test_resources_env_and_retries(tmp_path: Path) -> None:
    role = Role(
        name="train",
        image=IMAGE,
        entrypoint="python",
        args=["-m", "train", "--out", f"/runs/{macros.app_id}/ckpt", "--rank", macros.replica_id],
        env={"LR": "0.1", "MASTER": f"${{{macros.rank0_env}}}"},
        resource=Resource(cpu=1.5, gpu=2, memMB=2048),
        max_retries=3,
    )

    @dsl.pipeline(name="train")
    def pipeline():  # no annotations: KFP reads them as the pipeline's outputs
        container_from_app(AppDef("train", [role]))

    spec = _compiled(pipeline, tmp_path)
    (container,) = _executors(spec).values()
    assert container["command"] == ["python"]
    args = container["args"]
    assert args[:3] == ["-m", "train", "--out"]
    assert json.loads(args[3]) == {"Concat": ["/runs/", "{{$.pipeline_job_uuid}}", "/ckpt"]}, (
        "the app id is the pipeline job's id, joined with concat"
    )
    assert args[4:] == ["--rank", "0"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {"LR": "0.1", "MASTER": "${TORCHX_RANK0_HOST}", "TORCHX_RANK0_HOST": "localhost"}
    resources = container["resources"]
    assert resources["resourceCpuRequest"] == resources["resourceCpuLimit"] == "1500m"
    assert resources["resourceMemoryRequest"] == resources["resourceMemoryLimit"] == "2048M"
    assert resources["accelerator"]["resourceType"] == "nvidia.com/gpu"
    assert resources["accelerator"]["resourceCount"] == "2"
    (task,) = spec["root"]["dag"]["tasks"].values()
    assert task["retryPolicy"]["maxRetryCount"] == 3


def test_env_names_a_shell_cannot_use_are_carried_as_upstream(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    role = Role("r", IMAGE, entrypoint="echo", env={"TORCH_CUDA_SANITIZER=1": "1", "MY-VAR": "x"})

    @dsl.pipeline(name="names")
    def pipeline():  # no annotations: KFP reads them as the pipeline's outputs
        container_from_app(AppDef("names", [role]))

    (container,) = _executors(_compiled(pipeline, tmp_path)).values()
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["TORCH_CUDA_SANITIZER"] == "1=1" and env["MY-VAR"] == "x"
    warned = [r.getMessage() for r in caplog.records if r.name == "torchx.env"]
    assert len(warned) == 2 and all("\n" not in w for w in warned)


def test_builtin_components_compile(tmp_path: Path) -> None:
    apps = {
        "python": utils.python(c="print(1)", image=IMAGE),
        "binary": utils.binary("--flag", entrypoint="/bin/tool"),
        "touch": utils.touch(file="/tmp/done", image=IMAGE),
        "ddp": dist.ddp(script="train.py", j="1x1", image=IMAGE),
    }

    @dsl.pipeline(name="builtins")
    def pipeline():  # no annotations: KFP reads them as the pipeline's outputs
        for app in apps.values():
            container_from_app(app)

    containers = list(_executors(_compiled(pipeline, tmp_path)).values())
    assert len(containers) == 4
    assert {c["image"] for c in containers} >= {IMAGE}
    ddp = next(
        c for c in containers if "torchrun" in " ".join(map(str, c["args"])) + c["command"][0]
    )
    assert "--nnodes 1" in " ".join(map(str, ddp["args"])) or "--nnodes=1" in str(ddp["args"])


def test_component_spec_and_factory() -> None:
    app = utils.echo(msg="spec", image=IMAGE)
    text, role = component_spec_from_app(app)
    spec = yaml.safe_load(text)
    (container,) = _executors(spec).values()
    assert (container["image"], container["command"], container["args"]) == (
        IMAGE,
        ["echo"],
        ["spec"],
    )
    assert role.name == "echo"
    assert callable(component_from_app(app))


def test_apps_that_are_not_one_container_are_refused() -> None:
    two_roles = AppDef(
        "multi", [Role("a", IMAGE, entrypoint="x"), Role("b", IMAGE, entrypoint="y")]
    )
    with pytest.raises(UnsupportedAppError, match=r"has 2 roles .*torchx run -s kubernetes"):
        component_from_app(two_roles)
    replicas = dist.ddp(script="train.py", j="2x1", image=IMAGE)
    with pytest.raises(UnsupportedAppError, match="has 2 replicas"):
        component_from_app(replicas)
    app_id_env = AppDef("e", [Role("r", IMAGE, entrypoint="x", env={"RUN": macros.app_id})])

    def pipeline():  # no annotations: KFP reads them as the pipeline's outputs
        container_from_app(app_id_env)

    with pytest.raises(UnsupportedAppError, match=r"env var RUN .* cannot hold"):
        dsl.pipeline(pipeline)


def test_kfp_is_imported_only_by_this_distribution() -> None:
    code = (
        "import sys\n"
        "import torchx.specs, torchx.components.utils, torchx.runner\n"
        "assert 'kfp' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("role", "message"),
    [
        (Role("r", "img", entrypoint="echo", args=["{{$.inputs.parameters['token']}}"]),
         "argument .* holds KFP placeholder syntax"),
        (Role("r", "img", entrypoint="{{$.pipeline_job_name}}"), "entrypoint .* holds KFP"),
        (Role("r", "img", entrypoint="echo", env={"A": "x{{$.outputs}}"}),
         "env var A .* holds KFP"),
        (Role("r", "img", entrypoint="echo", env={"=1": "1"}), "is empty before its first '='"),
        (Role("r", "img", entrypoint="echo", env={"A\0B": "1"}), "contains a NUL character"),
    ],
)  # fmt: skip
def test_placeholder_syntax_and_bad_env_names_are_refused(role: Role, message: str) -> None:
    """KFP's launcher would replace ``{{$...}}`` text (reading the step's inputs and
    outputs); env names follow the rule of every scheduler. One line each, before compiling."""
    app = AppDef("a", roles=[role])
    for build in (component_from_app, lambda a: component_spec_from_app(a)):
        with pytest.raises(ValueError, match=message) as refused:
            build(app)
        assert "\n" not in str(refused.value)
