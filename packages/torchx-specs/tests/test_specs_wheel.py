"""The ``torchx-specs`` wheel on its own: installs into a fresh venv with only its
declared dependencies, and works without any other torchx distribution."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1]

CHECK = """
    import importlib.util, json
    import torchx.specs as specs
    from torchx.specs.builders import materialize_appdef
    from torchx.specs.file_linter import get_fn_docstring
    from torchx.schedulers import get_scheduler_factories
    from torchx.util.entrypoints import distributions

    def echo(msg: str = "hi", replicas: int = 1) -> specs.AppDef:
        '''Echoes a message (parsed by docstring-parser, the one dependency).

        Args:
            msg: what to print
        '''
        return specs.AppDef(
            name="echo",
            roles=[specs.Role(name="echo", image="img", entrypoint="echo", args=[msg],
                              num_replicas=replicas, resource=specs.resource(cpu=1))],
        )

    app = materialize_appdef(echo, ["--msg", "wheel", "--replicas", "2"])
    print(json.dumps({
        "args": app.roles[0].args,
        "replicas": app.roles[0].num_replicas,
        "gpu_small": specs.resource(h="gpu.small").gpu,
        "runner": importlib.util.find_spec("torchx.runner") is not None,
        "components": importlib.util.find_spec("torchx.components") is not None,
        "schedulers": sorted(get_scheduler_factories()),
        "dists": [name for name, _ in distributions()],
        "file": specs.__file__,
        "help": get_fn_docstring(echo)[1]["msg"],
    }))
"""


def _clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["TORCHX_HOME"] = str(tmp_path / "home")
    return env


@pytest.mark.slow
def test_wheel_installs_and_works_alone(tmp_path: Path) -> None:
    dist_dir = tmp_path / "dist"
    env = _clean_env(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist_dir)],
        cwd=PACKAGE_DIR,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist_dir.glob("torchx_specs-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "torchx/specs/api.py" in names
    assert "torchx/util/entrypoints.py" in names
    assert not [n for n in names if n.startswith(("torchx/runner/", "torchx/cli/"))]
    assert not [n for n in names if "__pycache__" in n]

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], env=env, check=True, timeout=300)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert install.returncode == 0, install.stderr

    run = subprocess.run(
        [str(python), "-c", textwrap.dedent(CHECK)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["args"] == ["wheel"]
    assert result["help"] == "what to print"
    assert result["replicas"] == 2
    assert result["gpu_small"] == 1
    assert result["runner"] is False
    assert result["components"] is False
    assert result["schedulers"] == []
    assert result["dists"] == ["torchx-specs"]
    assert str(result["file"]).startswith(str(venv))
