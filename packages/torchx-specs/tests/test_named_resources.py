"""Named resources: the generic and AWS tables, the lazy library and its plugin sources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx_testsupport import write_dist

import torchx.specs
from torchx.specs import (
    NULL_RESOURCE,
    Resource,
    get_named_resources,
    named_resources,
    resource,
)
from torchx.specs import named_resources_aws as aws
from torchx.specs import named_resources_generic as generic


@pytest.fixture(autouse=True)
def fresh_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test discovers named resources again, with a private TORCHX_HOME."""
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "torchx_home"))
    monkeypatch.delenv("TORCHX_CUSTOM_NAMED_RESOURCES", raising=False)
    named_resources.reset()
    yield
    named_resources.reset()


# ---------------------------------------------------------------------------- tables

GENERIC = {
    "gpu.small": (8, 1, 32768),
    "gpu.medium": (16, 2, 65536),
    "gpu.large": (32, 4, 131072),
    "gpu.xlarge": (64, 8, 262144),
    "cpu.nano": (1, 0, 512),
    "cpu.micro": (1, 0, 1024),
    "cpu.small": (1, 0, 2048),
    "cpu.medium": (2, 0, 4096),
    "cpu.large": (2, 0, 8192),
    "cpu.xlarge": (8, 0, 32768),
}


def test_generic_table_exact() -> None:
    assert list(generic.NAMED_RESOURCES) == list(GENERIC)
    for name, (cpu, gpu, mem) in GENERIC.items():
        res = resource(h=name)
        assert (res.cpu, res.gpu, res.memMB) == (cpu, gpu, mem), name
        assert res.capabilities == {} and res.devices == {}


EFA = aws.EFA_DEVICE
NEURON = aws.NEURON_DEVICE

# name: (cpu, gpu, memMB, devices)
AWS = {
    "aws_t3.medium": (2, 0, 3932, {}),
    "aws_m5.large": (2, 0, 7864, {}),
    "aws_m5.xlarge": (4, 0, 15728, {}),
    "aws_m5.2xlarge": (8, 0, 31456, {}),
    "aws_m5.4xlarge": (16, 0, 62912, {}),
    "aws_m5.8xlarge": (32, 0, 125824, {}),
    "aws_m5.12xlarge": (48, 0, 188736, {}),
    "aws_m5.16xlarge": (64, 0, 251648, {}),
    "aws_m5.24xlarge": (96, 0, 377472, {}),
    "aws_m5.metal": (96, 0, 377472, {}),
    "aws_m5d.large": (2, 0, 7864, {}),
    "aws_m5d.2xlarge": (8, 0, 31456, {}),
    "aws_m5d.12xlarge": (48, 0, 188736, {}),
    "aws_m5d.metal": (96, 0, 377472, {}),
    "aws_c5.18xlarge": (72, 0, 139586, {}),
    "aws_p3.2xlarge": (8, 1, 59963, {}),
    "aws_p3.8xlarge": (32, 4, 239852, {}),
    "aws_p3.16xlarge": (64, 8, 479704, {}),
    "aws_p3dn.24xlarge": (96, 8, 754944, {EFA: 1}),
    "aws_p4d.24xlarge": (96, 8, 1132416, {EFA: 4}),
    "aws_p4de.24xlarge": (96, 8, 1132416, {EFA: 4}),
    "aws_p5.48xlarge": (192, 8, 2013184, {EFA: 32}),
    "aws_p5e.48xlarge": (192, 8, 2013184, {EFA: 32}),
    "aws_p5en.48xlarge": (192, 8, 2013184, {EFA: 16}),
    "aws_p6-b200.48xlarge": (192, 8, 2013184, {EFA: 8}),
    "aws_p6-b300.48xlarge": (192, 8, 4026368, {EFA: 16}),
    "aws_p6e-gb200.36xlarge": (144, 4, 943680, {EFA: 16}),
    "aws_g4dn.xlarge": (4, 1, 15728, {}),
    "aws_g4dn.4xlarge": (16, 1, 62912, {}),
    "aws_g4dn.8xlarge": (32, 1, 125824, {EFA: 1}),
    "aws_g4dn.12xlarge": (48, 4, 188736, {EFA: 1}),
    "aws_g4dn.metal": (96, 8, 377472, {EFA: 1}),
    "aws_g5.xlarge": (4, 1, 15728, {}),
    "aws_g5.16xlarge": (64, 1, 251648, {EFA: 1}),
    "aws_g5.24xlarge": (96, 4, 377472, {EFA: 1}),
    "aws_g5.48xlarge": (192, 8, 754944, {EFA: 1}),
    "aws_g6e.xlarge": (4, 1, 31456, {}),
    "aws_g6e.16xlarge": (64, 1, 503296, {}),
    "aws_g6e.12xlarge": (48, 4, 377472, {}),
    "aws_g6e.24xlarge": (96, 4, 754944, {EFA: 2}),
    "aws_g6e.48xlarge": (192, 8, 1509888, {EFA: 4}),
    "aws_trn1.2xlarge": (8, 0, 31456, {NEURON: 1}),
    "aws_trn1.32xlarge": (128, 0, 503296, {EFA: 8, NEURON: 16}),
    "aws_inf2.xlarge": (4, 0, 15728, {NEURON: 1}),
    "aws_inf2.8xlarge": (32, 0, 125824, {NEURON: 1}),
    "aws_inf2.24xlarge": (96, 0, 377472, {NEURON: 6}),
    "aws_inf2.48xlarge": (192, 0, 754944, {NEURON: 12}),
}


