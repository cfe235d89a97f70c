"""torchx.plugins: ``@register``-ed plugins found in ``torchx_plugins.*`` namespace packages,
merged with entry points, with every problem reported instead of breaking discovery.

Each scenario runs in a fresh interpreter whose ``sys.path`` holds a site directory made
here, as an installed plugin distribution would be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from torchx_testsupport import write_dist

from torchx.plugins import (
    EIGHTH,
    HALF,
    QUARTER,
    SIXTEENTH,
    WHOLE,
    halve_mem_down_to,
    powers_of_two_gpus,
    resource_tags,
)
from torchx.plugins._registry import OWN_DISTRIBUTIONS
from torchx.specs import Resource

SCHEDULER = """
from torchx.plugins import register

@register.scheduler()
def mycluster(session_name, **kwargs):
    return ("mycluster", session_name)

@register.scheduler(name="other-cluster")
def make_other(session_name, **kwargs):
    return ("other", session_name)

def not_a_plugin(session_name):
    return None
"""

GPU_HOSTS = """
from torchx.plugins import register, powers_of_two_gpus, WHOLE
from torchx.specs import Resource

@register.named_resource(aliases=["bigbox"], fractionals=powers_of_two_gpus)
def gpubox(fractional: float = WHOLE) -> Resource:
    return Resource(cpu=int(64 * fractional), gpu=int(8 * fractional),
                    memMB=int(512 * 1024 * fractional))

@register.named_resource(name="tiny.cpu")
def tiny() -> Resource:
    return Resource(cpu=1, gpu=0, memMB=512)
