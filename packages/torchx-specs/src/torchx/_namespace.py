"""Lets several distributions contribute modules to one ``torchx.*`` package.

``torchx``, ``torchx.schedulers``, ``torchx.tracker``, ``torchx.workspace`` and
``torchx.util`` are regular packages owned by ``torchx-specs``, yet other distributions
add modules to them (``torchx.schedulers.local_scheduler`` comes from ``torchx-runner``).
Installed from wheels they all land in one directory; installed editable they live in
separate ``src`` trees, so each shared package widens its ``__path__`` to every
``sys.path`` entry that holds a directory of the same dotted name. This is what
``pkgutil.extend_path`` does, minus the cost of importing ``pkgutil`` at start-up.
"""

import os
import sys


def extend_path(path: list[str], name: str) -> list[str]:
    """Returns ``path`` followed by every other ``sys.path`` directory for ``name``."""
    parts = name.split(".")
    result = list(path)
    seen = {os.path.normcase(os.path.abspath(p)) for p in result}
    for entry in sys.path:
        if not isinstance(entry, str) or not entry:
            continue
        candidate = os.path.join(entry, *parts)
        key = os.path.normcase(os.path.abspath(candidate))
        if key not in seen and os.path.isdir(candidate):
            seen.add(key)
            result.append(candidate)
    return result
