"""The CLI configures logging through an import hook that leaves ``sys.meta_path`` once
``logging`` is imported. ``torchx check`` imports in several threads at once: a thread
walking ``sys.meta_path`` for its own import while the hook left must still reach every
finder after it (it once skipped the PathFinder: "No module named ..." for a module that
was there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = r"""
import sys, threading
sys.path.insert(0, sys.argv[1])
from torchx.cli.main import _configure_logging
_configure_logging("WARNING")
assert "logging" not in sys.modules

asked, hook_gone = threading.Event(), threading.Event()

class Pause:
    # a finder just before the PathFinder that, while asked for the sentinel, lets go of
    # the import lock until the hook has left sys.meta_path (as a thread switch between
    # two finders of an import would)
    def find_spec(self, name, path=None, target=None):
        if name == "sentinel_mod":
            import _imp
            _imp.release_lock()
            asked.set()
            hook_gone.wait(10)
            _imp.acquire_lock()
        return None

from importlib.machinery import PathFinder
sys.meta_path.insert(sys.meta_path.index(PathFinder), Pause())
found = []

def import_sentinel():
    import sentinel_mod
    found.append(sentinel_mod.VALUE)

worker = threading.Thread(target=import_sentinel)
worker.start()
asked.wait(10)
import logging  # the hook configures logging and leaves sys.meta_path
hook_gone.set()
worker.join(10)
print(found)
"""


def test_an_import_in_another_thread_survives_the_logging_hook_leaving(tmp_path: Path) -> None:
    (tmp_path / "sentinel_mod.py").write_text("VALUE = 42\n")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert "ModuleNotFoundError" not in proc.stderr, proc.stderr
    assert proc.stdout.strip() == "[42]", (proc.stdout, proc.stderr)
