"""Where the program of a replica is, resolved as ``exec`` will resolve it on the host.

Schedulers that run replicas on this host's filesystem (``local_cwd`` directly, ``slurm``
on a shared one) check the entrypoint before anything starts, so a typo fails in one line
at submit time rather than in a log hours later. Imports only ``os``.
"""

import os
import shlex

__all__ = ["find_program", "script_of"]


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


_PYTHONS = ("python", "python3")
_PYTHON_OPTS_WITH_VALUE = frozenset({"-W", "-X", "-Q"})
_TORCHRUN_FLAGS = frozenset(
    {
        "--standalone",
        "--no-python",
        "--no_python",
        "--run-path",
        "--run_path",
        "--module",
        "-m",
        "--virtual-local-rank",
        "--virtual_local_rank",
    }
)


def _is_python(program: str) -> bool:
    name = os.path.basename(program)
    return name in _PYTHONS or (name.startswith("python3.") and name[8:].isdigit())


def script_of(program: str, args: "list[str]") -> "str | None":
    """The script file a ``python``/``torchrun`` command runs, if it names one."""
    name = os.path.basename(program)
    if name in ("bash", "sh") and len(args) >= 2 and args[0] == "-c":
        try:
            words = shlex.split(args[1])
        except ValueError:
            return None
        return script_of(words[0], words[1:]) if words else None
    if _is_python(program):
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in ("-m", "-c", "-"):
                return None
            if arg in _PYTHON_OPTS_WITH_VALUE:
                i += 2
                continue
            if arg.startswith("-"):
                i += 1
                continue
            return arg
        return None
    if name == "torchrun":
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in ("-m", "--module", "--no-python", "--no_python"):
                return None
            if arg.startswith("-"):
                i += 1 if ("=" in arg or arg in _TORCHRUN_FLAGS) else 2
                continue
            return arg
    return None
