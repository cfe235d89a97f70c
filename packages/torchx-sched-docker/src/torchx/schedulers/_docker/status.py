"""What a local_docker app is doing, from what the daemon already lists of its containers
(no extra call): each replica's state, the roles as their containers show them, a sweep's
elements (their labels), and where the start-up time went: the labels ``schedule`` wrote
(when it was submitted, when it finished pulling images), when each container was created,
and how long ago it exited (the daemon's own ``Exited (0) 5 seconds ago``)."""

from __future__ import annotations

import json
import re
import time

from torchx.schedulers._docker.request import (
    LABEL_ARRAY,
    LABEL_PULLED,
    LABEL_REPLICA_ID,
    LABEL_SUBMITTED,
)
from torchx.schedulers.shared import labels
from torchx.specs.api import AppState, Role, RoleStatus, is_terminal
from torchx.specs.status import ArrayStatus
from torchx.specs.timeline import Phase, Waiting, timeline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CONTAINER_STATE",
    "array_of",
    "array_status",
    "listed_state",
    "role_of",
    "timeline_of",
    "waiting_of",
]

_AGO = re.compile(r"^Exited \(-?\d+\) (.+) ago$")
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}


def _seconds_ago(status: str) -> float | None:
    """How long ago a container exited, from the daemon's words (coarse past a minute)."""
    found = _AGO.match(status.strip())
    if found is None:
        return None
    words = found.group(1).lower().replace("about ", "").replace("less than ", "").split()
    if len(words) != 2:
        return None
    count, unit = words
    number = 1 if count in ("a", "an") else int(count) if count.isdigit() else None
    scale = _UNITS.get(unit.rstrip("s"))
    return None if number is None or scale is None else float(number * scale)


def _float(value: object) -> float | None:
    try:
        return float(str(value))
    except ValueError:
        return None


def timeline_of(summaries: list[dict[str, Any]], state: AppState) -> list[Phase]:
    """``submitted``, ``pulling_image`` (when ``schedule`` pulled), ``starting`` (the
    containers being made), ``running`` and ``finished``."""
    labels = [s.get("Labels") or {} for s in summaries]
    submitted = min((t for lb in labels if (t := _float(lb.get(LABEL_SUBMITTED)))), default=None)
    pulled_text = next((str(lb[LABEL_PULLED]) for lb in labels if lb.get(LABEL_PULLED)), "")
    pulled_at, _, images = pulled_text.partition(" ")
    created = min((float(s["Created"]) for s in summaries if s.get("Created")), default=None)
    ended = None
    if is_terminal(state):
        now = time.time()
        agos = [a for s in summaries if (a := _seconds_ago(str(s.get("Status") or ""))) is not None]
        # none yet: the daemon lists a container as exited a moment after its exit event
        ended = now - min(agos) if agos else now
    begun = _float(pulled_at) if pulled_at else submitted
    started = created if state != AppState.PENDING else None
    if started is not None and begun is not None:
        started = max(started, begun)  # Created is whole seconds
    marks: list[tuple[str, float | None, str | None]] = [("submitted", submitted, None)]
    if pulled_at:
        marks.append(("pulling_image", submitted, images or None))
    marks += [
        ("starting", begun, None),
        ("running", started, None),
        ("finished", ended, None),
    ]
    return timeline(marks, ended=ended)


def waiting_of(summaries: list[dict[str, Any]]) -> Waiting | None:
    """Why the app has not started, while it has not: some of its containers are created
    but not started yet (``schedule`` pulls images before it creates any, so a pull is
    never seen here). ``list`` and ``describe`` say it from the same container list."""
    created = [s for s in summaries if s.get("State") == "created"]
    if not created:
        return None
    since = min((float(s["Created"]) for s in created if s.get("Created")), default=None)
    reason = f"{len(created)} of {len(summaries)} containers created, not started yet"
    return Waiting(phase="starting", reason=reason, since=since)


_EXITED = re.compile(r"^Exited \((-?\d+)\)")


def listed_state(summary: dict[str, Any]) -> AppState:
    """A replica's state as the container list shows it; any non-zero exit reads FAILED."""
    state = str(summary.get("State", ""))
    if state != "exited":
        return CONTAINER_STATE.get(state, AppState.UNKNOWN)
    match = _EXITED.match(str(summary.get("Status", "")))
    return AppState.SUCCEEDED if match is not None and int(match.group(1)) == 0 else AppState.FAILED


def role_of(role_name: str, summary: dict[str, Any], num_replicas: int) -> Role:
    """The role as its first container shows it: image, entrypoint, args and, for an app
    of an idempotency key, the request it was made from."""
    found = summary.get("Labels") or {}
    role = Role(
        name=role_name,
        image=str(summary.get("Image", "")),
        num_replicas=num_replicas,
        env=labels.request_env(found),  # an idempotency key's request, to tell it apart
    )
    command = found.get(labels.COMMAND)
    try:
        words = json.loads(command) if command else None
    except ValueError:
        words = None
    if isinstance(words, list) and words:
        role.entrypoint, role.args = str(words[0]), [str(w) for w in words[1:]]
    return role


def array_of(summaries: list[dict[str, Any]]) -> dict[int, dict[str, Any]] | None:
    """A sweep's elements by position (its containers' labels); None for another app."""
    found: dict[int, dict[str, Any]] = {}
    for summary in summaries:
        container_labels = summary.get("Labels") or {}
        raw = container_labels.get(LABEL_ARRAY)
        if raw is None:
            return None
        found[int(container_labels.get(LABEL_REPLICA_ID, "0") or 0)] = json.loads(raw)
    return found


def array_status(array: dict[int, dict[str, Any]], roles_statuses: list[RoleStatus]) -> ArrayStatus:
    replicas = sorted(roles_statuses[0].replicas, key=lambda r: r.id)
    states = [AppState.PENDING if r.state == AppState.SUBMITTED else r.state for r in replicas]
    return ArrayStatus.of(
        states,
        indices=[int(array[r.id].get("index", r.id)) for r in replicas],
        values=[dict(array[r.id].get("values") or {}) for r in replicas],
        size=int(next(iter(array.values())).get("size") or len(replicas)),
    )


CONTAINER_STATE: dict[str, AppState] = {
    "created": AppState.SUBMITTED,
    "restarting": AppState.PENDING,
    "running": AppState.RUNNING,
    "paused": AppState.PENDING,
    "removing": AppState.PENDING,
    "dead": AppState.FAILED,
}
"""Docker container states (other than ``exited``) as replica states."""
