"""Bumps the one version every torchx distribution shares.

The version lives in ``packages/torchx-specs/src/torchx/_version.py`` (``torchx-specs``
reads it through ``[tool.hatch.version]``) and, static so that every sdist builds on its
own, in each other distribution's ``pyproject.toml``. Distributions require each other as
a range over one minor release (``torchx-specs>=X.Y.0,<X.Y+1``, the compatibility policy
in docs/releasing.md), so a backend can be upgraded alone; this tool moves those ranges
to the new minor release too.

Usage: ``python tools/bump_version.py 0.9.0``
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION_FILE = ROOT / "packages" / "torchx-specs" / "src" / "torchx" / "_version.py"
_VERSION_LINE = re.compile(r'^__version__ = "([^"]+)"$', re.MULTILINE)
_RANGE = re.compile(r'"(torchx(?:-[a-z0-9-]+)?)(?:\[[^\]]*\])?(?:==|>=)[^"]+"')
_STATIC = re.compile(r'^version = "[^"]+"$', re.MULTILINE)
_PEP440 = re.compile(r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$")


def current_version() -> str:
    match = _VERSION_LINE.search(VERSION_FILE.read_text())
    if not match:
        raise SystemExit(f"no __version__ line in {VERSION_FILE}")
    return match.group(1)


def bump(new: str) -> list[Path]:
    """Writes ``new`` everywhere; returns the files changed."""
    if not _PEP440.match(new):
        raise SystemExit(f"not a PEP 440 version: {new!r} (e.g. 0.9.0, 0.9.0rc1, 0.9.0.dev0)")
    changed = []
    text = VERSION_FILE.read_text()
    VERSION_FILE.write_text(_VERSION_LINE.sub(f'__version__ = "{new}"', text))
    changed.append(VERSION_FILE)
    for pyproject in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        text = pyproject.read_text()
        updated = _STATIC.sub(f'version = "{new}"', text)
        updated = _RANGE.sub(lambda m: _requirement(m.group(0), new), updated)
        if updated != text:
            pyproject.write_text(updated)
            changed.append(pyproject)
    return changed


def compatible_range(version: str) -> str:
    """``>=X.Y.0,<X.Y+1``: every release of the minor series ``version`` belongs to."""
    major, minor = (int(part) for part in re.findall(r"\d+", version)[:2])
    return f">={major}.{minor}.0,<{major}.{minor + 1}"


def _requirement(quoted: str, new: str) -> str:
    name = re.match(r'"(torchx(?:-[a-z0-9-]+)?(?:\[[^\]]*\])?)', quoted)
    assert name is not None
    return f'"{name.group(1)}{compatible_range(new)}"'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version", nargs="?", help="the new version; omit to print the current")
    args = parser.parse_args(argv)
    if not args.version:
        print(current_version())
        return 0
    old = current_version()
    for path in bump(args.version):
        print(f"updated {path.relative_to(ROOT)}")
    print(f"{old} -> {args.version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
