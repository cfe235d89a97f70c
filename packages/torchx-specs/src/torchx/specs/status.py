"""The status objects schedulers report: an app's, its roles' and replicas', a sweep's.

``AppStatus.format()`` is what ``torchx status`` prints; its layout is part of the public
contract (tools scrape it), so it is reproduced exactly.
"""

from __future__ import annotations

import json
import re
import time

from torchx.specs._common import NONE
from torchx.specs.failure import cause_words, without_tee_prefix
from torchx.specs.states import AppState, ReplicaState, is_started, is_terminal
from torchx.util.startup.lazy_dataclass import asdict, dataclass, field
from torchx.util.strings import terminal_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    from torchx.specs.attempts import Attempt
    from torchx.specs.failure import Failure
    from torchx.specs.progress import Progress
    from torchx.specs.timeline import Phase, Waiting

__all__ = [
    "AppState",
    "AppStatus",
    "AppStatusError",
    "ArrayElementStatus",
    "ArrayStatus",
    "ReplicaState",
    "ReplicaStatus",
    "RoleStatus",
    "array_state",
    "is_started",
    "is_terminal",
]


@dataclass
class ReplicaStatus:
    """The status of one replica (node) of a role; ``id`` is the node index."""

    id: int
    state: AppState
    role: str
    hostname: str
    structured_error_msg: str = NONE
    hostaddr: str | None = None

    def __post_init__(self) -> None:
        if self.hostaddr is None:
            self.hostaddr = self.hostname


@dataclass
class RoleStatus:
    """The replica statuses of one role."""

    role: str
    replicas: list[ReplicaStatus]

    def to_json(self) -> dict[str, Any]:
        """The role's status as plain data: ``{"role": ..., "replicas": [...]}``."""
        return {"role": self.role, "replicas": [asdict(r) for r in self.replicas]}


class AppStatusError(Exception):
    """Raised by :meth:`AppStatus.raise_for_status` when an app did not succeed."""

    def __init__(self, status: AppStatus, *args: object) -> None:
        super().__init__(*args)
        self.status = status


# Errors raised inside a torch.distributed.rpc call carry the remote traceback after a
# "On WorkerInfo(...)" banner; only the part from the exception type onward is useful.
_RPC_ERROR_PATTERN = (
    r"\w*:?\s*On WorkerInfo\(id=\d+, name=[^)]*\):\n.+\n"
    r"Traceback \(most recent call last\):\n[\s\S]+"
)
# A message with an embedded "\nException..." suffix is shown without that suffix.
_EMBEDDED_ERROR_PATTERN = r"(?P<msg>.+)\nException.*"

_STATUS_TEMPLATE = """AppStatus:
    State: {state}
    Num Restarts: {num_restarts}
    Roles: {roles}
    Msg: {msg}
    Structured Error Msg: {structured_error_msg}
    UI URL: {url}
    """

_ERROR_HEADER = "    error_msg: "
_SHORT_ERROR = 200
"""A structured error longer than this that is not the root cause is shown in one line."""
_WRAP_WIDTH = 80


def _wrap(msg: str, header: str, width: int = _WRAP_WIDTH) -> str:
    """Breaks ``msg`` at the first space once a line reaches ``width`` characters.

    The first line starts with ``header``, the others with as many spaces; the breaking
    space starts the next line (the layout ``torchx status`` has always printed).
    """
    lines = []
    start = 0
    for i, ch in enumerate(msg):
        if ch == " " and i - start >= width:
            lines.append(msg[start:i])
            start = i
    lines.append(msg[start:])
    indent = " " * len(header)
    return "\n".join((header if n == 0 else indent) + line for n, line in enumerate(lines))


def _trim_error(msg: str) -> str:
    match = re.search(_RPC_ERROR_PATTERN, msg)
    if match:
        msg = match.group(0)
    match = re.search(_EMBEDDED_ERROR_PATTERN, msg)
    if match:
        msg = match.group("msg")
    return msg


def _parse_reply(raw: str) -> tuple[str, object, object] | None:
    """``(message, error_code, timestamp)`` from a torchelastic reply file, else ``None``.

    Accepts the nested torchelastic shape and the flat ``{"message": str, ...}`` shape.
    """

    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    message = data.get("message")
    if isinstance(message, dict) and isinstance(message.get("message"), str):
        extra = message.get("extraInfo")
        timestamp = extra.get("timestamp") if isinstance(extra, dict) else None
        return message["message"], message.get("errorCode"), timestamp
    if isinstance(message, str):
        return message, data.get("errorCode"), data.get("timestamp")
    return None