def test_aws_table_values() -> None:
    for name, (cpu, gpu, mem, devices) in AWS.items():
        res = resource(h=name)
        assert (res.cpu, res.gpu, res.memMB, res.devices) == (cpu, gpu, mem, devices), name
        assert res.capabilities == {aws.K8S_ITYPE: name[len("aws_") :]}, name


def test_aws_table_is_complete_and_constants() -> None:
    assert len(aws.NAMED_RESOURCES) == 61
    assert all(name.startswith("aws_") for name in aws.NAMED_RESOURCES)
    assert aws.EFA_DEVICE == "vpc.amazonaws.com/efa"
    assert aws.NEURON_DEVICE == "aws.amazon.com/neurondevice"
    assert aws.K8S_ITYPE == "node.kubernetes.io/instance-type"
    assert aws.MEM_TAX == 0.96
    assert aws.aws_p4d_24xlarge() == resource(h="aws_p4d.24xlarge")
    assert aws.aws_p6_b200_48xlarge().capabilities[aws.K8S_ITYPE] == "p6-b200.48xlarge"
    for name, factory in aws.NAMED_RESOURCES.items():
        assert factory.__name__ == name.replace(".", "_").replace("-", "_")
        assert factory().memMB % 983 == 0


def test_instance_type_from_resource() -> None:
    assert aws.instance_type_from_resource(resource(h="aws_g5.xlarge")) == "g5.xlarge"
    with pytest.warns(UserWarning, match=aws.K8S_ITYPE):
        assert aws.instance_type_from_resource(Resource(cpu=1, gpu=0, memMB=1)) is None


def test_lazy_table_attributes() -> None:
    assert torchx.specs.AWS_NAMED_RESOURCES is aws.NAMED_RESOURCES
    assert torchx.specs.GENERIC_NAMED_RESOURCES is generic.NAMED_RESOURCES
    assert torchx.specs.GiB == 1024


# ---------------------------------------------------------------------------- lookups


def test_resource_numbers_and_name() -> None:
    assert resource() == Resource(cpu=2, gpu=0, memMB=1024)
    assert resource(cpu=0, gpu=0, memMB=0) == Resource(cpu=2, gpu=0, memMB=1024)
    assert resource(cpu=4, gpu=1, memMB=10) == Resource(cpu=4, gpu=1, memMB=10)
    assert resource(cpu=99, h="gpu.small").cpu == 8


def test_each_lookup_returns_a_fresh_resource() -> None:
    first = named_resources["gpu.small"]
    first.capabilities["x"] = 1
    assert named_resources["gpu.small"].capabilities == {}


