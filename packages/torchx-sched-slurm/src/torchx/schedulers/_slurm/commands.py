"""Running Slurm's client commands (``sbatch``, ``squeue``, ``sacct``, ...) cheaply.

``torchx status`` is one ``squeue`` call, so the call itself must cost little more than
the program: processes are started with ``os.posix_spawnp`` and read with ``select.poll``
instead of importing ``subprocess`` (which pulls in threading, signal and selectors).
A missing program is reported in one line that says what to install.
"""

from __future__ import annotations

import os
import select
import warnings

from torchx.schedulers._slurm import ssh
from torchx.schedulers._slurm.errors import SlurmCommandError
from torchx.util.support.atomic import write_all
from torchx.util.support.retry import retry_call

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from torchx.schedulers._slurm.ssh import SshTarget

__all__ = [
    "SlurmCommandError",
    "SlurmNotFoundError",
    "SlurmUnreachableError",
    "check_remote_result",
    "first_error_line",
    "run_once",
    "run_raw",
    "run_through_outages",
    "unreachable",
]


class SlurmUnreachableError(SlurmCommandError):
    """Slurm's controller (or its configuration, or its accounting) could not be reached:
    a job's fate is unknown, which is not the same as the job being gone."""

    def __init__(self, stderr: str, what: str = "Slurm") -> None:
        super().__init__(
            f"{what} could not be reached ({first_error_line(stderr)}); check that slurmctld"
            " is up (`scontrol ping`) and that this host has Slurm's configuration"
            " (/etc/slurm/slurm.conf, or SLURM_CONF)"
        )
        self.stderr = stderr


_NO_CONFIG = ("fetch_config", "configuration file", "configuration source", "dns srv")
"""This host has no usable Slurm configuration: no restart will fix it, so not retried."""
_TRANSIENT = (
    "unable to contact",
    "connection refused",
    "connection failure",
    "socket timed out",
    "zero bytes were transmitted",
    "problem talking to the database",
)
"""The controller or slurmdbd is down or slow: worth waiting for."""
_UNREACHABLE = _NO_CONFIG + _TRANSIENT


def unreachable(stderr: str) -> bool:
    """Whether a Slurm command's error says Slurm itself could not be reached (as opposed
    to Slurm answering, e.g. ``Invalid job id specified``)."""
    text = stderr.lower()
    return any(marker in text for marker in _UNREACHABLE)


_NOT_SENT = ("unable to contact", "connection refused")
"""Errors after which a submission surely did not reach the controller (safe to resend)."""


def run_through_outages(
    argv: list[str],
    what: str = "Slurm",
    *,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    resend: bool = True,
    via: SshTarget | None = None,
) -> tuple[int, str, str]:
    """:func:`run_once`, riding out an unreachable controller (a slurmctld restart, a dropped
    connection) within the retry budget of :mod:`torchx.util.support.retry`; then
    :class:`SlurmUnreachableError` naming ``what``. Any other result is returned as is.

    ``resend=False`` (submissions) retries only errors that prove nothing was received,
    so a job is never queued twice. ``via``: run on that login node over ssh.
    """

    def once() -> tuple[int, str, str]:
        code, out, err = run_once(argv, stdin=stdin, env=env, via=via)
        if code != 0 and unreachable(err):
            raise SlurmUnreachableError(err, what)
        return code, out, err

    def transient(e: BaseException) -> bool:
        if not isinstance(e, SlurmUnreachableError):
            return False
        text = e.stderr.lower()  # Slurm's own words, not the message built around them
        if any(marker in text for marker in _NO_CONFIG):
            return False
        return any(marker in text for marker in (_TRANSIENT if resend else _NOT_SENT))

    return retry_call(once, service=what, is_transient=transient)


class SlurmNotFoundError(SlurmCommandError):
    """A Slurm client program is not installed on this host (or on the login node)."""

    def __init__(self, program: str, host: str | None = None) -> None:
        if host is None:
            message = f"{program} not found: install Slurm's client tools or run on a login node"
        else:
            message = (
                f"{program} not found on {host} (its PATH for commands run over ssh): install"
                f" Slurm's client tools there, or add their directory to PATH in ~/.bashrc there"
            )
        super().__init__(message)
        self.program = program


