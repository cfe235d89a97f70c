"""Slurm's commands on a login node over SSH: the ``ssh`` run option.

Every command runs through the system's ``ssh`` with the user's own OpenSSH configuration,
keys and agent, in batch mode (a key that is refused is an error, never a password prompt)
and over one multiplexed connection per login node (``ControlMaster``, kept one minute
after the last command), so after the first command each one costs a round trip, not a
handshake. The command is sent as one line that every login shell (sh, bash, zsh, fish,
csh/tcsh) reads the same way: ``/bin/sh`` runs it, every word quoted for it
(:func:`remote_command`, the one quoting of that context).

A job submitted over SSH is named ``<job id>@<target>`` (``slurm://torchx/1234@login1``):
the handle alone reaches the same login node afterwards, and upstream's handle parser
accepts it (the app id is everything after the session).

Imports only ``os`` at first (``shlex`` when a command is sent): ``torchx status`` of such
a job goes through here.
"""

from __future__ import annotations

import os
import stat
import tempfile
from shlex import quote

from torchx.schedulers._slurm.errors import SlurmCommandError

__all__ = [
    "SlurmSshError",
    "SshTarget",
    "control_dir",
    "remote_command",
    "split_app_id",
    "ssh_argv",
    "ssh_error",
]

_PERSIST_S = 60
"""How long the shared connection outlives its last command: long enough for a ``run``
followed by ``status`` and ``log``, short enough that an authenticated master does not
linger (``ssh -O exit`` ends it at once)."""
_CONNECT_TIMEOUT_S = 15


class SlurmSshError(SlurmCommandError):
    """The login node could not be reached or refused us; the message names the fix."""


class SshTarget:
    """A login node: ``[user@]host`` or an OpenSSH host alias, and an optional port."""

    __slots__ = ("destination", "port")

    def __init__(self, destination: str, port: int | None = None) -> None:
        self.destination = destination
        self.port = port

    @classmethod
    def parse(cls, text: str) -> SshTarget:
        """``[user@]host[:port]``, ``[user@][v6 address]:port`` or a host alias."""
        value = text.strip()
        port: int | None = None
        host = value
        user, at, rest = value.rpartition("@")
        if rest.startswith("["):  # [v6 address] or [v6 address]:port
            address, close, tail = rest[1:].partition("]")
            if not close or (tail and not tail.startswith(":")):
                raise ValueError(f"ssh={text!r}: write a v6 address as [address] or [address]:port")
            host = f"{user}{at}{address}"
            port = _port(tail[1:], text) if tail else None
        elif rest.count(":") == 1:
            address, _, tail = rest.partition(":")
            host = f"{user}{at}{address}"
            port = _port(tail, text)
        problem = None
        name, _, machine = host.rpartition("@")
        if not machine or machine.startswith("-") or name.startswith("-"):
            problem = "an empty host, or a host or user starting with '-'"
        elif any(c.isspace() or not c.isprintable() or c in "/\\'\"`$;&|<>()#" for c in host):
            problem = "a character ssh destinations do not have"
        elif host.count("@") > 1:
            problem = "more than one '@'"
        if problem:
            raise ValueError(
                f"ssh={text!r} has {problem}; give [user@]host[:port] or a host alias of"
                " your ~/.ssh/config"
            )
        return cls(host, port)

    @property
    def host(self) -> str:
        return self.destination.rpartition("@")[2]

    @property
    def spec(self) -> str:
        """The text :meth:`parse` reads back (``user@host:port``)."""
        if self.port is None:
            return self.destination
        if ":" in self.destination:  # a v6 address
            user, at, addr = self.destination.rpartition("@")
            return f"{user}{at}[{addr}]:{self.port}"
        return f"{self.destination}:{self.port}"

    @property
    def command(self) -> str:
        """The ``ssh`` command line that reaches it, for messages."""
        port = f"-p {self.port} " if self.port is not None else ""
        return f"ssh {port}{self.destination}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SshTarget) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash(self.spec)

    def __repr__(self) -> str:
        return f"SshTarget({self.spec!r})"


