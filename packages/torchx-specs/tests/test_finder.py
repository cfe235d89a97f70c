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
from torchx_testsupport import write_dist

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
    write_dist(site, "my-project", {"torchx.components": entry_points}, modules)


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


def add_site(monkeypatch: pytest.MonkeyPatch, site: Path) -> None:
    """Puts ``site`` on ``sys.path`` after ``sys.path[0]``, which the entry-point cache
    ignores (so a prepended site would be invisible to a warm cache)."""
    monkeypatch.setattr(sys, "path", [sys.path[0], str(site), *sys.path[1:]])


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


# ---- direct lookup: one module imported, same answer as the full scan ----------------

ALT_BAZ = TRAINER.replace("Trains a model.", "Shadowed trainer.")

LOOKUP_MODULES = {
    **MY_PROJECT,
    "my_project/alt/__init__.py": "",
    "my_project/alt/baz.py": ALT_BAZ,
    "my_project/plain.py": VALID_ELSEWHERE.replace("hidden", "plain_fn"),
}

LOOKUP_ENTRY_POINTS = {
    "foo": "my_project.bar",
    "test": "my_project",
    "mod": "my_project.plain",
    "_0": "my_project.bar",
    "_1": "my_project.alt",
    "_2": "other_comps",
    "bad": "no_such_components_pkg",
}

LOOKUP_NAMES = [
    "foo.baz.trainer",  # group prefix + relative module + function
    "foo.baz.untyped",  # listed, with validation errors
    "foo.baz._helper",  # private: never a component
    "foo.reexport.trainer",  # imported there, defined elsewhere
    "foo.tests.helpers.hidden",  # tests packages are not scanned
    "foo.test_baz.hidden",  # test_* modules are not scanned
    "foo.nsdir.comp.hidden",  # namespace packages are not entered
    "foo.broken_import.anything",
    "foo.broken_syntax.oops",
    "foo.baz",
    "foo",
    "foo.",
    "foo..trainer",
    "test.bar.baz.trainer",  # `test` is a group name here, not a skipped module
    "test.alt.baz.trainer",
    "test.plain.plain_fn",
    "mod.plain_fn",  # a plain module as the base
    "mod.plain.plain_fn",
    "baz.trainer",  # `_0` and `_1` both list it: the first finder wins
    "hello",  # `_2`: a function of the base module itself
    "bad.anything",
    "nope.trainer",
]

LOOKUP_REPORT = """
    import json, sys
    from torchx.specs import finder

    def describe(c):
        if c is None:
            return None
        return [c.name, c.fn_name, c.fn.__module__, c.validation_errors]

    direct = {n: describe(finder._lookup(n, None)) for n in NAMES}
    scanned = finder._discover(None).components
    print(json.dumps({"direct": direct, "scan": {n: describe(scanned.get(n)) for n in NAMES}}))
"""


def run_script(site: Path, home: Path, script: str, names: list[str]) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(site), "TORCHX_HOME": str(home)}
    code = f"NAMES = {names!r}\n" + textwrap.dedent(script)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["stderr"] = proc.stderr
    return result


def test_direct_lookup_equals_full_scan(site: Path, tmp_path: Path) -> None:
    install(site, LOOKUP_ENTRY_POINTS, LOOKUP_MODULES)
    result = run_script(site, tmp_path / "home", LOOKUP_REPORT, LOOKUP_NAMES)
    assert result["direct"] == result["scan"]
    direct = result["direct"]
    assert isinstance(direct, dict)
    found = {name for name, component in direct.items() if component is not None}
    assert found == {
        "foo.baz.trainer",
        "foo.baz.untyped",
        "test.bar.baz.trainer",
        "test.alt.baz.trainer",
        "test.plain.plain_fn",
        "mod.plain_fn",
        "baz.trainer",
        "hello",
    }
    assert direct["baz.trainer"] == ["baz.trainer", "trainer", "my_project.bar.baz", []]
    assert direct["foo.baz.untyped"][3]  # linter errors kept


IMPORTS_REPORT = """
    import json, sys
    from torchx.specs import finder

    component = finder.get_component(NAMES[0])
    print(json.dumps({
        "imported": sorted(m for m in sys.modules if m.startswith(("my_project", "other_"))),
        "docstrings_parsed": "docstring_parser" in sys.modules,
    }))
"""


