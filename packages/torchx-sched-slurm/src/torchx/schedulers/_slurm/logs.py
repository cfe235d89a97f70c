"""The end of a job's log files, here or on the login node (``ssh``): what the root cause,
a requeue's reason and ``torchx.progress`` are read from. One read of at most 64 KiB a
file, whatever its length."""

from __future__ import annotations

import os

from torchx.schedulers._slurm import commands
from torchx.schedulers._slurm.request import safe_name
from torchx.specs.failure import LOG_TAIL_BYTES, read_log_tail

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.ssh import SshTarget

__all__ = ["file_tail", "replica_log_tail"]


def file_tail(path: str, via: SshTarget | None) -> str:
    """The last 64 KiB of ``path`` (from a line start), ``""`` when it cannot be read; over
    ``ssh``, ``tail -c`` on the login node through the shared connection."""
    if via is None:
        return read_log_tail(path)
    try:
        code, out, _ = commands.run_once(["tail", "-c", str(LOG_TAIL_BYTES), "--", path], via=via)
    except commands.SlurmCommandError:
        return ""
    if code != 0:
        return ""
    lines = out.split("\n", 1)
    return lines[1] if len(out.encode()) >= LOG_TAIL_BYTES and len(lines) > 1 else out


def replica_log_tail(
    job_id: str, log_dir: str, role: str, replica_id: int, via: SshTarget | None
) -> str:
    """The end of a replica's log, both streams: the end of its stdout, then the end of
    its stderr (where a traceback and ``torchx.progress`` reports go, so they stay last;
    Slurm keeps no time per line to interleave them by); ``""`` when neither has
    anything."""

    base = os.path.join(log_dir or ".", f"slurm-{job_id}-{safe_name(role)}-{replica_id}")
    parts = [file_tail(f"{base}.{suffix}", via) for suffix in ("out", "err")]
    kept = [part if part.endswith("\n") else part + "\n" for part in parts if part.strip()]
    return "".join(kept)