def run_once(
    argv: list[str],
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    via: SshTarget | None = None,
) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``argv`` (run with ``env``, default this process'
    environment); raises :class:`SlurmNotFoundError`.

    ``via``: runs on that login node over ssh instead, with ``env`` holding only the
    variables to set there (this host's environment is not the login node's); ssh's own
    failures raise :class:`SlurmSshError`.
    """
    if via is None:
        return _spawn(argv, stdin, env)
    code, out, err = run_raw(argv, via, stdin, env)
    return code, out.decode("utf-8", "replace"), err


def run_raw(
    argv: list[str],
    via: SshTarget | None = None,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[int, bytes, str]:
    """:func:`run_once` with stdout as bytes (a log's, counted in bytes)."""
    if via is None:
        code, out, raw_err = _spawn_raw(argv, stdin, env)
        return code, out, raw_err.decode("utf-8", "replace")

    remote = ssh.remote_command(argv, dict(env) if env else None)
    try:
        code, out, raw_err = _spawn_raw(ssh.ssh_argv(via, remote), stdin, None)
    except SlurmNotFoundError:
        raise ssh.SlurmSshError(
            f"ssh={via.spec} needs OpenSSH's ssh client on this host; install it"
            " (Debian/Ubuntu: apt install openssh-client)"
        ) from None
    err = raw_err.decode("utf-8", "replace")
    check_remote_result(via, argv[0], code, err)
    return code, out, err


def check_remote_result(via: SshTarget, program: str, code: int, err: str) -> None:
    """Raises for what went wrong around a command run over ssh (not the command's own
    failure): ssh's (exit 255) and a program the login node does not have (127)."""

    if code == 255:
        raise ssh.ssh_error(via, err)
    if code == 127 and "not found" in err:
        raise SlurmNotFoundError(program, via.host)


def _spawn(
    argv: list[str], stdin: bytes | None, env: Mapping[str, str] | None
) -> tuple[int, str, str]:
    code, out, err = _spawn_raw(argv, stdin, env)
    return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _spawn_raw(
    argv: list[str], stdin: bytes | None, env: Mapping[str, str] | None
) -> tuple[int, bytes, bytes]:

    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r = in_w = -1
    if stdin is not None:
        in_r, in_w = os.pipe()
    actions = [
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
        (os.POSIX_SPAWN_DUP2, in_r, 0)
        if stdin is not None
        else (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
    ]
    try:
        pid = os.posix_spawnp(
            argv[0], argv, os.environ if env is None else env, file_actions=actions
        )
    except FileNotFoundError:
        raise SlurmNotFoundError(argv[0]) from None
    finally:
        os.close(out_w)
        os.close(err_w)
        if in_r >= 0:
            os.close(in_r)
    if in_w >= 0:
        try:
            write_all(in_w, stdin or b"")
        except BrokenPipeError:
            # the command exited without reading its input (sbatch refusing a broken
            # configuration does): its exit status and stderr below say why. Letting the
            # error through would read as "stdout's reader went away" to the CLI.
            pass
        finally:
            os.close(in_w)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    poller = select.poll()
    for fd in chunks:
        poller.register(fd, select.POLLIN)
    open_fds = 2
    while open_fds:
        for fd, _event in poller.poll():
            data = os.read(fd, 1 << 16)
            if data:
                chunks[fd].append(data)
            else:
                poller.unregister(fd)
                open_fds -= 1
    os.close(out_r)
    os.close(err_r)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])


_VERSION: dict[SshTarget | None, tuple[int, int]] = {}


def version(via: SshTarget | None = None) -> tuple[int, int]:
    """(major, minor) of the Slurm on this host, or on login node ``via`` (``sinfo
    --version``), asked once per process.

    Without a usable ``sinfo`` (e.g. a dry run off-cluster) assumes 24.05 and warns.
    """
    if via in _VERSION:
        return _VERSION[via]
    found = (24, 5)
    try:
        code, out, _ = run_once(["sinfo", "--version"], via=via)
        words = out.split()
        if code == 0 and len(words) >= 2:
            major, minor = words[1].split(".")[:2]
            found = (int(major), int(minor))
        else:
            raise ValueError(out)
    except (SlurmCommandError, ValueError, OSError):
        warnings.warn(
            "could not read the Slurm version with `sinfo --version`; assuming 24.05",
            RuntimeWarning,
            stacklevel=2,
        )
    _VERSION[via] = found
    return found


def partition_memory(via: SshTarget | None = None) -> dict[str, int]:
    """``{partition: RealMemory MB}`` from ``sinfo`` (``"*"`` maps the default partition)."""
    try:
        code, out, _ = run_once(
            ["sinfo", "--format", "%P,%m", "--noconvert", "--noheader"], via=via
        )
    except SlurmCommandError:
        return {}
    if code != 0:
        return {}
    memory: dict[str, int] = {}
    for line in out.splitlines():
        name, _, mem = line.strip().partition(",")
        digits = mem.rstrip("+M")
        if not name or not digits.isdigit():
            continue
        if name.endswith("*"):
            name = name[:-1]
            memory.setdefault("*", int(digits))
        memory[name] = min(memory.get(name, int(digits)), int(digits))
    return memory


def first_error_line(stderr: str) -> str:
    """The most telling line of a Slurm error (``sbatch: error: ...`` lines first)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    fatal = [line for line in lines if ": fatal: " in line]
    errors = [line for line in lines if "error" in line.lower()]
    line = (fatal or errors or lines or ["(no message)"])[-1]
    for program in ("sbatch", "squeue", "sacct", "scancel", "scontrol", "sinfo"):
        for kind in ("error", "fatal"):
            prefix = f"{program}: {kind}: "
            if line.startswith(prefix):
                return line[len(prefix) :]
    return line