def test_library_is_a_read_only_mapping() -> None:
    names = list(named_resources)
    assert names[:10] == list(GENERIC)
    assert "aws_p4d.24xlarge" in names
    assert names[-2:] == ["NULL", "MISSING"]
    assert len(named_resources) == len(names) == len(set(names))
    assert set(named_resources.keys()) == set(names)
    assert "gpu.small" in named_resources and "nope" not in named_resources
    items = dict(named_resources.items())
    assert items["cpu.nano"] == Resource(cpu=1, gpu=0, memMB=512)
    assert named_resources["NULL"] == NULL_RESOURCE
    assert named_resources["MISSING"] == NULL_RESOURCE
    with pytest.raises(TypeError):
        named_resources["x"] = Resource(1, 1, 1)  # type: ignore[index]


def test_unknown_name_suggests_closest_match() -> None:
    with pytest.raises(KeyError) as e:
        resource(h="gpu.smal")
    assert str(e.value) == "No named resource found for `gpu.smal`. Did you mean `gpu.small`?"


def test_unknown_name_lists_all_names_when_nothing_is_close() -> None:
    with pytest.raises(KeyError) as e:
        named_resources["zzzzzzzzzzzzzzzzzzzzzzzz"]
    message = str(e.value)
    assert message.startswith(
        "No named resource found for `zzzzzzzzzzzzzzzzzzzzzzzz`. Registered named resources: ["
    )
    assert "'gpu.small'" in message and "'aws_p4d.24xlarge'" in message


def test_get_named_resources_is_deprecated() -> None:
    with pytest.warns(FutureWarning, match=r"resource\(h=name\)"):
        assert get_named_resources("gpu.small") == resource(h="gpu.small")


def test_named_resource_factories_doctest_flow() -> None:
    """Seed docs register ``gpu_x2`` by writing into ``_named_resource_factories``."""
    from torchx.specs import _named_resource_factories

    def gpu_x2() -> Resource:
        return Resource(cpu=16, gpu=2, memMB=122_000)

    _named_resource_factories["gpu_x2"] = gpu_x2
    assert resource(h="gpu_x2") == Resource(cpu=16, gpu=2, memMB=122000)
    assert "gpu_x2" in named_resources
    assert torchx.specs._named_resource_factories["gpu_x2"] is gpu_x2
    del _named_resource_factories["gpu_x2"]
    assert "gpu_x2" not in named_resources
    assert len(_named_resource_factories) == len(named_resources)


def test_reset_forgets_registrations() -> None:
    torchx.specs._named_resource_factories["tmp_res"] = lambda: Resource(1, 0, 1)
    assert "tmp_res" in named_resources
    named_resources.reset()
    assert "tmp_res" not in named_resources


# ---------------------------------------------------------------------------- custom module


def write_module(root: Path, dotted: str, source: str) -> None:
    parts = dotted.split(".")
    pkg = root
    for part in parts[:-1]:
        pkg = pkg / part
        pkg.mkdir(exist_ok=True)
        (pkg / "__init__.py").touch()
    (pkg / f"{parts[-1]}.py").write_text(textwrap.dedent(source))


