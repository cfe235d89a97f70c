"""Per-job records under ``$TORCHX_HOME/slurm``: a job's roles and where its logs are.

``torchx status``/``log``/``describe`` read a job's record from any directory and any
process. Status reads it on every call, so the format needs no import to parse (no
``json``): a header line, one ``key<TAB>value`` line per field and one
``role<TAB>name<TAB>replicas`` line per role, every value ``unicode_escape``-d so tabs,
newlines, non-ASCII names and undecodable path bytes all survive.
"""

from __future__ import annotations

import os

from torchx.util.startup.lazy_dataclass import dataclass, field
from torchx.util.support.atomic import write_private
from torchx.util.support.home import torchx_home

__all__ = ["JobRecord", "read_record", "record_path", "write_record"]

_DIR = "slurm"
_HEADER = "torchx-slurm-record 1"
_FIELDS = (
    "job_id",
    "session",
    "app_name",
    "log_dir",
    "job_dir",
    "array",
    "request_hash",
    "request",
)


@dataclass
class JobRecord:
    """What TorchX knows of a job it submitted and Slurm does not keep for it."""

    job_id: str
    session: str = ""
    app_name: str = ""
    log_dir: str = ""
    """The directory of the replicas' ``slurm-<id>-<role>-<k>.{out,err}`` files."""
    job_dir: str | None = None
    roles: list[tuple[str, int]] = field(default_factory=list)
    """``(role name, replicas)`` in submission order: het component i's role."""
    array: str = ""
    """A sweep's elements (``_slurm.status.SlurmArray.to_record``), "" for any other job."""
    request_hash: str = ""
    request: str = ""
    """What a job of an idempotency key was made from (``torchx.runner._idempotency``):
    Slurm keeps no env of a job to read it back from."""


def record_path(job_id: str) -> str:
    return os.path.join(torchx_home(), _DIR, f"{job_id}.record")


def _escape(value: str) -> str:
    return value.encode("unicode_escape").decode("ascii")


def _unescape(value: str) -> str:
    return value.encode("ascii", "backslashreplace").decode("unicode_escape")


def write_record(record: JobRecord) -> None:
    """Writes the record atomically, readable by this user only; raises OSError."""

    lines = [_HEADER]
    for key in _FIELDS:
        value = getattr(record, key)
        if value is not None and (value or key not in ("array", "request_hash", "request")):
            lines.append(f"{key}\t{_escape(value)}")
    lines += [f"role\t{_escape(name)}\t{count}" for name, count in record.roles]
    write_private(record_path(record.job_id), ("\n".join(lines) + "\n").encode("ascii"))


def read_record(job_id: str) -> JobRecord | None:
    """The job's record; ``None`` if there is none or it cannot be read."""
    try:
        with open(record_path(job_id), encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    lines = text.splitlines()
    if not lines or lines[0] != _HEADER:
        return None
    record = JobRecord(job_id)
    try:
        for line in lines[1:]:
            key, _, rest = line.partition("\t")
            if key == "role":
                name, _, count = rest.partition("\t")
                record.roles.append((_unescape(name), int(count)))
            elif key in _FIELDS:
                setattr(record, key, _unescape(rest))
    except (ValueError, UnicodeError):
        return None
    return record