"""


def write(site: Path, files: dict[str, str]) -> None:
    for rel, source in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))


def run(site: Path, code: str, **env: str) -> dict[str, object]:
    """Runs ``code`` with ``site`` on the path; returns the JSON it prints last, plus stderr."""
    environ = {k: v for k, v in os.environ.items() if k != "TORCHX_PLUGINS_SOURCE"}
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    environ.update({"PYTHONPATH": path, **env})
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=environ, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["stderr"] = proc.stderr
    return result


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    return path


def test_scheduler_plugins_are_found_by_their_registered_names(site: Path) -> None:
    write(site, {"torchx_plugins/schedulers/mycluster.py": SCHEDULER})
    result = run(
        site,
        """
        import json
        from torchx.schedulers import get_scheduler_factories
        factories = get_scheduler_factories()
        print(json.dumps({
            "mycluster": factories["mycluster"]("sess"),
            "other": factories["other-cluster"]("s2"),
            "plain": "not_a_plugin" in factories,
        }))
        """,
    )
    assert result["mycluster"] == ["mycluster", "sess"]
    assert result["other"] == ["other", "s2"]
    assert result["plain"] is False


def test_named_resources_with_aliases_and_power_of_two_slices(site: Path) -> None:
    # a sub-directory without __init__.py is scanned too
    write(site, {"torchx_plugins/named_resources/vendor/hosts.py": GPU_HOSTS})
    result = run(
        site,
        """
        import json
        from torchx.specs import resource
        import torchx_plugins.named_resources.vendor.hosts as hosts
        out = {}
        for name in ("gpubox", "bigbox", "gpubox_8", "gpubox_4", "gpubox_2", "gpubox_1",
                     "tiny.cpu"):
            r = resource(h=name)
            out[name] = [r.cpu, r.gpu, r.memMB, r.get_resource_name(), r.is_fractional()]
        out["module_table"] = sorted(hosts.NAMED_RESOURCES)
        out["attribute"] = hosts.gpubox_4().gpu
        print(json.dumps(out))
        """,
    )
    assert result["gpubox"] == [64, 8, 524288, "gpubox", False]
    assert result["bigbox"] == [64, 8, 524288, "gpubox", False]
    assert result["gpubox_8"] == [64, 8, 524288, "gpubox_8", False]
    assert result["gpubox_4"] == [32, 4, 262144, "gpubox_4", True]
    assert result["gpubox_1"] == [8, 1, 65536, "gpubox_1", True]
    assert result["tiny.cpu"] == [1, 0, 512, "tiny.cpu", False]
    assert result["module_table"] == [
        "bigbox", "gpubox", "gpubox_1", "gpubox_2", "gpubox_4", "gpubox_8", "tiny.cpu",
    ]  # fmt: skip
    assert result["attribute"] == 4


def test_tracker_plugin_is_built_by_name(site: Path) -> None:
    write(
        site,
        {
            "torchx_plugins/tracker/memtrack.py": """
            from torchx.plugins import register
            from torchx.tracker.api import TrackerBase

            class Remembering(TrackerBase):
                def __init__(self, config):
                    self.config = config
                def add_artifact(self, *a, **k): pass
                def artifacts(self, *a, **k): return {}
                def add_metadata(self, *a, **k): pass
                def metadata(self, *a, **k): return {}
                def add_source(self, *a, **k): pass
                def sources(self, *a, **k): return []
                def run_ids(self, **k): return []
                def lineage(self, *a, **k): return None

            @register.tracker()
            def memtrack(config):
                return Remembering(config)
            """
        },
    )
    result = run(
        site,
        """
        import json
        from torchx.tracker.api import build_tracker
        print(json.dumps({"config": build_tracker("memtrack", "cfg-1").config}))
        """,
    )
    assert result["config"] == "cfg-1"


def test_broken_misplaced_and_clashing_plugins_are_reported_not_fatal(site: Path) -> None:
    write(
        site,
        {
            "torchx_plugins/schedulers/mycluster.py": SCHEDULER,
            "torchx_plugins/schedulers/broken.py": "raise ImportError('needs the vendor SDK')\n",
            "torchx_plugins/schedulers/_private.py": "raise SystemExit('never imported')\n",
            "torchx_plugins/schedulers/second.py": """
                from torchx.plugins import register
                from torchx.specs import Resource

                @register.scheduler()
                def mycluster(session_name, **kwargs):
                    return "a second, different mycluster"

                @register.named_resource()
                def lost() -> Resource:
                    return Resource(cpu=1, gpu=0, memMB=1)
            """,
            # the same resource twice in two portions: harmless; differently: reported
            "torchx_plugins/named_resources/a.py": """
                from torchx.plugins import register
                from torchx.specs import Resource
                @register.named_resource()
                def same() -> Resource:
                    return Resource(cpu=2, gpu=0, memMB=2)
                @register.named_resource()
                def clash() -> Resource:
                    return Resource(cpu=2, gpu=0, memMB=2)
            """,
            "torchx_plugins/named_resources/b.py": """
                from torchx.plugins import register
                from torchx.specs import Resource
                @register.named_resource()
                def same() -> Resource:
                    return Resource(cpu=2, gpu=0, memMB=2)
                @register.named_resource()
                def clash() -> Resource:
                    return Resource(cpu=3, gpu=0, memMB=3)
            """,
        },
    )
    result = run(
        site,
        """
        import dataclasses, json
        from torchx import plugins
        reg = plugins.registry()
        scheds = reg.get(plugins.PluginType.SCHEDULER)
        res = reg.get(plugins.PluginType.NAMED_RESOURCE)
        print(json.dumps({
            "first_kept": scheds["mycluster"]("s"),
            "names": sorted(n for n, f in scheds.items() if not hasattr(f, "entry_point")),
            "clash_cpu": res["clash"]().cpu,
            "errors": [dataclasses.asdict(e) for e in reg.load_errors()],
            "resource_errors": [e.name for e in reg.load_errors(plugins.PluginType.NAMED_RESOURCE)],
            "yaml": str(reg),
        }))
        """,
    )
    assert result["first_kept"] == ["mycluster", "s"]
    assert result["names"] == ["mycluster", "other-cluster"]
    assert result["clash_cpu"] == 2
    errors = result["errors"]
    assert isinstance(errors, list)
    by_module = {(e["module"], e["name"]): e for e in errors}
    broken = by_module[("torchx_plugins.schedulers.broken", None)]
    assert broken["error"] == "ImportError: needs the vendor SDK"
    duplicate = by_module[("torchx_plugins.schedulers.second", "mycluster")]
    assert "registered again" in duplicate["error"] and duplicate["plugin_type"] == "scheduler"
    misplaced = by_module[("torchx_plugins.schedulers.second", "lost")]
    assert misplaced["plugin_type"] == "named_resource"
    assert "torchx_plugins.named_resources" in misplaced["error"]
    assert ("torchx_plugins.named_resources.b", "clash") in by_module
    assert not [e for e in errors if e["name"] == "same"]
    assert "never imported" not in str(result["stderr"])
    # a misplaced plugin counts for the kind it is, beside the kind it was found under
    assert set(result["resource_errors"]) == {"lost", "clash"}  # type: ignore[arg-type]
    import yaml

    shown = yaml.safe_load(str(result["yaml"]))
    assert {"name": "mycluster", "module": "torchx_plugins.schedulers.mycluster"} in shown[
        "scheduler"
    ]
    assert shown["errors"] == [
        {"module": "torchx_plugins.schedulers.broken", "error": "ImportError: needs the vendor SDK"}
    ]


def test_entry_point_wins_a_name_clash_and_the_clash_is_reported(site: Path) -> None:
    write(site, {"torchx_plugins/named_resources/vendor/hosts.py": GPU_HOSTS})
    write_dist(
        site,
        "acme-resources",
        {"torchx.named_resources": {"gpubox_4": "acme_res:gpubox_4"}},
        {"acme_res.py": "from torchx.specs import Resource\n"
         "def gpubox_4():\n    return Resource(cpu=5, gpu=5, memMB=5)\n"},
    )  # fmt: skip
    code = """
        import json
        from torchx import plugins
        from torchx.specs import resource
        reg = plugins.registry()
        print(json.dumps({
            "cpu": resource(h="gpubox_4").cpu,
            "has_namespace": "gpubox_8" in reg.get(plugins.PluginType.NAMED_RESOURCE),
            "errors": [e.error for e in reg.load_errors()],
        }))
    """
    both = run(site, code)
    assert both["cpu"] == 5 and both["has_namespace"] is True
    assert len(both["errors"]) == 1  # type: ignore[arg-type]
    assert "the entry point is used" in both["errors"][0]  # type: ignore[index]
    namespace_only = run(site, code, TORCHX_PLUGINS_SOURCE="1")
    assert namespace_only["cpu"] == 32 and namespace_only["errors"] == []
    entry_points_only = run(site, code, TORCHX_PLUGINS_SOURCE="2")
    assert entry_points_only["cpu"] == 5 and entry_points_only["has_namespace"] is False
    none = run(site, code.replace('resource(h="gpubox_4").cpu', "0"), TORCHX_PLUGINS_SOURCE="0")
    assert none["has_namespace"] is False


def test_bad_plugin_source_setting_names_the_values(site: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from torchx import plugins; plugins.registry()"],
        env={**os.environ, "TORCHX_PLUGINS_SOURCE": "yes"},
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "TORCHX_PLUGINS_SOURCE='yes' is not valid" in proc.stderr
    assert "3 (both, the default)" in proc.stderr


def test_fraction_constants() -> None:
    assert (WHOLE, HALF, QUARTER, EIGHTH, SIXTEENTH) == (1.0, 0.5, 0.25, 0.125, 0.0625)


def test_powers_of_two_gpus() -> None:
    assert powers_of_two_gpus(Resource(cpu=96, gpu=8, memMB=1)) == {
        1.0: "8", 0.5: "4", 0.25: "2", 0.125: "1",
    }  # fmt: skip
    assert powers_of_two_gpus(Resource(cpu=1, gpu=1, memMB=1)) == {1.0: "1"}
    with pytest.raises(ValueError, match="needs a resource with GPUs"):
        powers_of_two_gpus(Resource(cpu=1, gpu=0, memMB=1))
    with pytest.raises(ValueError, match="power-of-two GPU count"):
        powers_of_two_gpus(Resource(cpu=1, gpu=6, memMB=1))


def test_halve_mem_down_to() -> None:
    host = Resource(cpu=8, gpu=0, memMB=64 * 1024)
    assert halve_mem_down_to(minGiB=8)(host) == {1.0: "64", 0.5: "32", 0.25: "16", 0.125: "8"}
    assert halve_mem_down_to(minGiB=3)(Resource(cpu=1, gpu=0, memMB=48 * 1024)) == {
        1.0: "48", 0.5: "24", 0.25: "12", 0.125: "6", 0.0625: "3",
    }  # fmt: skip
    with pytest.raises(ValueError, match="minGiB >= 3"):
        halve_mem_down_to(minGiB=2)(Resource(cpu=1, gpu=0, memMB=48 * 1024))
    with pytest.raises(ValueError, match="whole GiB"):
        halve_mem_down_to(minGiB=1)(Resource(cpu=1, gpu=0, memMB=1500))
    with pytest.raises(ValueError, match="needs a resource with memory"):
        halve_mem_down_to(minGiB=1)(Resource(cpu=1, gpu=0, memMB=0))


def test_resource_tag_keys_are_the_ones_resource_reads() -> None:
    r = Resource(cpu=1, gpu=0, memMB=1)
    r.tags[resource_tags.RESOURCE_NAME] = "x"
    r.tags[resource_tags.IS_FRACTIONAL] = True
    assert r.get_resource_name() == "x" and r.is_fractional()


def test_own_distributions_are_this_repository_s_packages() -> None:
    packages = Path(__file__).resolve().parents[2]
    assert {p.name for p in packages.iterdir() if p.is_dir()} == OWN_DISTRIBUTIONS
