"""Reading what Slurm's commands print, from Slurm 22.05 through 25.x, into one shape.

Slurm's JSON changed with nearly every release: ``job_state`` is a string (22.05) or a
list with flags (23.02+), numbers become ``{"set", "infinite", "number"}`` objects,
``exit_code`` is a raw wait status (22.05) or an object, pending jobs may have
``job_resources: null`` (24.11.5+) and the allocation moved to ``nodes.allocation``
(24.11). Text output has its own quirks (``CANCELLED by 0``, truncated ``CANCELLED+``).
Every reader here turns one of those into :class:`SlurmJob` rows and never raises on an
unexpected shape: a field it cannot read is left empty and an unknown state is kept as
text (mapped to ``UNKNOWN`` by the scheduler).

Pure functions over text: no process is started here, so every format is unit-tested
against recorded outputs (``tests/fixtures``).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from torchx.util.strings import escape_unprintable

__all__ = [
    "SlurmJob",
    "base_state",
    "parse_sacct_json",
    "parse_sacct_text",
    "parse_scontrol_text",
    "parse_squeue_json",
    "parse_squeue_text",
    "parse_time_limit",
    "split_job_name",
]

# Base job states; anything else in a state list is a flag (COMPLETING, REQUEUED, ...).
BASE_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PENDING",
        "PREEMPTED",
        "RUNNING",
        "SUSPENDED",
        "TIMEOUT",
    }
)


class SlurmJob:
    """One job or het component as any Slurm command reported it.

    ``job_id`` is the component's own id; ``het_leader`` the id of its het job (its own id
    when it is not part of one) and ``het_offset`` its index there. ``state`` is the base
    state in upper case (``""`` if unknown); ``reason`` the pending/failure reason
    (``""`` for Slurm's ``None``); ``exit_code`` the program's exit status or ``None``;
    ``signal`` the signal that ended it (0 if none).
    """

    __slots__ = (
        "_name",
        "command",
        "cpus",
        "eligible",
        "end",
        "exit_code",
        "het_leader",
        "het_offset",
        "hosts",
        "job_id",
        "mem_mb",
        "reason",
        "restarts",
        "signal",
        "start",
        "state",
        "submit",
        "workdir",
    )

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        self.het_leader = job_id
        self.het_offset = 0
        self.name = ""
        self.state = ""
        self.reason = ""
        self.exit_code: int | None = None
        self.signal = 0
        self.restarts = 0
        self.hosts: list[str] = []
        self.cpus: int | None = None
        self.mem_mb: int | None = None
        self.workdir = ""
        self.command = ""
        self.submit: float | None = None
        self.eligible: float | None = None
        self.start: float | None = None
        self.end: float | None = None

    @property
    def name(self) -> str:
        """The job name, with escape codes and line breaks written as escapes: any user of
        the cluster chooses job names, and they are printed to a terminal."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value if value.isprintable() else escape_unprintable(value)

    def __repr__(self) -> str:
        return (
            f"SlurmJob({self.job_id}, het={self.het_leader}+{self.het_offset},"
            f" name={self.name!r}, state={self.state}, reason={self.reason!r},"
            f" exit={self.exit_code}, hosts={self.hosts})"
        )


# ---------------------------------------------------------------------------------------
# field readers tolerant of every version's shape
# ---------------------------------------------------------------------------------------


def _number(value: Any) -> int | None:
    """An integer from ``3``, ``"3"`` or ``{"set": true, "number": 3}``; else ``None``."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        return int(text) if text.isdigit() else None
    if isinstance(value, Mapping):
        if value.get("infinite") or value.get("set") is False:
            return None
        return _number(value.get("number"))
    return None


def base_state(value: Any) -> str:
    """The base state of a Slurm state field, upper case; ``""`` when there is none.

    Accepts a string (``"RUNNING"``, ``"CANCELLED by 0"``, truncated ``"CANCELLED+"``), a
    list of a state and its flags (``["PENDING", "REQUEUED"]``) or sacct's
    ``{"current": ...}`` object. A list whose entries are all flags yields its first
    entry, which the scheduler maps to UNKNOWN.
    """
    if isinstance(value, Mapping):
        return base_state(value.get("current"))
    if isinstance(value, str):
        words = value.split()
        return words[0].rstrip("+").upper() if words else ""
    if isinstance(value, (list, tuple)):
        states = [base_state(v) for v in value if isinstance(v, str)]
        states = [s for s in states if s]
        for state in states:
            if state in BASE_STATES:
                return state
        return states[0] if states else ""
    return ""


def _reason(value: Any) -> str:
    text = value.strip() if isinstance(value, str) else ""
    return "" if text in ("None", "(null)") else text


def _exit_status(value: Any) -> tuple[int | None, int]:
    """(exit code, signal) from a raw wait status, ``"3:0"`` or a 23.02+ exit object."""
    if isinstance(value, bool):
        return None, 0
    if isinstance(value, int):  # 22.05: the raw wait status (768 for `exit 3`)
        return (value >> 8) & 0xFF, value & 0x7F
    if isinstance(value, str):
        code_text, _, sig_text = value.partition(":")
        return _number(code_text), _number(sig_text) or 0
    if isinstance(value, Mapping):
        if "number" in value or "set" in value:
            raw = _number(value)
            return (None, 0) if raw is None else ((raw >> 8) & 0xFF, raw & 0x7F)
        signal = value.get("signal")
        sig = 0
        if isinstance(signal, Mapping):
            sig = _number(signal.get("id")) or _number(signal.get("signal_id")) or 0
        elif signal is not None:
            sig = _number(signal) or 0
        return _number(value.get("return_code")), sig
    return None, 0


def _host_list(value: Any) -> list[str]:
    """Host names from ``"n1"``, ``"n1,n2"``, ``["n1"]`` or ``{"list": ...}``."""
    if isinstance(value, str):
        text = value.strip()
        if not text or text in ("(null)", "None assigned"):
            return []
        return [text] if "[" in text else [h for h in text.split(",") if h]
    if isinstance(value, (list, tuple)):
        return [h for v in value for h in _host_list(v)]
    if isinstance(value, Mapping):
        return _host_list(value.get("list") or value.get("range") or value.get("nodes"))
    return []


def _allocation(job: Mapping[str, Any], row: SlurmJob) -> None:
    """Hosts, CPUs and memory of a job from ``job_resources`` (each version's shape)."""
    resources = job.get("job_resources")
    if isinstance(resources, Mapping):
        nodes = resources.get("nodes")
        if isinstance(nodes, Mapping):  # 24.11+: nodes.{list, allocation[]}
            allocation = nodes.get("allocation")
            if isinstance(allocation, list) and allocation:
                row.hosts = [str(a.get("name")) for a in allocation if isinstance(a, Mapping)]
                cpus = [_number((a.get("cpus") or {}).get("used")) for a in allocation]
                mem = [_number((a.get("memory") or {}).get("allocated")) for a in allocation]
                if cpus and cpus[0] is not None:
                    row.cpus = cpus[0]
                if mem and mem[0] is not None:
                    row.mem_mb = mem[0] // 1024  # KiB
            else:
                row.hosts = _host_list(nodes)
        else:
            allocated = resources.get("allocated_nodes")
            if isinstance(allocated, Mapping):  # some 22.05 builds: {"0": {...}}
                allocated = list(allocated.values())
            if isinstance(allocated, list) and allocated:
                first = allocated[0] if isinstance(allocated[0], Mapping) else {}
                row.hosts = [
                    str(a.get("nodename")) for a in allocated if isinstance(a, Mapping)
                ] or _host_list(nodes)
                row.cpus = _number(first.get("cpus_used") or first.get("cpus"))
                row.mem_mb = _number(first.get("memory_allocated") or first.get("memory"))
            else:
                row.hosts = _host_list(nodes)
        if not row.hosts:
            row.hosts = _host_list(resources.get("scheduled_nodes"))
    if not row.hosts:
        # pending jobs (job_resources null or empty): top-level nodes / scheduled_nodes
        row.hosts = _host_list(job.get("nodes")) or _host_list(job.get("scheduled_nodes"))


def _job_from_json(job: Mapping[str, Any]) -> SlurmJob | None:
    job_id = _number(job.get("job_id"))
    if job_id is None:
        return None
    row = SlurmJob(str(job_id))
    het = job.get("het")
    if isinstance(het, Mapping):  # sacct --json
        leader, offset = _number(het.get("job_id")), _number(het.get("job_offset"))
    else:  # squeue --json
        leader, offset = _number(job.get("het_job_id")), _number(job.get("het_job_offset"))
    if leader:  # 0 / unset: not a het job
        row.het_leader = str(leader)
        row.het_offset = offset or 0
    row.name = str(job.get("name") or "")
    row.state = base_state(job.get("job_state", job.get("state")))
    state_obj = job.get("state")
    reason = job.get("state_reason")
    if reason is None and isinstance(state_obj, Mapping):
        reason = state_obj.get("reason")
    row.reason = _reason(reason)
    row.exit_code, row.signal = _exit_status(job.get("exit_code"))
    row.restarts = _number(job.get("restart_cnt")) or 0
    _allocation(job, row)
    row.workdir = str(job.get("current_working_directory") or job.get("working_directory") or "")
    row.command = str(job.get("command") or "")
    return row


def _json_jobs(text: str) -> list[Mapping[str, Any]]:
    try:
        doc = json.loads(text)
    except ValueError:
        return []
    jobs = doc.get("jobs") if isinstance(doc, Mapping) else None
    return [j for j in jobs if isinstance(j, Mapping)] if isinstance(jobs, list) else []


def parse_squeue_json(text: str, leader: str | None = None) -> list[SlurmJob]:
    """Rows of ``squeue --json`` (any version); only het job ``leader``'s when given.

    Slurm 22.05 ignores ``-j`` with ``--json`` and lists every job it holds, so the
    caller's job is picked out here.
    """
    rows = []
    for job in _json_jobs(text):
        if leader is not None and _json_leader(job) != leader:
            continue  # cheap test first: 22.05 returns every job in the cluster
        row = _job_from_json(job)
        if row is not None:
            rows.append(row)
    return rows


def _json_leader(job: Mapping[str, Any]) -> str:
    het = job.get("het")
    leader = _number(het.get("job_id") if isinstance(het, Mapping) else job.get("het_job_id"))
    return str(leader or _number(job.get("job_id")))


def parse_sacct_json(text: str, leader: str | None = None) -> list[SlurmJob]:
    """Rows of ``sacct --json`` (any version): one per job or het component."""
    return parse_squeue_json(text, leader)


def _split_sacct_id(job_id: str) -> tuple[str, int, bool] | None:
    """(het leader, offset, is a step) of a sacct JobID such as ``12+1.batch``; an array's
    task (``12_3``) is under its array (``12``)."""
    base, dot, _step = job_id.partition(".")
    leader, plus, offset = base.partition("+")
    leader = leader.partition("_")[0]
    if not leader:
        return None
    off = _number(offset) if plus else 0
    return leader, off or 0, bool(dot)


def parse_sacct_text(text: str, leader: str | None = None) -> list[SlurmJob]:
    """Rows of ``sacct --parsable2`` (a ``|``-separated table with its header line).

    Steps (``12.batch``, ``12+0.0``) are left out; the columns are found by name, so any
    ``--format`` with at least ``JobID`` works (``JobName``, ``State``, ``ExitCode``,
    ``NodeList``, ``Reason``, ``WorkDir`` are read when present).
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].split("|")
    if "JobID" not in header:
        return []
    rows = []
    for line in lines[1:]:
        values = dict(zip(header, line.split("|"), strict=False))
        split = _split_sacct_id(values.get("JobID", ""))
        if split is None or split[2]:
            continue
        het_leader, offset, _ = split
        if leader is not None and het_leader != leader:
            continue
        row = SlurmJob(values["JobID"])
        row.het_leader, row.het_offset = het_leader, offset
        row.name = values.get("JobName", "")
        row.state = base_state(values.get("State", ""))
        row.reason = _reason(values.get("Reason"))
        row.exit_code, row.signal = _exit_status(values.get("ExitCode", ""))
        row.hosts = _host_list(values.get("NodeList", ""))
        row.workdir = values.get("WorkDir", "")
        _times(
            row,
            values.get("Submit"),
            values.get("Eligible"),
            values.get("Start"),
            values.get("End"),
        )
        rows.append(row)
    return rows


def _scontrol_fields(line: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol show job -o`` line (values may hold spaces)."""
    fields: dict[str, str] = {}
    key = None
    for token in line.split(" "):
        name, eq, value = token.partition("=")
        if eq and name and (name[0].isupper() or name[0].isdigit()) and " " not in name:
            key = name
            fields[key] = value
        elif key is not None and token:
            fields[key] += " " + token
    return fields


def parse_scontrol_text(text: str, leader: str | None = None) -> list[SlurmJob]:
    """Rows of ``scontrol show job -o`` (one line per job or het component)."""
    rows = []
    for line in text.splitlines():
        fields = _scontrol_fields(line.strip())
        job_id = fields.get("JobId")
        if not job_id:
            continue
        row = SlurmJob(job_id)
        het = fields.get("HetJobId")
        if het:
            row.het_leader = het
            row.het_offset = _number(fields.get("HetJobOffset")) or 0
        if leader is not None and row.het_leader != leader:
            continue
        row.name = fields.get("JobName", "")
        row.state = base_state(fields.get("JobState", ""))
        row.reason = _reason(fields.get("Reason"))
        row.exit_code, row.signal = _exit_status(fields.get("ExitCode", ""))
        row.restarts = _number(fields.get("Restarts")) or 0
        row.hosts = _host_list(fields.get("NodeList", ""))
        row.workdir = fields.get("WorkDir", "")
        row.command = fields.get("Command", "")
        rows.append(row)
    return rows


SQUEUE_FIELDS = (
    "JobID",
    "HetJobID",
    "HetJobOffset",
    "State",
    "Reason",
    "NodeList",
    "RestartCnt",
    "exit_code",
    "NumCPUs",
    "MinMemory",
    "Command",
    "WorkDir",
    "SubmitTime",
    "EligibleTime",
    "StartTime",
    "EndTime",
    "Name",
)
SQUEUE_FORMAT = ",".join(f"{name}:|" for name in SQUEUE_FIELDS)
"""``squeue -O`` format read by :func:`parse_squeue_text` (``|`` after each field; the
name, which may hold anything, comes last)."""


_UNITS_MB = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def _memory_mb(value: str) -> int | None:
    """MB of a Slurm memory size such as ``256M``, ``4G`` or ``1000`` (MB)."""
    text = value.strip().upper()
    factor = _UNITS_MB.get(text[-1:])
    digits = text[:-1] if factor is not None else text
    try:
        number = float(digits)
    except ValueError:
        return None
    return int(number * (factor or 1)) or None


def parse_squeue_text(text: str, leader: str | None = None) -> list[SlurmJob]:
    """Rows of ``squeue -h -t all -O SQUEUE_FORMAT`` (the same in every Slurm release).

    Unlike ``--json`` on 22.05, it honours ``-j``, so it is small and fast.
    """
    rows = []
    for line in text.splitlines():
        parts = line.split("|", len(SQUEUE_FIELDS) - 1)
        if len(parts) < len(SQUEUE_FIELDS) or not parts[0].strip().isdigit():
            continue
        job_id, het, offset, state, reason, nodes, restarts, exit_code = parts[:8]
        cpus, memory, command, workdir, submit, eligible, start, end, name = parts[8:]
        row = SlurmJob(job_id.strip())
        if het.strip().isdigit() and het.strip() != "0":
            row.het_leader = het.strip()
            row.het_offset = _number(offset) or 0
        if leader is not None and row.het_leader != leader:
            continue
        row.state = base_state(state)
        row.reason = _reason(reason)
        row.hosts = _host_list(nodes)
        row.restarts = _number(restarts) or 0
        raw = _number(exit_code)
        if raw is not None:  # the raw wait status, as in 22.05's JSON
            row.exit_code, row.signal = _exit_status(raw)
        row.cpus = _number(cpus)
        row.mem_mb = _memory_mb(memory)
        row.command = "" if command.strip() == "(null)" else command.strip()
        row.workdir = workdir.strip()
        _times(row, submit, eligible, start, end)
        row.name = name.rstrip("|").strip()
        rows.append(row)
    return rows


def slurm_time(value: Any) -> float | None:
    """Unix seconds of a Slurm time (``2026-11-29T04:25:43``, the cluster's local time;
    ``Unknown``, ``N/A`` and ``None`` are None)."""

    text = value.strip() if isinstance(value, str) else ""
    if not _SUBMIT_TIME_SHAPE.match(text):
        return None
    # the fields by position: strptime cost a listing of 2,000 jobs tens of ms
    fields = (text[0:4], text[5:7], text[8:10], text[11:13], text[14:16], text[17:19])
    year, month, day, hour, minute, second = (int(f) for f in fields)
    return time.mktime((year, month, day, hour, minute, second, 0, 0, -1))


def _times(row: SlurmJob, submit: Any, eligible: Any, start: Any, end: Any) -> None:
    """The row's Submit, Eligible, Start and End times; a job that has not started has an
    estimated Start and End (or none): those are left out."""
    row.submit, row.eligible = slurm_time(submit), slurm_time(eligible)
    if row.state not in ("PENDING", ""):
        row.start, row.end = slurm_time(start), slurm_time(end)
        if row.state in ("RUNNING", "CONFIGURING", "SUSPENDED", "COMPLETING"):
            row.end = None  # the limit it would reach, not its end


_SUBMIT_TIME = "%Y-%m-%dT%H:%M:%S"
_SUBMIT_TIME_SHAPE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")
"""A submit time squeue printed (else ``Unknown`` or ``N/A``: such jobs are kept)."""

SQUEUE_LIST_FIELDS = (
    "JobID",
    "HetJobID",
    "HetJobOffset",
    "State",
    "SubmitTime",
    "Reason",
    "ArrayJobID",
    "Name",
)
SQUEUE_LIST_FORMAT = ",".join(f"{name}:|" for name in SQUEUE_LIST_FIELDS)
"""``squeue -O`` format of ``list``: only what a listing shows (the name last)."""


def parse_squeue_list(text: str, since: float | None = None) -> list[SlurmJob]:
    """Rows of ``squeue -h -t all -O SQUEUE_LIST_FORMAT``: id, heterogeneous leader and
    offset, state and name, nothing a listing does not print; with ``since`` (epoch
    seconds), only jobs submitted since then."""

    # SubmitTime is local time, YYYY-MM-DDTHH:MM:SS: compared as text with the cutoff
    # written the same way (parsing 2,000 times with strptime cost ours 70 ms)
    cutoff = None
    if since is not None:
        cutoff = time.strftime(_SUBMIT_TIME, time.localtime(math.ceil(since)))
    rows = []
    for line in text.splitlines():
        parts = line.split("|", len(SQUEUE_LIST_FIELDS) - 1)
        if len(parts) < len(SQUEUE_LIST_FIELDS) or not parts[0].strip().isdigit():
            continue
        job_id, het, offset, state, submitted, reason, array_id, name = parts
        if cutoff is not None:
            when = submitted.strip()
            if _SUBMIT_TIME_SHAPE.match(when) and when < cutoff:
                continue
        row = SlurmJob(job_id.strip())
        if het.strip().isdigit() and het.strip() != "0":
            row.het_leader = het.strip()
            row.het_offset = _number(offset) or 0
        elif array_id.strip().isdigit():  # an array's task: listed with its array
            row.het_leader = array_id.strip()
        row.state = base_state(state)
        row.reason = _reason(reason)
        row.name = name.rstrip("|").strip()
        row.submit = slurm_time(submitted)
        rows.append(row)
    return rows


def split_job_name(name: str) -> tuple[str, str, int] | None:
    """(app, role, replica) of a TorchX job name ``app:role-3`` (or upstream's ``role-3``).

    ``None`` for names TorchX did not make (a job submitted by hand).
    """
    prefix, dash, replica = name.rpartition("-")
    if not dash or not prefix or not replica.isdigit():
        return None
    app, colon, role = prefix.partition(":")
    if not colon:
        app, role = "", prefix
    return (app, role, int(replica)) if role else None


def parse_time_limit(value: str) -> int | None:
    """Minutes of a Slurm time limit (``30``, ``1:30``, ``2:00:00``, ``1-12``, ...).

    ``None`` when ``value`` is not one of the formats ``sbatch --time`` accepts; ``-1`` for
    ``INFINITE``/``UNLIMITED``.
    """
    text = value.strip()
    if text.upper() in ("INFINITE", "UNLIMITED"):
        return -1
    days = 0
    rest = text
    if "-" in text:
        day_part, _, rest = text.partition("-")
        if not day_part.isdigit() or not rest:
            return None
        days = int(day_part)
    parts = rest.split(":")
    if not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 3:
        return None
    numbers = [int(p) for p in parts]
    if "-" in text:  # days-hours[:minutes[:seconds]]
        hours, minutes, seconds = (*numbers, 0, 0)[:3]
    elif len(numbers) == 1:  # minutes
        hours, minutes, seconds = 0, numbers[0], 0
    elif len(numbers) == 2:  # minutes:seconds
        hours, minutes, seconds = 0, numbers[0], numbers[1]
    else:  # hours:minutes:seconds
        hours, minutes, seconds = numbers
    return days * 24 * 60 + hours * 60 + minutes + (1 if seconds else 0)


def leaders(rows: Iterable[SlurmJob]) -> dict[str, list[SlurmJob]]:
    """Rows grouped by het job (leader id), components in offset order."""
    groups: dict[str, list[SlurmJob]] = {}
    for row in rows:
        groups.setdefault(row.het_leader, []).append(row)
    for group in groups.values():
        group.sort(key=lambda r: r.het_offset)
    return groups
