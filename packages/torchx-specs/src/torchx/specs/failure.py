"""Why an app failed: the root cause of a failed app, as every scheduler reports it.

A failed app says which replica broke first and why (``torchx status``, ``--json``'s
``"failure"``), instead of ``FAILED`` and an exit code to chase through every replica's
log. The evidence, best first: the torchelastic error file a ``@record``-ed entrypoint
writes (its exception, traceback and time); torchrun's "Root Cause (first observed
failure)" block (the failed rank); the last Python traceback in the replica's log tail;
the scheduler's own word (an OOM kill, a time limit, a preemption) and the exit code or
signal. A scheduler turns what it knows into :class:`Failure` objects, one per failed
replica, and :func:`root_cause` picks the first observed.
"""

from __future__ import annotations

import json
import keyword
import os

from torchx.progress import is_report_line
from torchx.specs.vocabulary import Cause, keeps_scheduler_word
from torchx.util.startup.lazy_dataclass import dataclass, field
from torchx.util.support.signals import signal_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "CAUSES",
    "LOG_TAIL_BYTES",
    "LOG_TAIL_LINES",
    "Failure",
    "cause_words",
    "from_error_file",
    "from_exit_status",
    "from_log_tail",
    "read_log_tail",
    "root_cause",
]

CAUSES = tuple(cause.value for cause in Cause)
"""What can have ended a replica (``Failure.cause``): :class:`torchx.specs.vocabulary.Cause`'s
values."""


def cause_words(cause: str, exit_code: int | None = None, signal: str | None = None) -> str:
    """A cause as ``torchx status`` says it: ``exited with code 3``, ``out of memory``."""
    try:
        template = Cause(cause).words
    except ValueError:  # a word outside the vocabulary (a third-party scheduler's): as it is
        template = cause
    words = template.format(exit_code=exit_code, signal=signal)
    if cause == "signal" and signal == "SIGKILL":
        words += " (often the out-of-memory killer)"  # the kernel's OOM killer sends it
    elif cause == "preempted" and signal:
        words += f" by {signal}"  # a stop from outside: which one it was
    return words


LOG_TAIL_BYTES = 64 << 10
"""At most this much of a failed replica's log is read: a 1 GiB log costs what a small one
does."""
LOG_TAIL_LINES = 20
"""The log lines a failure keeps (``Failure.log_tail``)."""


@dataclass
class Failure:
    """The failure of one replica (``torchx status --json``'s ``"failure"``).

    ``rank`` is the global rank of a torchrun/elastic worker that failed, when known;
    ``cause`` one of :data:`CAUSES`; ``signal`` a name such as ``SIGKILL``; ``message``
    one line (an exception's last line, the limit an OOM hit, the image and the
    registry's answer); ``log_tail`` the replica's last output lines; ``time`` when it
    failed (unix seconds), when known.
    """

    role: str
    replica_id: int
    cause: str = "unknown"
    rank: int | None = None
    exit_code: int | None = None
    signal: str | None = None
    message: str = ""
    traceback: str | None = None
    log_tail: list[str] = field(default_factory=list)
    time: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The object ``--json`` prints, with exactly its documented keys."""
        return {
            "role": self.role,
            "replica_id": self.replica_id,
            "rank": self.rank,
            "cause": self.cause,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "message": self.message,
            "traceback": self.traceback,
            "log_tail": list(self.log_tail[-LOG_TAIL_LINES:]),
            "time": self.time,
        }


def root_cause(failures: Iterable[Failure], role_order: Iterable[str]) -> Failure | None:
    """The first observed failure: the earliest by time (an unknown time counts last); a
    tie goes to a replica that failed on its own before one stopped because another
    failed (cause ``cancelled``), then to the lower role index, then the lower replica id.

    Args:
        failures: one per failed replica.
        role_order: the app's role names, in order.

    Returns:
        The root cause, or ``None`` when nothing failed.
    """
    index = {name: i for i, name in enumerate(role_order)}
    ordered = sorted(
        failures,
        key=lambda f: (
            f.time is None,
            f.time or 0.0,
            f.cause == "cancelled",
            index.get(f.role, len(index)),
            f.replica_id,
        ),
    )
    return ordered[0] if ordered else None


def from_exit_status(
    failure: Failure, exit_code: int | None, signal: int = 0, *, signal_exits: bool = False
) -> Failure:
    """``failure`` with how the process ended: killed by ``signal`` (a number; cause
    ``signal``), else exited with ``exit_code`` (cause ``exit_code``). ``signal_exits``: an exit
    code of 128 + N, as a shell or a container's init reports death by signal N, is that
    signal (a negative code, as :mod:`subprocess` reports it, always is)."""

    if not signal and exit_code is not None:
        if exit_code < 0:
            signal = -exit_code
        elif signal_exits and 128 < exit_code <= 128 + 64:
            signal = exit_code - 128
    if signal:
        failure.cause, failure.signal = "signal", signal_name(signal)
        failure.exit_code = exit_code if exit_code is not None and exit_code > 0 else None
        failure.message = f"killed by {failure.signal}"
    elif exit_code is not None:
        failure.cause, failure.exit_code = "exit_code", exit_code
        failure.message = f"exited with code {exit_code}"
    return failure


def read_log_tail(path: str, max_bytes: int = LOG_TAIL_BYTES) -> str:
    """The last ``max_bytes`` of the file at ``path`` (from a line start), ``""`` if none."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - max_bytes))
            data = f.read(max_bytes)
    except OSError:
        return ""
    if len(data) == max_bytes and b"\n" in data:  # cut mid-file: drop the partial line
        data = data.split(b"\n", 1)[1]
    return data.decode("utf-8", "replace")