def test_direct_lookup_imports_only_the_named_module(site: Path, tmp_path: Path) -> None:
    install(site, LOOKUP_ENTRY_POINTS, LOOKUP_MODULES)
    result = run_script(site, tmp_path / "home", IMPORTS_REPORT, ["foo.baz.trainer"])
    # The finders' base packages (a prefix-less finder may hold any name) and the path to
    # the component; none of the other component modules.
    assert result["imported"] == [
        "my_project",
        "my_project.alt",
        "my_project.bar",
        "my_project.bar.baz",
        "other_comps",
    ]
    assert result["docstrings_parsed"] is False
    assert "skipping components" not in str(result["stderr"])  # no broken module touched


GET_COMPONENT_REPORT = """
    import json, sys
    from torchx.specs import finder

    def outcome(name):
        try:
            c = finder.get_component(name)
        except Exception as e:
            return f"{type(e).__name__}: {e}"
        return [c.name, c.fn.__module__]

    first = {n: outcome(n) for n in NAMES}
    parsed_before_description = "docstring_parser" in sys.modules
    description = finder.get_component("foo.baz.trainer").description
    print(json.dumps({
        "outcomes": first,
        "parsed_before_description": parsed_before_description,
        "description": description,
    }))
"""


def test_get_component_uses_lookup_and_explains_misses(site: Path, tmp_path: Path) -> None:
    install(site, LOOKUP_ENTRY_POINTS, LOOKUP_MODULES)
    result = run_script(
        site,
        tmp_path / "home",
        GET_COMPONENT_REPORT,
        ["baz.trainer", "foo.baz.untyped", "foo.baz.trainr", "other_comps.hello"],
    )
    outcomes = result["outcomes"]
    assert isinstance(outcomes, dict)
    assert outcomes["baz.trainer"] == ["baz.trainer", "my_project.bar.baz"]
    assert outcomes["foo.baz.untyped"].startswith("ComponentValidationException")
    miss = outcomes["foo.baz.trainr"]
    assert miss.startswith("ComponentNotFoundException")
    assert "Did you mean: foo.baz.trainer" in miss  # the full scan explains a miss
    assert "broken_import" in miss
    assert outcomes["other_comps.hello"] == ["other_comps.hello", "other_comps"]  # import path
    assert result["parsed_before_description"] is False
    assert result["description"] == "Trains a model."


def test_component_description_is_lazy_and_overridable() -> None:
    def comp() -> specs.AppDef:
        """Summary line.

        More text.
        """
        return specs.AppDef(name="x")

    lazy = finder._Component("c", None, "comp", comp)
    assert lazy.validation_errors == []
    assert lazy.description == "Summary line.\nMore text."
    given = finder._Component("c", "given", "comp", comp, [])
    assert given.description == "given"
    given.description = "changed"
    assert given.description == "changed"
    assert finder._Component("c", None, "comp", comp, ["bad"]).description == ""
    assert lazy == finder._Component("c", "Summary line.\nMore text.", "comp", comp, [])
    assert lazy != given
    assert "description='Summary line." in repr(lazy)


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

    with pytest.raises(
        finder.ComponentNotFoundException, match="has no function nope; its functions: trainer"
    ):
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
    add_site(monkeypatch, site)

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