def _format_timestamp(timestamp: object) -> str:
    if timestamp is None:
        return "<N/A>"
    try:
        seconds = int(timestamp)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return str(timestamp)
    from datetime import datetime

    return str(datetime.fromtimestamp(seconds))


def _format_failure(failure: Failure) -> str:
    """The ``Root cause:`` block of ``torchx status`` (after the upstream layout)."""
    rank = f", rank {failure.rank}" if failure.rank is not None else ""

    words = cause_words(failure.cause, failure.exit_code, failure.signal)
    lines = [f"    Root cause: {failure.role}[{failure.replica_id}]{rank}: {words}"]
    if failure.message and failure.message not in words:  # said once
        lines.append("        " + failure.message.replace("\n", "\n        "))
    if failure.traceback and not _ends_with(failure.log_tail, failure.traceback):
        # the failing rank's own, first: the log's last lines are another rank's
        lines.append("        its traceback:")
        lines += ["          | " + line for line in failure.traceback.splitlines()]
    if failure.log_tail:
        lines.append("        last lines of its log:")
        lines += ["          | " + line.replace("\n", "\\n") for line in failure.log_tail]
    return "\n".join(lines) + "\n"


def _ends_with(log_tail: list[str], traceback: str) -> bool:
    """Whether the log's last lines are ``traceback`` (launcher prefixes aside)."""

    wanted = traceback.splitlines()
    got = [without_tee_prefix(line) for line in log_tail[-len(wanted) :]]
    return bool(wanted) and got == wanted


def _format_sweep_role(role: RoleStatus) -> str:
    """`` train: 50 elements: 48 SUCCEEDED, 2 FAILED (3, 17)``: a sweep's role in a line
    (its replicas are the elements, by position)."""
    counts: dict[str, list[int]] = {}
    for replica in sorted(role.replicas, key=lambda r: r.id):
        counts.setdefault(replica.state.name, []).append(replica.id)
    parts = []
    for name, ids in counts.items():
        listed = ids if len(ids) <= 10 else [*ids[:10], "..."]
        which = f" ({', '.join(str(i) for i in listed)})" if name == "FAILED" else ""
        parts.append(f"{len(ids)} {name}{which}")
    n = len(role.replicas)
    return f"\n  {role.role}: {n} element{'s' if n != 1 else ''}: {', '.join(parts)}"


def _one_line_error(raw: str) -> str:
    """A long structured error in one short line: its message's first line, and where the
    whole of it is (``torchx status --json``)."""
    parsed = _parse_reply(raw)
    message = (parsed[0] if parsed is not None else raw).strip()
    first = message.splitlines()[0] if message else ""
    if len(first) > _SHORT_ERROR:
        first = first[: _SHORT_ERROR - 1] + "…"
    return f"{first} ({len(raw):,} characters; torchx status --json has it whole)"


def _format_replica(replica: ReplicaStatus, secondary: bool = False) -> str:
    """A replica's lines; ``secondary``: another replica is the root cause, so a long error
    of this one is one short line (it is often the failure's echo: a lost rendezvous)."""
    state = str(replica.state)
    raw = replica.structured_error_msg
    if raw != NONE and secondary and len(raw) > _SHORT_ERROR:
        data = (
            f"{state}\n        hostname: {replica.hostname}\n{_ERROR_HEADER}{_one_line_error(raw)}"
        )
    elif raw != NONE:
        parsed = _parse_reply(raw)
        if parsed is None:
            data = f"{state}\n        hostname: {replica.hostname}\n    {_wrap(raw, _ERROR_HEADER)}"
        else:
            message, error_code, timestamp = parsed
            exitcode = "<N/A>" if error_code is None or error_code == "" else error_code
            data = (
                f"{state} (exitcode: {exitcode})\n"
                f"        timestamp: {_format_timestamp(timestamp)}\n"
                f"        hostname: {replica.hostname}\n"
                f"    {_wrap(_trim_error(message), _ERROR_HEADER)}"
            )
    else:
        data = state  # no torchelastic reply: nothing more to say (the app's msg says why)
    marker = "*" if replica.id == 0 else " "
    return f"\n {marker}{replica.role}[{replica.id}]:{data}"


