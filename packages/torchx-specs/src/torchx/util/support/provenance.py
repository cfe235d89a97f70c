"""Which TorchX is installed: this project's distributions, upstream's single ``torchx``
distribution (PyPI's ``torchx`` is upstream's), or both in one environment.

Upstream's distribution ships every module itself (``torchx/specs/api.py`` and the rest),
while this project's ``torchx`` is a meta-package without modules; installing both makes the
later install overwrite the other's files, which fails in confusing ways.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import sys
from importlib import metadata

from torchx.version import __version__

__all__ = [
    "UPSTREAM_MARKER",
    "command_owner",
    "install_report",
    "upstream_torchx_version",
    "version_line",
]

UPSTREAM_MARKER = "torchx/specs/api.py"
"""A file upstream's ``torchx`` distribution owns and this project's meta-package never does."""


def upstream_torchx_version() -> str | None:
    """The version of upstream TorchX's ``torchx`` distribution if it is installed here."""

    try:
        dist = metadata.distribution("torchx")
    except metadata.PackageNotFoundError:
        return None
    files = dist.files or []
    if any(str(f).replace("\\", "/") == UPSTREAM_MARKER for f in files):
        return str(dist.version)
    return None


def version_line() -> str:
    """``torchx --version``: this project's version and which TorchX it is, plus a warning
    line when upstream's ``torchx`` is installed in the same environment."""

    line = f"torchx-{__version__} (torchx-cli: the multi-distribution TorchX, not PyPI's `torchx`)"
    upstream = upstream_torchx_version()
    if upstream is not None:
        line += (
            f"\nwarning: upstream TorchX {upstream} (PyPI's `torchx`) is installed here too and"
            " overwrites this project's modules; run `pip uninstall torchx`, then reinstall"
            " torchx-cli and your backends (see `torchx check`)"
        )
    return line


def _record_hash(path: str) -> str:
    """A file's digest as a wheel's RECORD writes it (``sha256=`` urlsafe base64)."""

    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def command_owner(command: str | None = None) -> str | None:
    """Which distribution's ``torchx`` command is on PATH: ``torchx-cli`` (this project)
    or ``torchx`` (upstream's), told by the file's digest in each one's RECORD; None when
    neither recorded it (an editable or unusual install)."""

    path = (
        command
        or shutil.which("torchx", path=os.path.dirname(sys.executable))
        or shutil.which("torchx")
    )
    if not path:
        return None
    try:
        digest = _record_hash(path)
    except OSError:
        return None
    real = os.path.realpath(path)
    for name in ("torchx-cli", "torchx"):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for entry in dist.files or []:
            if entry.name == "torchx" and entry.hash is not None:
                located = os.path.realpath(str(dist.locate_file(entry)))
                if located == real and f"{entry.hash.mode}={entry.hash.value}" == digest:
                    return name
    return None


def install_report() -> str:
    """Which TorchX distributions are installed here and whose the ``torchx`` command is:
    ``python -m torchx.util.support.provenance`` prints it, also where upstream's ``torchx`` was
    installed last and took the command (upstream has no ``torchx check``)."""

    def version(name: str) -> str | None:
        try:
            return str(metadata.version(name))
        except metadata.PackageNotFoundError:
            return None

    ours, upstream = version("torchx-cli"), upstream_torchx_version()
    lines = [
        f"torchx-cli (this project): {ours or 'not installed'}",
        f"torchx (upstream TorchX, PyPI's): {upstream or 'not installed'}",
    ]
    owner = command_owner()
    lines.append(
        {
            "torchx-cli": "the `torchx` command: torchx-cli's",
            "torchx": "the `torchx` command: upstream TorchX's",
        }.get(owner or "", "the `torchx` command: not recorded by either (editable install?)")
    )
    if ours and upstream:
        lines.append(
            "a mixed install: each overwrites the other's modules; fix: pip uninstall torchx,"
            " then reinstall torchx-cli and your backends"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(install_report())
