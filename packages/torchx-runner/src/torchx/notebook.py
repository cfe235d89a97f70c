"""Building a workspace from a Jupyter/IPython notebook (upstream's ``torchx.notebook``).

Importing this module in a notebook adds the cell magic ``%%workspacefile PATH``, which
writes the cell's text to ``PATH`` in an in-memory workspace, ``memory://torchx-workspace/``
(:func:`get_workspace`). Pass that URL as the workspace of a run (``--workspace`` or
``Runner.dryrun(..., workspace=get_workspace())``) and the files go with the job.

Outside IPython the module imports all the same (nothing is registered), and
:func:`workspacefile` can be called as a plain function.
"""

from __future__ import annotations

import posixpath

__all__ = ["get_workspace", "workspacefile"]

_WORKSPACE = "memory://torchx-workspace/"


def get_workspace() -> str:
    """The fsspec URL of the notebook's workspace."""
    return _WORKSPACE


def workspacefile(line: str, cell: str) -> None:
    """Writes ``cell`` to the file ``line`` (a path relative to the workspace's root)."""
    import fsspec

    relative = line.strip()
    normal = posixpath.normpath(relative) if relative else ""
    if not normal or normal.startswith(("/", "../")) or normal == "..":
        raise ValueError(
            f"%%workspacefile {relative!r}: give a path inside the workspace, such as train.py"
        )
    fs, root = fsspec.core.url_to_fs(get_workspace())
    path = posixpath.join(root, normal)
    fs.mkdirs(posixpath.dirname(path), exist_ok=True)
    with fs.open(path, "wt") as f:
        f.write(cell)
    print(f"Added {normal} to workspace {get_workspace()}")


def _register() -> None:
    """Registers the cell magic when an IPython shell is running."""
    try:
        from IPython import get_ipython  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.register_magic_function(workspacefile, magic_kind="cell")


_register()