@dataclass
class AppStatus:
    """The status of an app as reported by its scheduler."""

    state: AppState
    num_restarts: int = 0
    msg: str = ""
    structured_error_msg: str = NONE
    ui_url: str | None = None
    roles: list[RoleStatus] = field(default_factory=list)
    failure: Failure | None = None
    """The root cause of a failed app (``None`` unless a replica failed)."""
    waiting: Waiting | None = None
    """Why the app waits (``None`` once it runs, or when the scheduler does not say)."""
    timeline: list[Phase] = field(default_factory=list)
    """The phases the app went through, in order (:mod:`torchx.specs.timeline`)."""
    progress: Progress | None = None
    """How far the app is, from its last ``torchx.progress`` report (``None`` before the
    first, or where its log cannot be read; :mod:`torchx.specs.progress`)."""
    attempts: list[Attempt] = field(default_factory=list)
    """Every attempt of the app, the current one last (:mod:`torchx.specs.attempts`)."""
    array: ArrayStatus | None = None
    """The elements of a sweep (an array app), ``None`` for any other app
    (:mod:`torchx.specs.sweep`)."""

    def is_terminal(self) -> bool:
        """Whether the app can no longer change state (see :func:`is_terminal`)."""
        return is_terminal(self.state)

    def raise_for_status(self) -> None:
        """Raises :class:`AppStatusError` unless the app succeeded.

        Raises:
            AppStatusError: the app is not ``SUCCEEDED`` (it carries this status).
        """
        if self.state != AppState.SUCCEEDED:
            raise AppStatusError(self, f"job did not succeed: {self}")

    def replica(self, role: str, replica_id: int) -> ReplicaStatus | None:
        """Replica ``replica_id`` of ``role`` (of a sweep: its element of that index)."""
        for found in self.roles:
            if found.role == role:
                for replica in found.replicas:
                    if replica.id == replica_id:
                        return replica
        return None

    def replica_json(self, role: str, replica_id: int) -> dict[str, Any]:
        """What ``torchx status --json HANDLE/ROLE/ID`` prints: the replica's state and
        host, its sweep element (values, progress) and the root cause when it is it."""
        replica = self.replica(role, replica_id)
        if replica is None:
            raise KeyError(f"{role}/{replica_id}")
        element = None
        if self.array is not None:
            element = next((e for e in self.array.elements if e.index == replica_id), None)
        failure = self.failure
        mine = failure is not None and (failure.role, failure.replica_id) == (role, replica_id)
        return {
            "role": role,
            "replica_id": replica_id,
            "state": replica.state.name,
            "hostname": replica.hostname,
            "element": element.to_json() if element is not None else None,
            "failure": failure.to_json() if mine and failure is not None else None,
        }

    def format_replica(self, role: str, replica_id: int) -> str:
        """``torchx status HANDLE/ROLE/ID``: one replica (a sweep's element) in a few lines."""

        from torchx.specs.progress import Progress, progress_line

        found = self.replica_json(role, replica_id)
        lines = [f"{role}[{replica_id}]: {found['state']}"]
        if found["hostname"]:
            lines.append(f"    Host: {found['hostname']}")
        element = found["element"]
        if element is not None and self.array is not None:
            values = ", ".join(f"{k}={v}" for k, v in element["args"].items())
            lines.append(
                f"    Sweep element {replica_id} of {self.array.size}"
                + (f": {values}" if values else "")
            )
            progress = next(e.progress for e in self.array.elements if e.index == replica_id)
            if isinstance(progress, Progress):
                lines.append("    " + progress_line(progress, time.time()))
        text = "\n".join(lines) + "\n"
        if found["failure"] is not None and self.failure is not None:
            text += _format_failure(self.failure)
        return terminal_text(text)

    def _roles(self, filter_roles: list[str] | None) -> list[RoleStatus]:
        if not filter_roles:
            return self.roles
        return [r for r in self.roles if r.role in filter_roles]

    def to_json(self, filter_roles: list[str] | None = None) -> dict[str, Any]:
        """What ``torchx status --json`` prints.

        Args:
            filter_roles: only these roles' replicas (``None``: every role).

        Returns:
            ``state``, ``num_restarts``, ``roles``, ``msg``, ``structured_error_msg``
            and ``url``, as plain data.
        """
        return {
            "state": str(self.state),
            "num_restarts": self.num_restarts,
            "roles": [r.to_json() for r in self._roles(filter_roles)],
            "msg": self.msg,
            "structured_error_msg": self.structured_error_msg,
            "url": self.ui_url,
            "failure": self.failure.to_json() if self.failure is not None else None,
            "waiting": self.waiting.to_json() if self.waiting is not None else None,
            "timeline": [phase.to_json() for phase in self.timeline],
            "progress": self.progress.to_json() if self.progress is not None else None,
            "attempts": [attempt.to_json() for attempt in self.attempts],
            "array": self.array.to_json() if self.array is not None else None,
        }

    def format(self, filter_roles: list[str] | None = None) -> str:
        """Human-readable status (what ``torchx status`` prints).

        Args:
            filter_roles: only these roles' replicas (``None``: every role).

        Returns:
            The text, several lines.
        """
        if self.array is not None:  # a sweep: a line per role, not one per element
            roles = "".join(_format_sweep_role(role) for role in self._roles(filter_roles))
        else:
            roles = "".join(
                _format_replica(replica, secondary=self._secondary(replica))
                for role in self._roles(filter_roles)
                for replica in sorted(role.replicas, key=lambda r: r.id)
            )
        error = self.structured_error_msg
        if self.failure is not None and error != NONE and len(error) > _SHORT_ERROR:
            error = _one_line_error(error)  # the root cause below says what failed
        text = _STATUS_TEMPLATE.format(
            state=self.state,
            num_restarts=self.num_restarts,
            roles=roles,
            msg=self.msg,
            structured_error_msg=error,
            url=self.ui_url,
        )
        lines = self._timing_lines()
        if self.array is not None:
            lines[0:0] = [self.array.line(), self.array.progress_line()]
        line = _attempts_line(self.attempts)
        if line:
            lines.append(line)
        if lines:
            text = text.rstrip(" ") + "".join(f"    {line}\n" for line in lines)
        if self.failure is not None:
            text = text.rstrip(" ") + _format_failure(self.failure)

        return terminal_text(text)  # a job's words are data: no escape sequence acts

    def _secondary(self, replica: ReplicaStatus) -> bool:
        """Whether ``replica`` failed after (or because of) the root cause, another one."""
        failure = self.failure
        return failure is not None and (replica.role, replica.id) != (
            failure.role,
            failure.replica_id,
        )

    def _timing_lines(self) -> list[str]:
        """``Waiting 2m13s: ...`` while the app waits; ``Started after 41s: ...`` once it
        has run."""

        from torchx.specs.timeline import startup_line, waiting_line

        if self.waiting is not None:
            return [waiting_line(self.waiting, time.time())]
        started = startup_line(self.timeline) if self.timeline else None
        lines = [started] if started else []
        if self.progress is not None:
            from torchx.specs.progress import progress_line

            lines.append(progress_line(self.progress, time.time()))
        return lines

    def __repr__(self) -> str:
        """YAML (or, without PyYAML, JSON) rendering with reply files decoded."""

        def plain(value: Any) -> Any:
            if isinstance(value, AppState):
                return repr(value)
            if isinstance(value, dict):
                return {k: plain(v) for k, v in value.items()}
            if isinstance(value, list):
                return [plain(v) for v in value]
            return value

        def decoded(raw: str) -> Any:
            if raw == NONE:
                return NONE
            try:
                return json.loads(raw)
            except ValueError:
                return raw

        data = plain(asdict(self))
        if len(data.get("attempts") or []) < 2:
            data.pop("attempts", None)  # one attempt says nothing the state does not
        for key in ("failure", "waiting", "timeline", "progress", "array"):
            if not data.get(key):
                data.pop(key, None)  # the layout of an app without them stays upstream's
        data["structured_error_msg"] = decoded(self.structured_error_msg)
        for role in data["roles"]:
            for replica in role["replicas"]:
                replica["structured_error_msg"] = decoded(replica["structured_error_msg"])
        try:
            import yaml
        except ImportError:
            return json.dumps({"AppStatus": data}, indent=2, sort_keys=True, default=str)
        return str(yaml.safe_dump({"AppStatus": data}, default_flow_style=False))


