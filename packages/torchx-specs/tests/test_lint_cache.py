"""Linter verdicts are cached per component file and follow every edit of that file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from torchx.specs import finder
from torchx.util.startup import disk_cache

VALID = '''
from torchx.specs import AppDef


def comp(msg: str = "hi") -> AppDef:
    """A component."""
    return AppDef(name=msg)
'''

# Same function, no return annotation: the default linter rejects it.
INVALID = VALID.replace(") -> AppDef:", "):")

PROBE = """
import json, sys
from torchx.specs import finder
try:
    finder.get_component({name!r})
    verdict = "ok"
except finder.ComponentValidationException as e:
    verdict = "invalid: " + str(e)
print(json.dumps([verdict, "ast" in sys.modules]))
"""


def _lookup(site: Path, home: Path, name: str) -> tuple[str, bool]:
    """(verdict, whether ast was imported) of looking ``name`` up in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(site), "TORCHX_HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(name=name)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    verdict, ast_loaded = json.loads(proc.stdout)
    return verdict, ast_loaded


def test_second_lookup_skips_parsing_and_edits_are_seen(tmp_path: Path) -> None:
    site, home = tmp_path / "site", tmp_path / "home"
    site.mkdir()
    module = f"lint_cache_{uuid.uuid4().hex[:8]}"
    source = site / f"{module}.py"
    source.write_text(textwrap.dedent(VALID))

    assert _lookup(site, home, f"{module}.comp") == ("ok", True)  # linted: ast parsed
    assert _lookup(site, home, f"{module}.comp") == ("ok", False)  # verdict from the cache
    (cache,) = (home / "cache").glob("lint-*.marshal")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600

    source.write_text(textwrap.dedent(INVALID))  # a new size: the cached verdict is stale
    verdict, ast_loaded = _lookup(site, home, f"{module}.comp")
    assert verdict.startswith("invalid: ") and "comp" in verdict and ast_loaded


def test_disabled_cache_and_custom_validators_always_lint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    module = f"lint_nocache_{uuid.uuid4().hex[:8]}"
    (site / f"{module}.py").write_text(textwrap.dedent(INVALID))
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(finder.ComponentValidationException):
        finder.get_component(f"{module}.comp")
    finder.clear_component_cache()
    # Validators other than the default ones are never answered from the cache.
    assert finder.get_component(f"{module}.comp", validators=[]).fn_name == "comp"

    monkeypatch.setenv(disk_cache.ENV_NO_CACHE, "1")
    home = tmp_path / "nocache_home"
    monkeypatch.setenv("TORCHX_HOME", str(home))
    finder.clear_component_cache()
    with pytest.raises(finder.ComponentValidationException):
        finder.get_component(f"{module}.comp")
    assert not (home / "cache").exists()