_TRACEBACK = "Traceback (most recent call last):"
_ROOT_CAUSE = "Root Cause (first observed failure):"


def from_log_tail(failure: Failure, tail: str) -> Failure:
    """``failure`` with what the replica's log tail tells: the last lines, the last Python
    traceback and its exception line (cause ``exception``), and from torchrun's root cause
    block the failed rank. A cause the scheduler named (an OOM kill, a time limit: see
    :attr:`~torchx.specs.vocabulary.Cause.named_by_scheduler`) and its message stay."""
    kept = (failure.cause, failure.message) if keeps_scheduler_word(failure.cause) else None
    lines = [line for line in tail.splitlines() if not is_report_line(line)]
    root = _torchrun_root(lines)
    failure.log_tail = _without_launcher_summary(lines)[-LOG_TAIL_LINES:]
    if root is not None and failure.rank is None:
        failure.rank = root[0]
    # the evidence is the named rank's own: its traceback, not the last in a log that
    # several ranks share (a rank that failed after it, in a collective, writes later)
    block = _last_program_traceback(lines, root) if failure.traceback is None else None
    if block is not None:
        failure.traceback = "\n".join(block)
        if _exception_line(block[-1]):
            failure.message = block[-1].strip()
            failure.cause = Cause.EXCEPTION.value
    if kept is not None:  # the scheduler's word names the cause; the traceback is its echo
        failure.cause, failure.message = kept
    return failure


_LAUNCHER_ERROR = "ChildFailedError"
"""torchrun's own traceback after a worker failed: the worker's is the one to show."""


def _traceback_spans(lines: list[str]) -> list[tuple[str, list[str], int, int]]:
    """(the worker's prefix, its lines, first, past the last) of every traceback in
    ``lines``, in the order their headers come; lines a worker wrote under torchrun's
    ``--tee`` prefix (``[1]:``, ``[default0]:``) count as that worker's, prefix dropped.

    One pass over the lines (a tail full of traceback headers that never end must not
    cost a scan per header): each worker's lines are kept once, a traceback is a span of
    them, and an exception line ends every span of that worker still open."""
    seqs: dict[str, list[str]] = {}
    still_open: dict[str, list[int]] = {}
    spans: list[list[Any]] = []  # [prefix, worker's lines, first, past the last (None: open)]
    for raw in lines:
        prefix, line = _tee_prefix(raw)
        seq = seqs.setdefault(prefix, [])
        seq.append(line)
        waiting = still_open.setdefault(prefix, [])
        if waiting and _exception_line(line):
            for i in waiting:
                spans[i][3] = len(seq)
            waiting.clear()
        if line.strip() == _TRACEBACK:
            waiting.append(len(spans))
            spans.append([prefix, seq, len(seq) - 1, None])
    return [
        (prefix, seq, begin, len(seq) if end is None else end) for prefix, seq, begin, end in spans
    ]