def _attempts_line(attempts: list[Attempt]) -> str | None:
    """``Attempts: 0 FAILED (exit code 3), 1 RUNNING`` for an app that ran more than once
    (None for one attempt: the state says it all)."""
    if len(attempts) < 2:
        return None
    parts = []
    for a in attempts:
        part = f"{a.attempt} {a.state.name if a.state is not None else 'UNKNOWN'}"
        why = a.why()
        parts.append(f"{part} ({why})" if why else part)
    return "Attempts: " + ", ".join(parts)


def array_state(states: Iterable[AppState]) -> AppState:
    """The state of an array from its elements': SUCCEEDED when every element succeeded,
    FAILED once all have ended and one failed (CANCELLED when one was cancelled and none
    failed), RUNNING while one runs or some ended and others wait, else PENDING."""
    states = list(states)
    if not states:
        return AppState.UNKNOWN
    if all(is_terminal(s) for s in states):
        if AppState.FAILED in states:
            return AppState.FAILED
        if AppState.CANCELLED in states:
            return AppState.CANCELLED
        return AppState.SUCCEEDED
    if AppState.RUNNING in states or any(is_terminal(s) for s in states):
        return AppState.RUNNING
    if AppState.UNKNOWN in states:
        return AppState.UNKNOWN
    return AppState.PENDING


