"""Fixtures driving the real ``torchx`` executable in subprocesses.

Every test gets its own ``TORCHX_HOME``, ``HOME`` and working directory under ``tmp_path``
so that app state, ``.torchxconfig`` lookups and the entry-point cache never leak between
tests or into the developer's home.
"""

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from torchx_testsupport import one_error_line, write_dist


def _torchx_command() -> list[str]:
    script = Path(sys.executable).parent / "torchx"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "torchx.cli.main"]


TORCHX = _torchx_command()

OneLineError = Callable[[subprocess.CompletedProcess[str]], str]
"""The ``one_line_error`` fixture: checks stderr is one ``torchx: error:`` line, returns it."""


@dataclass
class Cli:
    """Runs ``torchx`` with an isolated environment rooted at ``root``."""

    root: Path
    env: dict[str, str]
    cwd: Path
    pythonpath: list[str] = field(default_factory=list)

    @property
    def command(self) -> list[str]:
        """The argv prefix that starts ``torchx``."""
        return list(TORCHX)

    def _env(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        env = dict(self.env)
        if self.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(self.pythonpath)
        env.update(extra or {})
        return env

    def run(
        self,
        *args: str,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*TORCHX, *args],
            input=input,
            env=self._env(env),
            cwd=cwd or self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def popen(self, *args: str) -> "subprocess.Popen[str]":
        return subprocess.Popen(
            [*TORCHX, *args],
            env=self._env(None),
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def python(
        self, *args: str, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *args],
            env=self._env(env),
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def add_distribution(
        self,
        name: str,
        version: str,
        entry_points: Mapping[str, Mapping[str, str]],
        modules: Mapping[str, str],
    ) -> Path:
        """Creates an installed-looking distribution (``*.dist-info``) on PYTHONPATH.

        ``modules`` maps a relative file path (``my_pkg/__init__.py``) to its source.
        """
        site = self.root / f"site-{name}"
        write_dist(site, name, entry_points, modules, version)
        self.pythonpath.append(str(site))
        return site


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Cli]:
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TORCHX") and k not in ("LOGLEVEL", "PYTHONPATH", "NO_COLOR")
    }
    env.update(HOME=str(home), TORCHX_HOME=str(home / ".torchx"))
    yield Cli(root=tmp_path, env=env, cwd=work)


@pytest.fixture
def one_line_error() -> OneLineError:
    """Asserts a non-zero exit and that stderr is exactly one ``torchx: error:`` line (no
    traceback); returns it."""
    return one_error_line
