"""From a Ray job and its driver's ``[torchx]`` event lines to TorchX's app state, with a
state, host and exit code for every replica, the reason an app waits, its timeline and
attempts, and the elements of a sweep.

A sweep is one Ray job per element under one app id: element ``p`` of sweep ``ID`` is the
job ``ID-p``, its metadata naming the sweep. Nothing is submitted under ``ID`` itself:
``describe`` of ``ID`` finds no job and then reads the elements from the cluster's job
list (one call).
"""

from __future__ import annotations

import json
from typing import Any

from torchx.schedulers._ray.request import META_ELEMENT, META_SWEEP
from torchx.specs.api import AppState
from torchx.specs.attempts import Attempt
from torchx.specs.status import ArrayStatus
from torchx.specs.timeline import Phase, Waiting, timeline
from torchx.util.startup.lazy_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


EVENT_PREFIX = "[torchx] "

JOB_STATES = {
    "PENDING": AppState.PENDING,
    "RUNNING": AppState.RUNNING,
    "SUCCEEDED": AppState.SUCCEEDED,
    "FAILED": AppState.FAILED,
    "STOPPED": AppState.CANCELLED,
}


@dataclass
class ReplicaInfo:
    role: str
    replica: int
    state: AppState
    host: str = ""
    actor_ids: list[str] | None = None
    exit_code: int | None = None
    log_files: list[dict[str, str]] | None = None
    """Per attempt: ``node_id``, ``out`` and ``err`` file names (empty: read by actor id)."""


def events(driver_log: str) -> list[dict[str, Any]]:
    """The driver's events, in order (other lines of the log are Ray's own)."""
    found = []
    for line in driver_log.splitlines():
        if line.startswith(EVENT_PREFIX):
            try:
                found.append(json.loads(line[len(EVENT_PREFIX) :]))
            except ValueError:
                continue
    return found


def replicas(
    roles: dict[str, int], job_state: AppState, found: list[dict[str, Any]]
) -> dict[tuple[str, int], ReplicaInfo]:
    """Every replica of ``roles`` (name -> count) with what the events say of it."""
    terminal = job_state in (AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED)
    start = AppState.CANCELLED if job_state == AppState.CANCELLED else AppState.PENDING
    info = {
        (role, i): ReplicaInfo(
            role, i, start if terminal else AppState.PENDING, actor_ids=[], log_files=[]
        )
        for role, count in roles.items()
        for i in range(count)
    }
    for event in found:
        key = (str(event.get("role")), int(event.get("replica", -1)))
        replica = info.get(key)
        if replica is None:
            continue
        kind = event.get("event")
        if kind == "running":
            replica.state = AppState.RUNNING
            replica.host = str(event.get("host") or "")
            assert replica.actor_ids is not None and replica.log_files is not None
            replica.actor_ids.append(str(event.get("actor_id")))
            replica.log_files.append(
                {k[4:]: str(v) for k, v in event.items() if k.startswith("log_") and v}
            )
            replica.exit_code = None
        elif kind == "exited":
            code = event.get("code")
            replica.exit_code = code if isinstance(code, int) else None
            replica.state = AppState.SUCCEEDED if code == 0 else AppState.FAILED
        elif kind == "stopped":
            replica.state = AppState.CANCELLED
    if terminal:
        for replica in info.values():
            if replica.state == AppState.RUNNING:  # the job ended under it (stop, node lost)
                replica.state = (
                    AppState.CANCELLED if job_state == AppState.CANCELLED else (AppState.FAILED)
                )
    return info


def app_state(job: dict[str, Any], found: list[dict[str, Any]]) -> tuple[AppState, str]:
    """``(state, message)``: Ray's job status, except that a running driver still waiting
    for its placement group is PENDING with what it waits for."""
    status = str(job.get("status", ""))
    state = JOB_STATES.get(status, AppState.UNKNOWN)
    kinds = [e.get("event") for e in found]
    if state == AppState.RUNNING and "running" not in kinds:
        return AppState.PENDING, pending_reason(found)
    if state == AppState.FAILED:
        unplaceable = next((e for e in found if e.get("event") == "unplaceable"), None)
        if unplaceable is not None:
            return state, "resources never became free: " + needs(unplaceable)
        exits = [e for e in found if e.get("event") == "exited" and e.get("code")]
        if exits:
            first = exits[-1]
            return state, (
                f"replica {first.get('role')}/{first.get('replica')} exited with code"
                f" {first.get('code')}"
            )
    message = str(job.get("message") or "")
    if state == AppState.PENDING:
        message = message or "the job waits to start (its runtime env is being set up)"
    return state, message


def pending_reason(found: list[dict[str, Any]]) -> str:
    pending = next((e for e in reversed(found) if e.get("event") == "pending"), None)
    if pending is None:
        waiting = next((e for e in found if e.get("event") == "waiting"), None)
        if waiting is None:
            return "the TorchX driver is starting"
        return "reserving resources: " + _bundles(waiting.get("bundles") or [])
    return "waiting for resources: " + needs(pending)


