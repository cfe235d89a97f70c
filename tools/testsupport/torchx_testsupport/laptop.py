"""A laptop beside the test cluster: an unprivileged user with no Slurm tools.

tools/sshd-up.sh makes the users (``torchx-laptop``, the client; ``torchx-login``, its
account on the login node, an OpenSSH server on 127.0.0.1) and the client's key and
``~/.ssh/config`` (host alias ``torchx-login-node``). Here the client gets a virtualenv of
its own (this checkout's distributions, installed editable from the system Python, as
root's interpreters are not readable by other users) and a PATH holding that venv and
``ssh`` only. The tests of ``slurm -cfg ssh=...`` and ``benchmarks/bench_slurm_ssh.py`` use it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

USER = "torchx-laptop"
LOGIN_USER = "torchx-login"
LOGIN_NODE = "torchx-login-node"
"""The client's ``~/.ssh/config`` alias of the login node."""
PORT = int(os.environ.get("TORCHX_TEST_SSH_PORT", "2222"))
HOME = Path(f"/home/{USER}")
LOGIN_HOME = Path(f"/home/{LOGIN_USER}")
VENV = HOME / ".torchx-test-venv"
BIN = HOME / ".torchx-test-bin"
DISTS = ("torchx-specs", "torchx-runner", "torchx-cli", "torchx-sched-slurm")


def problem() -> str | None:
    """Why there is no laptop here (None when there is one)."""
    if os.geteuid() != 0:
        return "the laptop tests switch users: run them as root"
    if not (HOME / ".ssh" / "config").is_file():
        return f"no {USER} set up; run tools/sshd-up.sh"
    try:
        import socket

        socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
    except OSError as e:
        return f"no ssh server on 127.0.0.1:{PORT} ({e}); run tools/sshd-up.sh"
    return None


def argv(command: Sequence[str], env: dict[str, str] | None = None) -> list[str]:
    """``command`` run as the laptop's user, with only its venv and ``ssh`` on PATH."""
    base = {"HOME": str(HOME), "PATH": f"{VENV}/bin:{BIN}", "LANG": "C.UTF-8"}
    base.update(env or {})
    return [
        "setpriv",
        f"--reuid={USER}",
        f"--regid={USER}",
        "--init-groups",
        "env",
        "-i",
        *(f"{k}={v}" for k, v in base.items()),
        *command,
    ]


def run(
    *command: str,
    cwd: str | Path | None = None,
    timeout: float = 120,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv(command, env), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def make_venv(root: Path) -> None:
    """The laptop's venv: ``root``'s distributions, editable, on the system Python (made
    again each time: it must hold this checkout)."""
    uv = shutil.which("uv") or shutil.which("uv", path=os.path.dirname(sys.executable))
    python = "/usr/bin/python3"
    if VENV.exists():
        shutil.rmtree(VENV)
    if uv:
        subprocess.run([uv, "venv", "-q", "-p", python, str(VENV)], check=True)
        install = [uv, "pip", "install", "-q", "-p", str(VENV / "bin" / "python")]
    else:
        subprocess.run([python, "-m", "venv", str(VENV)], check=True)
        install = [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
    editable = [arg for dist in DISTS for arg in ("-e", str(root / "packages" / dist))]
    subprocess.run([*install, *editable], check=True)
    subprocess.run(["chmod", "-R", "a+rX", str(VENV)], check=True)
    BIN.mkdir(exist_ok=True)
    link = BIN / "ssh"
    if not link.is_symlink():
        link.symlink_to(shutil.which("ssh") or "/usr/bin/ssh")
    reads = run("python", "-c", f"import torchx.schedulers.slurm_scheduler; print({str(root)!r})")
    if reads.returncode != 0:
        raise RuntimeError(
            f"{USER} cannot import this checkout ({root}): it must be readable by other"
            f" users\n{reads.stderr}"
        )


def own_dir(name: str) -> Path:
    """A fresh directory of the laptop's user in its home."""
    path = HOME / name
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(mode=0o700)
    shutil.chown(path, USER, USER)
    return path
