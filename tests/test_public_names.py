"""Every module of upstream's head imports here, and every public name upstream's modules
define is importable from the same module, except what docs/differences.md lists as left
out on purpose (with why)."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = json.loads((Path(__file__).parent / "data" / "upstream-public-names.json").read_text())
HEAD = json.loads((Path(__file__).parent / "data" / "upstream-head-modules.json").read_text())[
    "modules"
]
MODULE_INTERNALS = {"log", "logger", "T", "F", "Ret"}
"""Names upstream's modules define for themselves (a module logger, a TypeVar)."""
_ROW = re.compile(r"^\| `(?P<module>torchx[\w.]*)` \| `(?P<name>\w+)` \| (?P<why>.+) \|$")
_MODULE_ROW = re.compile(r"^\| `(?P<module>torchx[\w.]*)` \| (?P<why>[^`|].+) \|$")


def _left_out() -> dict[tuple[str, str], str]:
    text = (ROOT / "docs" / "differences.md").read_text()
    section = text.split("## Public names left out", 1)[1]
    rows = {}
    for line in section.splitlines():
        match = _ROW.match(line)
        if match:
            rows[(match["module"], match["name"])] = match["why"].strip()
    return rows


def _left_out_modules() -> dict[str, str]:
    text = (ROOT / "docs" / "differences.md").read_text()
    section = text.split("## Modules left out", 1)[1].split("\n## ", 1)[0]
    return {
        m["module"]: m["why"].strip() for m in map(_MODULE_ROW.match, section.splitlines()) if m
    }


LEFT_OUT = _left_out()
LEFT_OUT_MODULES = _left_out_modules()


def _module_left_out(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in LEFT_OUT_MODULES)


@pytest.mark.parametrize("module", sorted(m for m in HEAD if not _module_left_out(m)))
def test_every_module_of_upstream_head_imports_with_its_names(module: str) -> None:
    mod = importlib.import_module(module)
    missing = [
        name
        for name in HEAD[module]
        if name not in MODULE_INTERNALS
        and not hasattr(mod, name)
        and (module, name) not in LEFT_OUT
    ]
    assert missing == [], f"{module} lacks {missing}: add them or list them in differences.md"


def test_left_out_modules_are_really_missing_and_explained() -> None:
    import importlib.util

    assert set(LEFT_OUT_MODULES) == {"torchx.examples", "torchx.components.integration_tests"}
    for module, why in LEFT_OUT_MODULES.items():
        assert module in HEAD, f"{module} is not a module of upstream's head"
        assert importlib.util.find_spec(module) is None, f"{module} exists now"
        assert len(why) > 40, f"say why {module} is left out"


@pytest.mark.parametrize("module", sorted(UPSTREAM))
def test_upstream_public_names_are_importable(module: str) -> None:
    mod = importlib.import_module(module)
    missing = [
        name
        for name in UPSTREAM[module]
        if not hasattr(mod, name) and (module, name) not in LEFT_OUT
    ]
    assert missing == [], f"{module} lacks {missing}: add them or list them in differences.md"


def test_left_out_names_are_really_missing_and_explained() -> None:
    assert LEFT_OUT, "the differences page lost its table"
    for (module, name), why in LEFT_OUT.items():
        upstream_names = {*UPSTREAM.get(module, []), *HEAD.get(module, [])}
        assert name in upstream_names, f"{module}.{name} is not an upstream name"
        assert not hasattr(importlib.import_module(module), name), f"{module}.{name} exists now"
        assert len(why) > 20, f"say why {module}.{name} is left out"


def test_aws_gib_is_upstreams_taxed_gib() -> None:
    """A user's `16 * GiB` must mean what it means upstream (MEM_TAX applied)."""
    from torchx.specs import named_resources_aws as aws

    assert aws.GiB == int(1024 * aws.MEM_TAX) == 983
    assert aws.aws_m5_xlarge().memMB == 16 * aws.GiB


def test_component_test_case_validates_and_runs_a_component(tmp_path: Path) -> None:
    """How the docs tell component authors to test their components."""
    import sys
    import unittest

    (tmp_path / "my_components.py").write_text(
        "import torchx.specs as specs\n\n\n"
        "def greet(msg: str = 'hi') -> specs.AppDef:\n"
        '    """Says something.\n\n    Args:\n        msg: what to say\n    """\n'
        "    return specs.AppDef('greet', [specs.Role('greet', 'img', entrypoint='echo',"
        " args=[msg])])\n\n\n"
        "def untyped(msg):\n    return None\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import my_components  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    from torchx.components.component_test_base import ComponentTestCase
    from torchx.specs import AppState

    class Checks(ComponentTestCase):
        def test_good(self) -> None:
            self.validate(my_components, "greet")
            status = self.run_appdef_on_scheduler(my_components.greet("x"), "local_cwd")
            assert status is not None and status.state == AppState.SUCCEEDED

        def test_bad(self) -> None:
            self.validate(my_components, "untyped")

    result = unittest.TestResult()
    unittest.TestSuite([Checks("test_good"), Checks("test_bad")]).run(result)
    assert result.wasSuccessful() is False
    assert [t.id().rsplit(".", 1)[1] for t, _ in result.errors + result.failures] == ["test_bad"]


def test_upstream_event_module_path() -> None:
    from torchx.runner.events import TorchxEvent as Ours
    from torchx.runner.events.api import SourceType, TorchxEvent

    assert TorchxEvent is Ours
    assert SourceType("<unknown>") is SourceType.UNKNOWN


PRIVATE_ACROSS_DISTRIBUTIONS: dict[tuple[str, str], str] = {}
"""(importing distribution, private module) -> why it may: none today. A module whose name
(or a package above it) starts with ``_`` belongs to its own distribution alone; what
several share lives in a public module (docs/plugins.md, "What the distributions share")."""


def _owners() -> dict[str, str]:
    owners = {}
    for src in ROOT.glob("packages/*/src"):
        for path in src.rglob("*.py"):
            parts = list(path.relative_to(src).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            owners[".".join(parts)] = src.parent.name
    return owners


def _imported_modules(path: Path, owners: dict[str, str]) -> set[str]:
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        found.update(name for name in names if name in owners)
    return found


def test_no_distribution_imports_another_distributions_private_modules() -> None:
    owners = _owners()
    assert len(owners) > 100, "the packages were not found"
    crossing = []
    for src in ROOT.glob("packages/*/src"):
        distribution = src.parent.name
        for path in src.rglob("*.py"):
            for module in _imported_modules(path, owners):
                private = any(part.startswith("_") for part in module.split("."))
                if (
                    private
                    and owners[module] != distribution
                    and (distribution, module) not in PRIVATE_ACROSS_DISTRIBUTIONS
                ):
                    crossing.append(f"{path.relative_to(ROOT)} imports {module}")
    assert crossing == [], "another distribution's private module:\n" + "\n".join(sorted(crossing))
