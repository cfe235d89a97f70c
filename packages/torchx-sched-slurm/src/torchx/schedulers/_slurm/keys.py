"""Idempotency keys on Slurm: the key's id rides in the job's comment (``sbatch
--comment`` on the command line), which ``squeue`` shows while the job is known to the
controller and accounting keeps in the job's SubmitLine (and its Comment, where the
cluster stores comments) for as long as ``sacct`` reaches back: ``list_days``.

Slurm has no object of a unique name to create, so two submissions with one key are
serialized by the runner's lock on the submitting host only (documented).
"""

from __future__ import annotations

from torchx.schedulers._slurm import commands
from torchx.schedulers.ids import key_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.ssh import SshTarget

__all__ = ["comment_with_key", "find_job"]

_MARK = "torchx-key:"


def _mark(key: str) -> str:
    return f"{_MARK}{key_id(key)}"


def comment_with_key(comment: str | None, key: str) -> str:
    """The job's comment: the user's (the ``comment`` run option), then the key's mark."""
    return f"{comment} {_mark(key)}" if comment else _mark(key)


def find_job(key: str, since: str, user: str, via: SshTarget | None) -> str | None:
    """The id of the job (its het leader) whose comment carries ``key``'s mark: in the
    queue, else in accounting since ``since`` (``YYYY-MM-DDTHH:MM:SS``)."""
    mark = _mark(key)
    code, out, _ = commands.run_through_outages(
        ["squeue", "-h", "--me", "-t", "all", "-o", "%i|%k"], via=via
    )
    if code == 0:
        for line in out.splitlines():
            job, _, comment = line.partition("|")
            if mark in comment.split():
                return job.partition("+")[0].strip()
    code, out, _ = commands.run_through_outages(
        [
            "sacct",
            "--parsable2",
            "--noheader",
            "--allocations",
            "--format=JobID,Comment,SubmitLine",
            f"--starttime={since}",
            f"--user={user}",
        ],
        via=via,
    )
    if code == 0:
        for line in out.splitlines():
            job, _, rest = line.partition("|")
            if mark in rest.replace("=", " ").replace("|", " ").split():
                return job.partition("+")[0].strip()
    return None
