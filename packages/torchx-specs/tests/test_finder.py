"""Component discovery (``torchx.specs.finder``) with components registered by real
installed distributions, each scenario in a fresh interpreter."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

import torchx.specs as specs
from torchx.specs import finder
from torchx.specs.builders import materialize_appdef
from torchx.specs.file_linter import ComponentFunctionValidator, LinterMessage

SPECS_SRC = Path(finder.__file__).resolve().parents[2]

TRAINER = '''
import torchx.specs as specs
from torchx.specs import AppDef


def trainer(name: str, replicas: int = 1) -> specs.AppDef:
    """Trains a model.

    Args:
        name: app name
        replicas: number of replicas
    """
    return AppDef(
        name=name,
        roles=[specs.Role(name="t", image="img", entrypoint="echo", num_replicas=replicas)],
    )


def _helper() -> int:
    return 1


def untyped(x):
    return x
'''

VALID_ELSEWHERE = '''
from torchx.specs import AppDef


def hidden(msg: str = "hi") -> AppDef:
    """Never discovered."""
    return AppDef(name=msg)
'''

MY_PROJECT = {
    "my_project/__init__.py": "",
    "my_project/bar/__init__.py": "",
    "my_project/bar/baz.py": TRAINER,
    "my_project/bar/reexport.py": "from my_project.bar.baz import trainer\n",
    "my_project/bar/broken_import.py": "import does_not_exist_xyz\n",
    "my_project/bar/broken_syntax.py": "def oops(:\n    pass\n",
    "my_project/bar/tests/__init__.py": "",
    "my_project/bar/tests/helpers.py": VALID_ELSEWHERE,
    "my_project/bar/test_baz.py": VALID_ELSEWHERE,
    "my_project/bar/nsdir/comp.py": VALID_ELSEWHERE,
    "other_comps/__init__.py": VALID_ELSEWHERE.replace("hidden", "hello"),
}


def install(site: Path, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """Installs a distribution registering ``torchx.components`` entry points."""
    dist_info = site / "my_project-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-project\nVersion: 1.0\n")
    lines = ["[torchx.components]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for rel, source in modules.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))


REPORT = """
    import json
    from torchx.specs import finder
    valid = sorted(finder.get_components())
    everything = sorted(finder._find_components())
    errors = [[e.module, e.error, e.entry_point] for e in finder.get_component_load_errors()]
    def outcome(name):
        try:
            finder.get_component(name)
            return "ok"
        except Exception as e:
            return f"{type(e).__name__}: {e}"
    print(json.dumps({
        "valid": valid,
        "all": everything,
        "errors": errors,
        "outcomes": {n: outcome(n) for n in NAMES},
    }))