def _port(text: str, whole: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        raise ValueError(f"ssh={whole!r} has port {text!r}; give a number from 1 to 65535")
    return int(text)


def split_app_id(app_id: str) -> tuple[str, SshTarget | None]:
    """(job id, login node) of an app id: ``1234`` or ``1234@[user@]host[:port]``."""
    job_id, at, rest = app_id.partition("@")
    return job_id, (SshTarget.parse(rest) if at else None)


def control_dir() -> str | None:
    """A private directory for the connection sockets (``$XDG_RUNTIME_DIR`` or the temp
    dir, short enough for a socket path), or None where none can be had safely (then no
    connection is shared)."""

    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    path = os.path.join(base, f"torchx-ssh-{os.getuid()}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None

    private = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
    return path if private else None


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,/:=@+")


def remote_command(argv: list[str], env: dict[str, str] | None = None) -> str:
    """``argv`` as one command line for the login node, each word quoted; ``env`` is set
    for it (``env NAME=VALUE ... argv``).

    ssh hands the line to the account's login shell, which may not be POSIX (fish reads
    ``\\`` inside single quotes, csh ``!`` and line breaks). So the POSIX line is given to
    ``/bin/sh`` as ``printf`` octal escapes: what the login shell sees holds no quote,
    ``!``, ``$`` or line break of the user's, and every shell passes it on unchanged.
    """

    words = [*(["env", *(f"{k}={v}" for k, v in env.items())] if env else []), *argv]
    line = " ".join(map(quote, words))
    escaped = "".join(
        c if c in _PLAIN else "".join(f"\\{b:03o}" for b in c.encode("utf-8", "surrogateescape"))
        for c in line
    )
    return f'exec /bin/sh -c \'eval "$(printf "{escaped}")"\''


def ssh_argv(target: SshTarget, command: str) -> list[str]:
    """The local ``ssh`` command that runs ``command`` on ``target``."""
    argv = [
        "ssh",
        "-o",
        "BatchMode=yes",
        "-o",
        f"ConnectTimeout={_CONNECT_TIMEOUT_S}",
        "-o",
        "ServerAliveInterval=15",
    ]
    sockets = control_dir()
    if sockets is not None:
        argv += [
            "-o",
            "ControlMaster=auto",
            "-o",
            f"ControlPath={sockets}/%C",
            "-o",
            f"ControlPersist={_PERSIST_S}",
        ]
    if target.port is not None:
        argv += ["-p", str(target.port)]
    return [*argv, "--", target.destination, command]


_REFUSED = ("permission denied", "too many authentication failures", "no more authentication")
_UNREACHABLE = (
    "connection refused",
    "connection timed out",
    "operation timed out",
    "no route to host",
    "network is unreachable",
    "connection closed",
    "connection reset",
    "broken pipe",
)


def ssh_error(target: SshTarget, stderr: str) -> SlurmSshError:
    """The one line for an ``ssh`` that exited 255 (its own failure, not the command's)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    line = lines[-1] if lines else "ssh exited with status 255"
    text = stderr.lower()
    host, ssh = target.host, target.command
    if any(marker in text for marker in _REFUSED):
        return SlurmSshError(
            f"ssh to {host} was refused ({line}): it wants a password or a key this host does"
            f" not offer, and torchx never prompts; install your key there"
            f" ({ssh.replace('ssh', 'ssh-copy-id', 1)}) or load it into your agent (ssh-add),"
            f" then `{ssh} true` must work"
        )
    if "host key verification failed" in text or "host key for" in text:
        return SlurmSshError(
            f"ssh does not know the host key of {host} ({line}); connect once with"
            f" `{ssh}` to check and accept it"
        )
    if "could not resolve hostname" in text or "name or service not known" in text:
        return SlurmSshError(
            f"ssh cannot resolve {host} ({line}); check the name, or the Host alias in"
            " ~/.ssh/config"
        )
    if any(marker in text for marker in _UNREACHABLE):
        return SlurmSshError(
            f"cannot reach {host} over ssh ({line}); check the host and port, your network"
            " or VPN, and that the login node is up"
        )
    return SlurmSshError(f"ssh to {host} failed ({line}); check that `{ssh} true` works")
