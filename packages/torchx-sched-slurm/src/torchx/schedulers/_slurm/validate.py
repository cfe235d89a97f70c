"""Checks made on the submit host before anything is queued.

A wrong script path or a malformed time limit is otherwise found only when the job
starts, possibly hours later (upstream #405).
"""

from __future__ import annotations

import os
import signal

from torchx.schedulers._slurm.parse import parse_time_limit
from torchx.specs.api import Role
from torchx.util.log import get_logger
from torchx.util.support.host_checks import host_problem
from torchx.util.support.programs import find_program, script_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.ssh import SshTarget

__all__ = [
    "check_comment",
    "check_job_dir",
    "check_log_dir",
    "check_option",
    "check_role_files",
    "check_signal",
    "check_time",
]


def check_role_files(
    role: Role, workdir: str, strict_entrypoint: bool = False, in_container: bool = False
) -> None:
    """Reports a missing entrypoint or script now rather than when the job starts.

    A missing script (which the job dir or the submit directory must hold) refuses a real
    submission. A missing entrypoint only warns unless ``strict_entrypoint``: compute nodes
    often have programs the submit host lacks (modules, node-local installs). In a dry run
    either is one warning line. ``in_container``: the entrypoint is the image's, not
    looked for here; the script still is (the job's directory is mounted).
    """

    entrypoint = role.entrypoint
    path = role.env.get("PATH", os.environ.get("PATH", ""))
    absent = not in_container and "$" not in entrypoint
    if absent and find_program(entrypoint, path, workdir) is None:
        where = (
            f"not an executable file on this host (looked in {workdir})"
            if "/" in entrypoint
            else "not on this host's PATH"
        )
        problem = f"entrypoint {entrypoint!r} of role {role.name!r} is {where}"
        if strict_entrypoint:
            fix = "install it, activate its environment or give its full path"
            host_problem(FileNotFoundError(f"{problem}; {fix}"))
        else:
            get_logger("torchx").warning(
                "%s; the job is queued anyway, as compute nodes may have it (-cfg"
                " strict_entrypoint=True refuses such jobs)",
                problem,
            )
    script = script_of(entrypoint, role.args)
    checkable = script and "$" not in script and script.endswith(".py")
    if checkable and not os.path.exists(os.path.join(workdir, str(script))):
        host_problem(
            FileNotFoundError(
                f"script {script!r} of role {role.name!r} does not exist (looked in {workdir});"
                " fix --script before the job is queued"
            )
        )


def check_time(value: str | None) -> None:
    if value is not None and parse_time_limit(value) is None:
        raise ValueError(
            f"run option time={value!r} is not a Slurm time limit; use minutes, MM:SS,"
            " HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (e.g. time=1:30:00)"
        )


def check_option(key: str, value: str) -> str:
    if not value or any(c.isspace() or c in "\"'\\" for c in value):
        raise ValueError(
            f"run option {key}={value!r} is not a valid Slurm value: it must be non-empty"
            " without spaces or quotes"
        )
    return value


def check_comment(value: str) -> str:
    """A free-text option (``comment``) may hold blanks, not line breaks or control bytes."""
    if not value.isprintable():
        raise ValueError(
            f"run option comment={value!r} contains a line break or control character;"
            " give a comment on one line"
        )
    return value


def check_job_dir(job_dir: str) -> None:
    """A ``job_dir`` is a plain path: no control characters (a line break would change which
    directory a command prints back) and no blanks around it (easy to miss, and a login
    node's shell output loses them)."""
    if not job_dir or job_dir != job_dir.strip() or not job_dir.isprintable():
        raise ValueError(
            f"run option job_dir={job_dir!r} has blanks around it or a control character"
            " (a line break, a tab); give a plain path"
        )


def check_log_dir(log_dir: str) -> None:
    """The job's log directory must be writable into an ``#SBATCH --output`` line as is.

    Blanks and quotes are fine (the line quotes them); a line break cannot be written
    there, and a backslash makes Slurm stop expanding ``%j`` in the log file names.
    """
    bad = next((c for c in log_dir if c in "\n\r\0\\"), None)
    if bad is not None:
        raise ValueError(
            f"the job's log directory {log_dir!r} (job_dir, or the current directory without"
            f" one) contains {bad!r}, which Slurm cannot take in an output path; set job_dir"
            " (or run from) a directory without it"
        )


_SIGNAL_HELP = (
    "give SIG[@SECONDS] as sbatch takes it: a signal name or number and how many seconds"
    " before the time limit to send it (default 60), e.g. signal=USR1@120"
)


def check_signal(value: str) -> int:
    """The lead time in seconds of a ``signal`` run option (sbatch's
    ``[R:]SIG[@SECONDS]``), refusing what sbatch would refuse only at submission and
    ``B:``, which would warn the batch shell TorchX writes instead of the replicas."""

    spec = value
    if spec.startswith("B:") or spec.startswith("RB:") or spec.startswith("BR:"):
        raise ValueError(
            f"run option signal={value!r} would reach only the batch shell TorchX writes,"
            " not the replicas; drop the 'B:' so each replica's processes get it"
        )
    if spec.startswith("R:"):
        spec = spec[2:]
    name, _, lead = spec.partition("@")
    name = name.upper()
    numbered = name.isascii() and name.isdigit() and 0 < int(name) < signal.NSIG
    named = name in signal.Signals.__members__ or f"SIG{name}" in signal.Signals.__members__
    known = numbered or named
    lead_ok = lead == "" or (lead.isascii() and lead.isdigit() and int(lead) <= 0xFFFF)
    if not known or not lead_ok:
        raise ValueError(
            f"run option signal={value!r} is not a Slurm warning signal; {_SIGNAL_HELP}"
        )
    return int(lead) if lead else 60


def check_remote(via: SshTarget, container: str, job_dir: str | None) -> None:
    """What a submission through a login node cannot do: containers made on this host
    (``oci``), and a pyxis mount of a job dir whose path is not known here."""
    if container == "oci":
        raise ValueError(
            f"container=oci unpacks the image on the submitting host, which the nodes behind"
            f" ssh={via.spec} cannot read; use -cfg container=pyxis, or submit on the login node"
        )
    if container == "pyxis" and (job_dir is None or not os.path.isabs(job_dir)):
        raise ValueError(
            "container=pyxis over ssh mounts the job's directory at its own path: give"
            " -cfg job_dir=ABSOLUTE_PATH on the cluster"
        )