"""


def report(site: Path, home: Path, names: list[str], *python_args: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(site), "TORCHX_HOME": str(home)}
    code = f"NAMES = {names!r}\n" + textwrap.dedent(REPORT)
    proc = subprocess.run(
        [sys.executable, *python_args, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    return path


def test_prefixes_replace_builtins_and_skip_tests(site: Path, tmp_path: Path) -> None:
    install(site, {"foo": "my_project.bar", "test": "my_project"}, MY_PROJECT)
    result = report(
        site,
        tmp_path / "home",
        ["foo.baz.trainer", "foo.baz.untyped", "foo.baz.trainr", "dist.ddp"],
    )
    # the seed example: one module under two prefixes; built-ins are replaced
    assert result["valid"] == ["foo.baz.trainer", "test.bar.baz.trainer"]
    everything = result["all"]
    assert isinstance(everything, list)
    assert "foo.baz.untyped" in everything  # discovered, but fails the linter
    assert not [n for n in everything if "hidden" in n or "reexport" in n or "_helper" in n]

    outcomes = result["outcomes"]
    assert isinstance(outcomes, dict)
    assert outcomes["foo.baz.trainer"] == "ok"
    assert outcomes["foo.baz.untyped"].startswith(
        "ComponentValidationException: Component foo.baz.untyped has validation errors"
    )
    not_found = outcomes["foo.baz.trainr"]
    assert not_found.startswith("ComponentNotFoundException: Component `foo.baz.trainr`")
    assert "Did you mean: foo.baz.trainer" in not_found
    assert "torchx builtins" in not_found
    assert "broken_import" in not_found  # the user learns why something may be missing
    assert outcomes["dist.ddp"].startswith("ComponentNotFoundException")


def test_broken_modules_are_reported_not_fatal(site: Path, tmp_path: Path) -> None:
    install(site, {"foo": "my_project.bar", "bad": "no_such_components_pkg"}, MY_PROJECT)
    result = report(site, tmp_path / "home", [])
    assert result["valid"] == ["foo.baz.trainer"]
    errors = result["errors"]
    assert isinstance(errors, list)
    by_module = {module: (error, ep) for module, error, ep in errors}
    assert by_module["my_project.bar.broken_import"][0].startswith("ModuleNotFoundError")
    assert by_module["my_project.bar.broken_syntax"][0].startswith("SyntaxError")
    assert by_module["my_project.bar.broken_syntax"][1] == "foo = my_project.bar"
    assert by_module["no_such_components_pkg"][1] == "bad = no_such_components_pkg"


def test_underscore_keys_drop_the_prefix(site: Path, tmp_path: Path) -> None:
    install(site, {"_0": "my_project.bar", "_": "other_comps"}, MY_PROJECT)
    result = report(site, tmp_path / "home", ["baz.trainer", "hello"])
    assert result["valid"] == ["baz.trainer", "hello"]
    assert result["outcomes"] == {"baz.trainer": "ok", "hello": "ok"}


def test_builtins_module_is_the_default(site: Path, tmp_path: Path) -> None:
    # No torchx.components entry points: the ``torchx.components`` package is scanned.
    # A stand-in placed first on sys.path plays the built-ins here.
    builtins = {
        "torchx/components/__init__.py": "",
        "torchx/components/utils.py": VALID_ELSEWHERE.replace("hidden", "echo"),
    }
    for rel, source in builtins.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    result = report(site, tmp_path / "home", ["utils.echo"])
    assert result["valid"] == ["utils.echo"]
    assert result["outcomes"] == {"utils.echo": "ok"}


def test_no_builtins_installed_means_no_components(site: Path, tmp_path: Path) -> None:
    # -S: no site-packages, so only torchx-specs (PYTHONPATH) is importable.
    env_site = f"{site}{os.pathsep}{SPECS_SRC}"
    result = report(Path(env_site), tmp_path / "home", ["dist.ddp"], "-S")
    assert result["valid"] == []
    assert result["errors"] == []
    assert "torchx builtins" in str(result["outcomes"])


# ---- in-process: file and import-path forms, validators, sources --------------------


@pytest.fixture(autouse=True)
def _fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "torchx_home"))
    finder.clear_component_cache()


@pytest.fixture
def component_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_component.py"
    path.write_text(textwrap.dedent(TRAINER))
    return path


def test_file_form(component_file: Path) -> None:
    component = finder.get_component(f"{component_file}:trainer")
    assert component.name == f"{component_file}:trainer"
    assert component.description.startswith("Trains a model.")
    app = materialize_appdef(component.fn, ["--name", "from-file", "--replicas", "3"])
    assert app.name == "from-file"
    assert app.roles[0].num_replicas == 3

    with pytest.raises(finder.ComponentNotFoundException, match="`nope` not found in"):
        finder.get_component(f"{component_file}:nope")
    with pytest.raises(finder.ComponentValidationException, match="Missing type annotation"):
        finder.get_component(f"{component_file}:untyped")


def test_file_form_syntax_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def comp(:\n")
    with pytest.raises(finder.ComponentValidationException, match=r"broken\.py:1"):
        finder.get_component(f"{path}:comp")


def test_import_path_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = f"finder_mod_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(TRAINER))
    monkeypatch.syspath_prepend(str(tmp_path))
    component = finder.get_component(f"{module}.trainer")
    assert component.fn_name == "trainer"
    with pytest.raises(finder.ComponentValidationException):
        finder.get_component(f"{module}.untyped")
    with pytest.raises(finder.ComponentNotFoundException):
        finder.get_component(f"{module}.absent")


class _RejectAll(ComponentFunctionValidator):
    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        return [self._gen_linter_message("rejected", app_specs_func_def.lineno)]


def test_results_are_cached_per_validators(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    package = f"cached_comps_{uuid.uuid4().hex[:8]}"
    install(site, {"_": package}, {f"{package}/__init__.py": TRAINER})
    monkeypatch.syspath_prepend(str(site))

    assert sorted(finder.get_components()) == ["trainer"]
    assert finder.get_components(validators=[_RejectAll()]) == {}
    with pytest.raises(finder.ComponentValidationException, match="rejected"):
        finder.get_component("trainer", validators=[_RejectAll()])
    assert sorted(finder.get_components()) == ["trainer"]
    assert finder.get_components(validators=[]).keys() == {"trainer", "untyped"}


def test_get_builtin_source(tmp_path: Path) -> None:
    path = tmp_path / "sourced.py"
    path.write_text(
        "import os\n"
        "from torchx.specs import (\n"
        "    AppDef,\n"
        "    Role,\n"
        ")\n\n\n"
        "def comp(name: str) -> AppDef:\n"
        '    """Comp."""\n'
        "    return AppDef(name=name, roles=[Role(name='r', image=os.sep)])\n\n\n"
        "import json\n"
    )
    source = finder.get_builtin_source(f"{path}:comp")
    assert source.startswith("import os\nfrom torchx.specs import (\n    AppDef,\n    Role,\n)\n")
    assert "def comp(name: str) -> AppDef:" in source
    assert "import json" not in source


def test_module_helpers() -> None:
    import torchx.specs.api as api_module

    assert finder.is_package(specs)
    assert not finder.is_namespace_package(specs)
    assert finder.module_relname(api_module, specs) == "api"
    assert finder.module_relname(specs, specs) == ""
    with pytest.raises(ValueError, match="not a submodule"):
        finder.module_relname(specs, api_module)