def test_custom_module_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_module(
        tmp_path,
        "my_org.resources",
        """
        from torchx.specs import Resource

        NAMED_RESOURCES = {
            "my_host": lambda: Resource(cpu=40, gpu=4, memMB=400_000),
            "gpu.small": lambda: Resource(cpu=1, gpu=1, memMB=1),
        }
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TORCHX_CUSTOM_NAMED_RESOURCES", "my_org.resources")
    assert resource(h="my_host") == Resource(cpu=40, gpu=4, memMB=400_000)
    assert resource(h="gpu.small") == Resource(cpu=1, gpu=1, memMB=1)  # custom wins
    assert resource(h="aws_t3.medium").cpu == 2
    assert "my_host" in torchx.specs.CUSTOM_NAMED_RESOURCES


def test_custom_module_absent_contributes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_CUSTOM_NAMED_RESOURCES", "no_such_org.no_such_module")
    assert resource(h="gpu.small").cpu == 8


def test_custom_module_errors_are_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_module(tmp_path, "org_no_table", "X = 1\n")
    write_module(tmp_path, "org_bad_dep", "import dependency_that_is_missing\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TORCHX_CUSTOM_NAMED_RESOURCES", "org_no_table")
    with pytest.raises(AttributeError, match=r"org_no_table.*NAMED_RESOURCES"):
        resource(h="gpu.small")
    named_resources.reset()
    monkeypatch.setenv("TORCHX_CUSTOM_NAMED_RESOURCES", "org_bad_dep")
    with pytest.raises(ModuleNotFoundError, match="dependency_that_is_missing"):
        resource(h="gpu.small")


# ---------------------------------------------------------------------------- entry points


def install_resources(
    site: Path, name: str, entry_points: dict[str, str], modules: dict[str, str]
) -> None:
    """Installs a distribution with ``torchx.named_resources`` entry points into ``site``."""
    write_dist(
        site,
        name,
        {"torchx.named_resources": entry_points},
        {f"{module}.py": source for module, source in modules.items()},
    )


def run_lookup(site: Path, home: Path, code: str) -> dict[str, object]:
    env = {
        **{k: v for k, v in os.environ.items() if k != "TORCHX_CUSTOM_NAMED_RESOURCES"},
        "PYTHONPATH": str(site),
        "TORCHX_HOME": str(home),
    }
    proc = subprocess.run(
        [sys.executable, "-W", "always", "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["stderr"] = proc.stderr
    return result


def test_entry_point_named_resources(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_resources(
        site,
        "my_resources",
        {
            "mygpu": "my_res:mygpu",
            "gpu.small": "my_res:override_small",
            "broken": "my_res:broken",
            "not_a_resource": "my_res:not_a_resource",
            "reentrant": "my_res:reentrant",
            "missing_module": "no_such_module_here:fn",
        },
        {
            "my_res": """
                from torchx.specs import Resource, resource

                def mygpu():
                    return Resource(cpu=24, gpu=3, memMB=96_000)

                def override_small():
                    return Resource(cpu=7, gpu=1, memMB=7)

                def broken():
                    raise RuntimeError("factory exploded")

                def not_a_resource():
                    return "nope"

                def reentrant():
                    return resource(h="gpu.large")
            """
        },
    )
    result = run_lookup(
        site,
        tmp_path / "home",
        """
        import json
        from torchx.specs import resource, named_resources
        r = resource(h="mygpu")
        print(json.dumps({
            "mygpu": [r.cpu, r.gpu, r.memMB],
            "small": resource(h="gpu.small").cpu,
            "aws": resource(h="aws_p4d.24xlarge").gpu,
            "names": list(named_resources),
        }))
        """,
    )
    assert result["mygpu"] == [24, 3, 96000]
    assert result["small"] == 7
    assert result["aws"] == 8
    names = result["names"]
    assert isinstance(names, list)
    assert "mygpu" in names
    for skipped in ("broken", "not_a_resource", "reentrant", "missing_module"):
        assert skipped not in names
    stderr = str(result["stderr"])
    assert "'broken'" in stderr and "factory exploded" in stderr
    assert "'not_a_resource'" in stderr and "str, not Resource" in stderr
    assert "'reentrant'" in stderr and "RuntimeError" in stderr
    assert "'missing_module'" in stderr


def test_entry_points_win_over_custom_module(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_resources(
        site,
        "ep_res",
        {"shared": "ep_mod:shared"},
        {
            "ep_mod": """
            from torchx.specs import Resource
            def shared():
                return Resource(cpu=2, gpu=0, memMB=2)
        """,
            "custom_mod": """
            from torchx.specs import Resource
            NAMED_RESOURCES = {
                "shared": lambda: Resource(cpu=1, gpu=0, memMB=1),
                "custom_only": lambda: Resource(cpu=3, gpu=0, memMB=3),
            }
        """,
        },
    )
    result = run_lookup(
        site,
        tmp_path / "home",
        """
        import json, os
        os.environ["TORCHX_CUSTOM_NAMED_RESOURCES"] = "custom_mod"
        from torchx.specs import resource
        print(json.dumps({
            "shared": resource(h="shared").cpu,
            "custom_only": resource(h="custom_only").cpu,
        }))
        """,
    )
    assert result["shared"] == 2
    assert result["custom_only"] == 3


def test_lookup_without_plugins_warns_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resource(h="cpu.small").memMB == 2048
