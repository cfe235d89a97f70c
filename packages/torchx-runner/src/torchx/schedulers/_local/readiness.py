"""``torchx check`` probes of the ``local_cwd`` scheduler: where apps keep their state,
and the interpreter and ``torchrun`` a job started here would get."""

from __future__ import annotations

import os
import shutil
import subprocess

from torchx.util.readiness import ReadinessCheck, not_ready, probe, ready, write_problem
from torchx.util.support.home import torchx_home


def state_dir_check() -> ReadinessCheck:
    """``TORCHX_HOME`` is writable, or can be created (nothing is created here)."""

    home = torchx_home()
    problem = write_problem(home, directory=True)
    if problem:
        return not_ready(
            "state dir",
            f"TORCHX_HOME: {problem}",
            f"make {home} writable, or point TORCHX_HOME at a directory you own",
        )
    if os.path.isdir(home):
        return ready("state dir", f"TORCHX_HOME {home} is writable")
    return ready("state dir", f"TORCHX_HOME {home} will be created on the first run")


def _version(program: str) -> str:
    """``program --version``'s first line; "" when it cannot tell within 3 s (a slow
    shim, such as pyenv's on a loaded machine, says nothing about whether jobs can run)."""
    try:
        proc = subprocess.run(
            [program, "--version"], capture_output=True, text=True, timeout=3, check=False
        )
    except (subprocess.TimeoutExpired, OSError):
        return ""
    return (
        (proc.stdout.strip() or proc.stderr.strip()).splitlines()[0] if proc.returncode == 0 else ""
    )


def interpreter_check() -> ReadinessCheck:
    """The ``python`` a job's command finds on ``PATH`` (jobs inherit this environment)."""
    found = shutil.which("python") or shutil.which("python3")
    if found is None:
        return not_ready(
            "python",
            "no `python` on PATH: utils.python and dist.ddp jobs would not start",
            "activate the environment your jobs should run in (or put python on PATH)",
        )
    version = _version(found)
    return ready("python", f"{found} ({version})" if version else found)


def torchrun_check() -> ReadinessCheck:
    """``torchrun``, which ``dist.ddp`` runs; jobs of other components do not need it."""
    found = shutil.which("torchrun")
    if found is None:
        # not a problem of local_cwd: only dist.ddp needs it, so this stays "ready"
        return ready(
            "torchrun",
            "no `torchrun` on PATH: only dist.ddp needs it (pip install torch where jobs run)",
        )
    return ready("torchrun", found)


def checks() -> list[ReadinessCheck]:
    fix = "see `torchx --log_level DEBUG check -s local_cwd`"
    return [
        probe("state dir", state_dir_check, fix),
        probe("python", interpreter_check, fix),
        probe("torchrun", torchrun_check, fix),
    ]
