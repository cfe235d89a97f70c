"""``import torchx.specs`` must stay cheap: no heavy modules, no discovery, no file reads.

Checked through ``sys.modules`` in a fresh interpreter (not through timing, which is noisy);
the speed ratio itself is measured by the scripts under benchmarks/.
"""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = [
    "typing",  # a quarter of the import with the `re`, `warnings`, `contextlib` it loads
    "re",
    "dataclasses",
    "inspect",
    "ast",
    "json",
    "shlex",
    "difflib",
    "pprint",
    "textwrap",
    "string",
    "logging",
    "pathlib",
    "datetime",
    "asyncio",
    "yaml",
    "importlib.metadata",
    "docstring_parser",
    "pydantic",
    "fsspec",
    "torchx.util.entrypoints",
    "torchx.specs.builders",
    "torchx.specs.named_resources_aws",
    "torchx.specs.named_resources_generic",
    "torchx.specs.overlays",
]


def loaded_modules(code: str) -> set[str]:
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out))


def test_import_torchx_specs_loads_nothing_heavy() -> None:
    # json is imported by the probe itself after the import under test, so compare the
    # import against a bare interpreter that runs the same probe.
    baseline = loaded_modules("")
    after = loaded_modules("import torchx.specs")
    added = after - baseline
    heavy = sorted(name for name in FORBIDDEN if name in added)
    assert heavy == [], f"import torchx.specs loaded {heavy}"


def test_import_torchx_specs_does_not_discover_named_resources() -> None:
    code = (
        "import sys, torchx.specs\n"
        "lib = torchx.specs.named_resources\n"
        "print(lib._table is None, 'importlib.metadata' in sys.modules,"
        " 'torchx.util.entrypoints' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["True", "False", "False"]


def test_import_torchx_specs_opens_no_files() -> None:
    """Only module sources/bytecode are opened (audit hook sees every ``open``)."""
    code = (
        "import sys\n"
        "opened = []\n"
        "sys.addaudithook(lambda ev, args: opened.append(str(args[0])) if ev == 'open' else None)\n"
        "import torchx.specs\n"
        "bad = [p for p in opened if not p.endswith(('.py', '.pyc')) and '__pycache__' not in p]\n"
        "print(repr(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_lazy_names_resolve_on_first_use() -> None:
    code = (
        "import sys, torchx.specs as s\n"
        "before = 'torchx.specs.status' in sys.modules\n"
        "s.AppStatus\n"
        "print(before, 'torchx.specs.status' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "True"]


def test_import_torchx_specs_adds_only_torchx_modules_to_dataclasses() -> None:
    """design.md: beyond what ``dataclasses``/``typing``/``enum``/``threading`` (its locks)
    pull in, nothing."""
    baseline = loaded_modules("import dataclasses, typing, enum, threading")
    after = loaded_modules("import dataclasses, typing, enum, threading\nimport torchx.specs")
    torchx = {"torchx", "__future__"}  # the latter: lazy annotations, a few lines
    foreign = sorted(n for n in after - baseline if n not in torchx and not n.startswith("torchx."))
    assert foreign == []