def _program_tracebacks(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(the worker's prefix, its lines) of every traceback the program itself raised (not
    torchrun's own after a worker failed), in order."""
    return [
        (prefix, seq[begin:end])
        for prefix, seq, begin, end in _traceback_spans(lines)
        if _LAUNCHER_ERROR not in seq[end - 1]
    ]


def _own_traceback(
    program: list[tuple[str, list[str]]], root: tuple[int, int | None]
) -> list[str] | None:
    """The last of ``program``'s tracebacks that worker ``root`` (rank, local rank) wrote,
    told apart by its ``[rankN]:`` or ``[LOCAL_RANK]:`` prefix, or None."""
    rank, local_rank = root
    marks = [f"[rank{rank}]:"] + ([f"[{local_rank}]:"] if local_rank is not None else [])
    own = [block for prefix, block in program if any(m in prefix for m in marks)]
    return own[-1] if own else None


def _last_program_traceback(
    lines: list[str], root: tuple[int, int | None] | None = None
) -> list[str] | None:
    """The last traceback the program itself raised, or None; with torchrun's ``root``
    (rank, local rank), that worker's own when its lines are told apart."""
    program = _program_tracebacks(lines)
    own = _own_traceback(program, root) if root is not None else None
    if own is not None:
        return own
    return program[-1][1] if program else None


def _without_launcher_summary(lines: list[str]) -> list[str]:
    """``lines`` without torchrun's own traceback (``ChildFailedError``) and the failure
    summary block after it: the worker's lines say what failed, the block only repeats
    the rank."""
    end = max((i for i, line in enumerate(lines) if _ROOT_CAUSE in line), default=-1)
    if end < 0:
        return lines
    launcher = max((i for i in range(end) if _LAUNCHER_ERROR in lines[i]), default=-1)
    if launcher < 0:
        return lines
    start = launcher
    for i in range(launcher, -1, -1):  # back to torchrun's own traceback header
        if lines[i].strip() == _TRACEBACK and _tee_prefix(lines[i])[0] == "":
            start = i
            break
    for i in range(end + 1, min(len(lines), end + 12)):  # the block's closing rule
        if lines[i].strip().startswith("====="):
            end = i
            break
    return lines[:start] + lines[end + 1 :]


def _exception_line(line: str) -> bool:
    """Whether ``line`` ends a traceback: ``Name: message`` or ``Name`` (a dotted name),
    not indented. A log that lost its indentation (some log services strip it) still
    has its frames (``File "..."``) and source lines told apart from it."""
    if not line or line.startswith((" ", "\t")) or line.startswith('File "'):
        return False

    name = line.split(":", 1)[0].strip()
    parts = name.split(".")
    return bool(name) and all(p.isidentifier() and not keyword.iskeyword(p) for p in parts)


def _tee_prefix(line: str) -> tuple[str, str]:
    """(the prefixes a launcher put before the line, the line without them): torchrun's
    ``--tee`` ``[LOCAL_RANK]:`` and PyTorch's ``[rankN]: `` (one space after it), either
    or both."""
    prefix = ""
    while line.startswith("[") and "]:" in line[:32]:
        end = line.index("]:") + 2
        if line.startswith("[rank") and line[end : end + 1] == " ":
            end += 1
        prefix, line = prefix + line[:end], line[end:]
    return prefix, line


def without_tee_prefix(line: str) -> str:
    """``line`` without the prefixes torchrun and PyTorch put before a worker's lines."""
    return _tee_prefix(line)[1]


@dataclass
class _Failed:
    """One worker in torchrun's failure summary: its global and local rank, its exit code."""

    rank: int
    local_rank: int | None
    exit_code: int | None


def _torchrun_failures(lines: list[str]) -> list[_Failed]:
    """The workers torchrun's last failure summary names: its "Root Cause (first observed
    failure)" first, then the other failures in its order."""
    root_at = max((i for i, line in enumerate(lines) if _ROOT_CAUSE in line), default=-1)
    if root_at < 0:
        return []
    start = root_at
    for i in range(root_at - 1, max(-1, root_at - 2000), -1):  # back to its "Failures:"
        if lines[i].strip() == "Failures:":
            start = i
            break
    entries: list[tuple[bool, dict[str, str]]] = []  # (the root's?, its keys)
    for i in range(start + 1, min(len(lines), root_at + 12)):
        if i > root_at and lines[i].strip().startswith("====="):
            break
        key, _, value = lines[i].strip().partition(":")
        if key.strip() == "time":
            entries.append((i > root_at, {}))
        if entries:
            entries[-1][1].setdefault(key.strip(), value.strip())
    named = [(is_root, _failed(keys)) for is_root, keys in entries]
    return [f for is_root, f in named if is_root and f] + [
        f for is_root, f in named if not is_root and f
    ]


def _failed(entry: dict[str, str]) -> _Failed | None:
    """One summary entry (``rank : 1 (local_rank: 1)``, ``exitcode : -15 (pid: 7)``)."""
    rank_words = entry.get("rank", "")
    first = rank_words.split(" ", 1)[0]
    if not (first.isascii() and first.isdigit()):
        return None
    local = rank_words.partition("local_rank:")[2].strip().rstrip(")").strip()
    code = entry.get("exitcode", "").split(" ", 1)[0]
    return _Failed(
        rank=int(first),
        local_rank=int(local) if local.isascii() and local.isdigit() else None,
        exit_code=int(code) if code.lstrip("-").isascii() and code.lstrip("-").isdigit() else None,
    )


_STOPPED_BY_LAUNCHER = -15
"""The exit code of a worker torchrun stopped (SIGTERM) once another had failed."""
_CONSEQUENCE_MARKS = (  # gloo's and NCCL's words, torch's error types for them
    "Connection closed by peer",
    "Connection reset by peer",
    "DistBackendError",
    "DistNetworkError",
    "Watchdog caught collective operation timeout",
    "NCCL communicator was aborted",
)
"""Words of an exception a rank raises because another rank failed (a collective whose peer
is gone or never answered): a rank that failed for its own reason comes first."""


def _is_consequence(failed: _Failed, block: list[str] | None) -> bool:
    """Whether ``failed`` ended because another worker did: its own last exception is a
    collective's whose peer went away, or, with no traceback of its own, torchrun stopped
    it. A worker that raised its own exception and was stopped while it exited (slowly:
    data loader workers, a tracker's upload) failed for its own reason."""
    if block is None:
        return failed.exit_code == _STOPPED_BY_LAUNCHER
    return any(mark in block[-1] for mark in _CONSEQUENCE_MARKS)


def _torchrun_root(lines: list[str]) -> tuple[int, int | None] | None:
    """The (global rank, local rank) of the worker that failed for its own reason: the
    first torchrun lists (its root cause first) that did not only react to another's
    failure. Once it sees one worker fail, torchrun stops the rest, so a worker it lists
    failed at about the same time; its "first observed" is the lowest local rank among
    those seen in one poll (its times are whole seconds, taken when it looked), which may
    be the rank whose collective lost its peer rather than the peer."""
    failed = _torchrun_failures(lines)
    if not failed:
        return None
    if len(failed) > 1:
        program = _program_tracebacks(lines)
        failed.sort(  # stable: otherwise in torchrun's order, its root cause first
            key=lambda f: _is_consequence(f, _own_traceback(program, (f.rank, f.local_rank)))
        )
    return failed[0].rank, failed[0].local_rank


def from_error_file(failure: Failure, text: str) -> Failure:
    """``failure`` with what a torchelastic error file (``@record``) holds: the exception's
    message and traceback and when it was raised (cause ``exception``)."""

    try:
        doc = json.loads(text)
    except ValueError:
        return failure
    message = doc.get("message") if isinstance(doc, dict) else None
    if isinstance(message, dict):
        text_message = message.get("message")
        extra = message.get("extraInfo") or {}
        if isinstance(text_message, str) and text_message.strip():
            failure.message = text_message.strip().splitlines()[-1]
            failure.cause = "exception"
        callstack = extra.get("py_callstack") if isinstance(extra, dict) else None
        if isinstance(callstack, str) and callstack.strip():
            failure.traceback = callstack.rstrip()
        stamp = extra.get("timestamp") if isinstance(extra, dict) else None
        if isinstance(stamp, (int, str)) and str(stamp).isdigit():
            failure.time = float(stamp)
    elif isinstance(message, str) and message.strip():
        failure.message = message.strip().splitlines()[-1]
        failure.cause = "exception"
    return failure
