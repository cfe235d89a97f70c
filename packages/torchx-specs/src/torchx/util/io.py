"""Reading component and config source files that may not live on the local disk."""

import os

import torchx
from torchx.util.entrypoints import load

__all__ = ["get_abspath", "read_conf_file"]  # and COMPONENTS_DIR (module __getattr__)

FILE_GROUP = "torchx.file"
FILE_ENTRY_POINT = "get_file_contents"


def get_abspath(relpath: str) -> str:
    """``relpath`` under the directory that holds the ``torchx`` package (where it exists
    there; the ``torchx`` namespace spans one directory per installed distribution)."""

    roots = [os.path.dirname(p) for p in torchx.__path__]
    for root in roots:
        if os.path.exists(os.path.join(root, relpath)):
            return os.path.join(root, relpath)
    return os.path.join(roots[0], relpath)


def __getattr__(name: str) -> object:
    if name == "COMPONENTS_DIR":  # pathlib is imported only by who asks for it
        from pathlib import Path

        return Path("torchx/components")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_conf_file(conf_file: str) -> str:
    """The text of ``conf_file``.

    Read from disk when the file exists; otherwise from the ``torchx.file`` /
    ``get_file_contents`` entry point (a ``fn(path) -> str | None`` that lets an
    installation serve files from elsewhere); otherwise relative to the ``torchx``
    package directories (``components/dist.py``).
    """
    if os.path.isfile(conf_file):
        with open(conf_file, encoding="utf-8") as f:
            return f.read()

    get_file_contents = load(FILE_GROUP, FILE_ENTRY_POINT, default=None)
    if get_file_contents is not None:
        contents = get_file_contents(conf_file)
        if contents is not None:
            return str(contents)

    for root in torchx.__path__:
        candidate = os.path.join(root, conf_file)
        if not os.path.isabs(conf_file) and os.path.isfile(candidate):
            with open(candidate, encoding="utf-8") as f:
                return f.read()
    raise FileNotFoundError(
        f"{conf_file}: no such file (looked on disk, in the `{FILE_GROUP}` entry point and"
        " relative to the torchx package)"
    )
