"""A class with ``build()`` as a component from the command line (upstream's #1416): its
constructor's parameters are the flags, ``--help`` shows them, the app runs for real."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from torchx_testsupport import one_error_line

TORCHX = str(Path(sys.executable).parent / "torchx")

COMPONENT = '''
import dataclasses

import torchx.specs as specs


@dataclasses.dataclass
class Greeter:
    """Greets someone, several times.

    Args:
        who: whom to greet
        times: how many greetings
    """

    who: str
    times: int = 1

    def build(self) -> specs.AppDef:
        script = f"for i in $(seq {self.times}); do echo hello {self.who}; done"
        role = specs.Role("greet", "/", entrypoint="sh", args=["-c", script])
        return specs.AppDef("greeter", [role])


class Broken:
    """No build method."""
'''


def test_a_class_component_runs_and_documents_its_flags(tmp_path: Path) -> None:
    (tmp_path / "greeting.py").write_text(COMPONENT)

    def torchx(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [TORCHX, *args], cwd=tmp_path, capture_output=True, text=True, timeout=60,
            check=False,
        )  # fmt: skip

    helped = torchx("run", "greeting.py:Greeter", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "Greets someone, several times." in helped.stdout
    assert "--who str    whom to greet (required)" in helped.stdout
    assert "--times int  how many greetings (default: 1)" in helped.stdout
    ran = torchx("run", "-s", "local_cwd", "--wait", "--log", "greeting.py:Greeter",
                 "--who", "ada", "--times", "2")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert (
        ran.stderr.count("greet/0 hello ada\n") == 2
    )  # the logs go to stderr, the handle to stdout
    broken = torchx("run", "-s", "local_cwd", "greeting.py:Broken")
    assert "Class component `Broken` must define a `build(self) -> AppDef` method" in (
        one_error_line(broken)
    )
