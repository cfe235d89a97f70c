"""Test tooling shared by every distribution's tests (on sys.path via pytest's ``pythonpath``).

Entry-point registration is tested against real installed-looking distributions: a
``*.dist-info`` directory with ``METADATA`` and ``entry_points.txt`` plus the modules it names,
laid out in a directory that the test puts on ``sys.path``/``PYTHONPATH``, exactly as pip
would install them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path


def write_dist(
    site: Path,
    name: str,
    entry_points: Mapping[str, Mapping[str, str]],
    modules: Mapping[str, str] | None = None,
    version: str = "1.0",
) -> Path:
    """Installs distribution ``name`` into ``site``; returns its ``.dist-info`` directory.

    ``entry_points`` maps a group to ``{entry name: "module:attr"}``; ``modules`` maps a path
    relative to ``site`` (``my_pkg/__init__.py``) to its source (dedented).
    """
    dist_info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    )
    lines = []
    for group, entries in entry_points.items():
        lines.append(f"[{group}]")
        lines += [f"{key} = {value}" for key, value in entries.items()]
        lines.append("")
    (dist_info / "entry_points.txt").write_text("\n".join(lines))
    for rel_path, source in (modules or {}).items():
        path = site / rel_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return dist_info