@dataclass
class ArrayElementStatus:
    """One element of a running or finished array: its index, swept values and state, and
    how far it is (its last ``torchx.progress`` report), where that was read."""

    index: int
    state: AppState
    values: dict[str, str] = field(default_factory=dict)
    progress: Progress | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "args": dict(self.values),
            "state": self.state.name,
            "progress": self.progress.to_json() if self.progress is not None else None,
        }


@dataclass
class ArrayStatus:
    """The elements of an array app (``torchx status --json``'s ``"array"``).

    Attributes:
        size: the sweep's size.
        elements: each element of this submission, by position.
    """

    size: int
    elements: list[ArrayElementStatus] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        states: Sequence[AppState],
        *,
        indices: Sequence[int] | None = None,
        values: Sequence[Mapping[str, str]] | None = None,
        size: int | None = None,
    ) -> ArrayStatus:
        """From the elements' states by position, with their indices and values where
        the scheduler kept them."""
        return cls(
            size=size if size is not None else len(states),
            elements=[
                ArrayElementStatus(
                    index=indices[p] if indices is not None and p < len(indices) else p,
                    state=state,
                    values=dict(values[p]) if values is not None and p < len(values) else {},
                )
                for p, state in enumerate(states)
            ],
        )

    def states(self) -> dict[str, int]:
        """How many elements are in each state (``{"SUCCEEDED": 2, "FAILED": 2}``)."""
        counts: dict[str, int] = {}
        for element in self.elements:
            counts[element.state.name] = counts.get(element.state.name, 0) + 1
        return counts

    def failed(self) -> list[int]:
        """The indices of the failed elements, in order."""
        return sorted(e.index for e in self.elements if e.state == AppState.FAILED)

    def position_of(self, index: int) -> int | None:
        """The position of the element of sweep index ``index`` (None: not in it)."""
        for position, element in enumerate(self.elements):
            if element.index == index:
                return position
        return None

    def failed_message(self) -> str:
        """``2 of 4 elements failed: 1, 3`` ("" when none failed): a sweep's ``msg``."""
        failed = self.failed()
        if not failed:
            return ""
        which = ", ".join(str(i) for i in failed)
        return f"{len(failed)} of {len(self.elements)} elements failed: {which}"

    def state(self) -> AppState:
        """The array's state from its elements' (:func:`array_state`)."""
        return array_state(e.state for e in self.elements)

    def to_json(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "states": self.states(),
            "failed": self.failed(),
            "elements": [e.to_json() for e in self.elements],
        }

    def progress_line(self) -> str:
        """``Progress: 17/20 elements done (3 running)``: how far a sweep is."""
        done = sum(1 for e in self.elements if is_terminal(e.state))
        running = sum(1 for e in self.elements if e.state == AppState.RUNNING)
        return f"Progress: {done}/{len(self.elements)} elements done ({running} running)"

    def line(self) -> str:
        """``Sweep: 4 elements: 2 succeeded, 2 failed (1, 3)``."""
        counts = self.states()
        order = ["SUCCEEDED", "FAILED", "CANCELLED", "RUNNING", "PENDING", "SUBMITTED"]
        order += sorted(set(counts) - set(order))
        parts = []
        for name in order:
            if counts.get(name):
                part = f"{counts[name]} {name.lower()}"
                if name == "FAILED":
                    part += " (" + ", ".join(str(i) for i in self.failed()) + ")"
                parts.append(part)
        n = len(self.elements)
        noun = "element" if n == 1 else "elements"
        of = f" of {self.size}" if self.size != n else ""
        return f"Sweep: {n} {noun}{of}: " + ", ".join(parts)
