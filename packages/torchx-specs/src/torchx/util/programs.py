"""Where the program of a replica is, resolved as ``exec`` will resolve it on the host.

Schedulers that run replicas on this host's filesystem (``local_cwd`` directly, ``slurm``
on a shared one) check the entrypoint before anything starts, so a typo fails in one line
at submit time rather than in a log hours later. Imports only ``os``.
"""

import os

__all__ = ["find_program"]


def find_program(program: str, path: str, cwd: str) -> "str | None":
    """The executable file ``program`` names for a process started in ``cwd``.

    A name with a ``/`` is a path (relative to ``cwd``); anything else is the first
    executable of that name on ``path`` (relative entries taken against ``cwd``). None when
    there is none, or the file is not executable.
    """
    if not program:
        return None
    if os.sep in program:
        candidates = [os.path.join(cwd, program)]
    else:
        candidates = [os.path.join(cwd, d, program) for d in path.split(os.pathsep) if d]
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None
