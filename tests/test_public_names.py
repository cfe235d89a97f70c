"""Every public name upstream's modules define is importable from the same module here,
except those docs/differences.md lists as left out on purpose (with why)."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = json.loads((Path(__file__).parent / "data" / "upstream-public-names.json").read_text())
_ROW = re.compile(r"^\| `(?P<module>torchx[\w.]*)` \| `(?P<name>\w+)` \| (?P<why>.+) \|$")


def _left_out() -> dict[tuple[str, str], str]:
    text = (ROOT / "docs" / "differences.md").read_text()
    section = text.split("## Public names left out", 1)[1]
    rows = {}
    for line in section.splitlines():
        match = _ROW.match(line)
        if match:
            rows[(match["module"], match["name"])] = match["why"].strip()
    return rows


LEFT_OUT = _left_out()


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
        assert name in UPSTREAM.get(module, []), f"{module}.{name} is not an upstream name"
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