def test_a_component_named_by_its_module_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pkg.mod:fn`` (upstream's head, #1415): the module is imported, not read as a
    file; a file path with ``:`` still names a file."""
    package = tmp_path / f"comps_{uuid.uuid4().hex[:6]}"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(TRAINER)
    monkeypatch.syspath_prepend(str(tmp_path))
    component = finder.get_component(f"{package.name}.train:trainer")
    assert component.fn.__module__ == f"{package.name}.train"
    app = materialize_appdef(component.fn, ["--name", "x"])
    assert app.name == "x"
    with pytest.raises(finder.ComponentNotFoundException, match="no component function `nope`"):
        finder.get_component(f"{package.name}.train:nope")
    by_file = finder.get_component(f"{package / 'train.py'}:trainer")
    assert by_file.fn.__name__ == "trainer"


def test_a_component_file_loads_as_a_real_module(tmp_path: Path) -> None:
    """Upstream's head (#1414): a file of a package loads under its dotted name, so its
    relative imports and dataclasses work; a file alone imports the modules beside it."""
    package = tmp_path / f"proj_{uuid.uuid4().hex[:6]}"
    (package / "comps").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "comps" / "__init__.py").write_text("")
    (package / "comps" / "defaults.py").write_text("IMAGE = 'from-a-sibling'\n")
    (package / "comps" / "train.py").write_text(
        textwrap.dedent(
            '''
            import dataclasses

            import torchx.specs as specs

            from .defaults import IMAGE


            @dataclasses.dataclass
            class Settings:
                image: str = IMAGE


            def trainer(name: str = "t") -> specs.AppDef:
                """Trains.

                Args:
                    name: app name
                """
                role = specs.Role(name="t", image=Settings().image, entrypoint="echo")
                return specs.AppDef(name=name, roles=[role])
            '''
        )
    )
    component = finder.get_component(f"{package / 'comps' / 'train.py'}:trainer")
    assert component.fn.__module__ == f"{package.name}.comps.train"
    assert materialize_appdef(component.fn, []).roles[0].image == "from-a-sibling"
    again = finder.get_component(f"{package / 'comps' / 'train.py'}:trainer")
    assert again.fn is component.fn  # the same module, loaded once

    alone = tmp_path / f"alone_{uuid.uuid4().hex[:6]}"
    alone.mkdir()
    (alone / "helpers_for_alone.py").write_text("IMAGE = 'beside-it'\n")
    (alone / "comp.py").write_text(
        TRAINER.replace(
            "import torchx.specs as specs\n",
            "import torchx.specs as specs\nfrom helpers_for_alone import IMAGE\n",
        ).replace('image="img"', "image=IMAGE")
    )
    found = finder.get_component(f"{alone / 'comp.py'}:trainer")
    assert materialize_appdef(found.fn, ["--name", "x"]).roles[0].image == "beside-it"


CLASS_COMPONENT = '''
from __future__ import annotations

import dataclasses

import torchx.specs as specs


@dataclasses.dataclass
class Trainer:
    """Trains a model.

    Args:
        epochs: how many passes over the data
        lr: the learning rate
    """

    epochs: int
    lr: float = 0.1

    def build(self) -> specs.AppDef:
        role = specs.Role(
            "train", "img", entrypoint="python",
            args=["-m", "train", f"--epochs={self.epochs}", f"--lr={self.lr}"],
        )
        return specs.AppDef("trainer", [role])


class Base:
    def build(self) -> specs.AppDef:
        role = specs.Role("r", "img", entrypoint="echo")
        return specs.AppDef(type(self).__name__.lower(), [role])


class Inherited(Base):
    """Builds with its parent's build().

    Args:
        name: unused
    """

    def __init__(self, name: str = "n") -> None:
        self.name = name


class NoBuild:
    def __init__(self, n: int) -> None:
        self.n = n


class WrongReturn:
    def build(self) -> str:
        return "not an app"
'''


def test_a_class_with_build_is_a_component(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream's head (#1416): the constructor's parameters are the component's arguments
    (types, defaults and help from the class), ``build()`` makes the app; by file or by
    ``pkg.mod:Name``."""
    path = tmp_path / f"classcomp_{uuid.uuid4().hex[:6]}.py"
    path.write_text(CLASS_COMPONENT)
    component = finder.get_component(f"{path}:Trainer")
    assert component.validation_errors == []
    assert component.description == "Trains a model."
    app = materialize_appdef(component.fn, ["--epochs", "3"])
    assert app.roles[0].args == ["-m", "train", "--epochs=3", "--lr=0.1"]
    with pytest.raises(ValueError, match="epochs"):
        materialize_appdef(component.fn, ["--epochs", "three"])
    inherited = finder.get_component(f"{path}:Inherited")
    assert materialize_appdef(inherited.fn, ["--name", "x"]).name == "inherited"

    monkeypatch.syspath_prepend(str(tmp_path))
    by_module = finder.get_component(f"{path.stem}:Trainer")
    assert materialize_appdef(by_module.fn, ["--epochs", "1", "--lr", "2"]).roles[0].args[-1] == (
        "--lr=2.0"
    )


def test_a_class_without_build_or_returning_no_appdef_is_refused(tmp_path: Path) -> None:
    path = tmp_path / f"classcomp_{uuid.uuid4().hex[:6]}.py"
    path.write_text(CLASS_COMPONENT)
    with pytest.raises(
        finder.ComponentValidationException,
        match="Class component `NoBuild` must define a `build\\(self\\) -> AppDef` method",
    ):
        finder.get_component(f"{path}:NoBuild")
    with pytest.raises(finder.ComponentValidationException, match="incorrect return annotation"):
        finder.get_component(f"{path}:WrongReturn")
    from torchx.specs.file_linter import validate

    assert validate(str(path), "Trainer") == []
    assert [m.description for m in validate(str(path), "WrongReturn")] == [
        "Function: build has incorrect return annotation `str`, supported annotation: AppDef"
    ]