def needs(event: dict[str, Any]) -> str:
    bundles = event.get("bundles") or []
    cluster = event.get("cluster") or {}
    total = {
        k: v for k, v in cluster.items() if not k.startswith("node:") and "memory" not in k.lower()
    }
    have = ", ".join(f"{k} {_num(v)}" for k, v in sorted(total.items())) or "nothing"
    if "memory" in cluster:
        have += f", memory {_num(cluster['memory'] / 2**20)} MB"
    return f"{_bundles(bundles)}; the cluster has {have} in all"


def _bundles(bundles: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for bundle in bundles:
        shown = ", ".join(
            f"{k} {_num(v / 2**20)} MB" if k == "memory" else f"{k} {_num(v)}"
            for k, v in sorted(bundle.items())
        )
        counts[shown] = counts.get(shown, 0) + 1
    parts = [f"{n} x {{{b}}}" for b, n in counts.items()]
    return f"{len(bundles)} replica bundle(s) ({'; '.join(parts)})"


def _num(value: Any) -> str:
    number = float(value)
    return str(int(number)) if number == int(number) else f"{number:g}"


def timing(
    job: dict[str, Any], found: list[dict[str, Any]], state: AppState, message: str
) -> tuple[list[Phase], Waiting | None]:
    """The app's phases from Ray's job times and the driver's events: ``submitted`` (the
    job's start), ``starting`` (Ray sets up its runtime env and starts the driver),
    ``queued`` (the driver waits for its placement group), ``running`` (the first replica
    runs), ``finished`` (the job's end); and why it waits, while it does."""

    def stamp(event: dict[str, Any] | None) -> float | None:
        value = (event or {}).get("t")
        return float(value) if isinstance(value, (int, float)) else None

    def ms(key: str) -> float | None:
        value = job.get(key)
        return float(value) / 1000 if isinstance(value, (int, float)) and value else None

    submitted = ms("start_time")
    ended = (
        ms("end_time")
        if state in (AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED)
        else None
    )
    queued = stamp(next((e for e in found if e.get("event") in ("waiting", "pending")), None))
    running = stamp(next((e for e in found if e.get("event") == "running"), None))
    phases = timeline(
        [
            ("submitted", submitted, None),
            ("starting", submitted, None),
            ("queued", queued, None),
            ("running", running, None),
            ("finished", ended, None),
        ],
        ended=ended,
    )
    waiting = None
    if state == AppState.PENDING:
        phase = "queued" if queued is not None else "starting"
        waiting = Waiting(phase=phase, reason=message, since=queued or submitted)
    return phases, waiting


def attempts(found: list[dict[str, Any]]) -> list[Attempt] | None:
    """The app's attempts from the driver's events: each ``restarted`` ends one (the
    replica's ``exited`` code before it says why; ``lost``: its actor or node died) and
    starts the next. None for an app that never restarted."""

    if not any(e.get("event") == "restarted" for e in found):
        return None
    current = Attempt(0)
    history: list[Attempt] = []
    lost = False
    for event in found:
        kind, when = event.get("event"), event.get("t")
        at = float(when) if isinstance(when, (int, float)) else None
        if kind == "running" and current.start is None:
            current.start = at
        elif kind == "lost":
            lost = True
        elif kind == "exited" and event.get("code") != 0 and current.exit_code is None:
            code = event.get("code")
            current.exit_code = None if lost or not isinstance(code, int) else code
            current.cause = "node_failure" if lost else "exit_code"
        elif kind == "restarted":
            current.end, current.state = at, AppState.FAILED
            history.append(current)
            current, lost = Attempt(len(history), start=at), False
    history.append(current)
    return history


def elements_of(jobs: Sequence[Mapping[str, Any]], sweep_id: str) -> list[Mapping[str, Any]]:
    """The element jobs of ``sweep_id`` among ``jobs`` (the cluster's list), by position."""
    found = [j for j in jobs if (j.get("metadata") or {}).get(META_SWEEP) == sweep_id]
    return sorted(found, key=lambda j: int(_record(j).get("position", 0)))


def _record(job: Mapping[str, Any]) -> dict[str, Any]:
    raw = (job.get("metadata") or {}).get(META_ELEMENT) or "{}"
    record: dict[str, Any] = json.loads(raw)
    return record


def sweep_state(elements: Sequence[Mapping[str, Any]]) -> tuple[Any, list[Any]]:
    """(the sweep's :class:`ArrayStatus`, each element's state) from its element jobs."""
    records = [_record(j) for j in elements]
    states = [JOB_STATES.get(str(j.get("status")), AppState.UNKNOWN) for j in elements]
    size = int(records[0].get("size") or len(elements)) if records else len(elements)
    status = ArrayStatus.of(
        states,
        indices=[int(r.get("index", p)) for p, r in enumerate(records)],
        values=[dict(r.get("values") or {}) for r in records],
        size=size,
    )
    return status, states
