"""What a ``local_cwd`` app is doing, from the request and state files its supervisor
keeps: its attempts, its timeline (local_cwd queues nothing: an app starts at once), and
the elements of a sweep."""

from __future__ import annotations

from torchx.specs.states import AppState, is_terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.specs.attempts import Attempt
    from torchx.specs.status import ArrayStatus, RoleStatus
    from torchx.specs.timeline import Phase


def attempts_of(state: dict[str, Any]) -> list[Attempt]:
    """The attempts the supervisor recorded (each failed one, then the current one's
    start)."""
    from torchx.specs.attempts import Attempt

    attempts = [
        Attempt(
            attempt=int(a["attempt"]),
            start=a.get("start"),
            end=a.get("end"),
            state=AppState[a["state"]],
            cause=a.get("cause"),
            exit_code=a.get("exit_code"),
            signal=a.get("signal"),
        )
        for a in state.get("attempts") or []
    ]
    started = state.get("attempt_started")
    if attempts and started:
        attempts.append(Attempt(int(state.get("num_restarts", 0)), start=started))
    return attempts


def timeline_of(request: dict[str, Any], state: dict[str, Any], app_state: AppState) -> list[Phase]:
    """``submitted`` when the request was made, ``starting`` while the supervisor starts the
    replicas, ``running`` from the first replica's start, ``finished`` when the last ended
    (local_cwd queues nothing: an app starts at once)."""
    from torchx.specs.timeline import timeline

    starts = [r.get("started") for role in state["roles"] for r in role]
    known = [float(s) for s in starts if isinstance(s, (int, float))]
    ended = state.get("ended") if is_terminal(app_state) else None
    created = request.get("created")
    return timeline(
        [
            ("submitted", float(created) if created else None, None),
            ("starting", float(created) if created and known else None, None),
            ("running", min(known) if known else None, None),
            ("finished", float(ended) if ended else None, None),
        ],
        ended=float(ended) if ended else None,
    )


def array_status(request: dict[str, Any], roles: list[RoleStatus]) -> ArrayStatus | None:
    """A sweep's elements (role 0's replicas) with their indices and values."""
    from torchx.specs.status import (
        ArrayStatus,
    )  # a status read: not on `torchx run --dryrun`'s path (bench_cli)

    array = request.get("array")
    if array is None or not roles:
        return None

    return ArrayStatus.of(
        [r.state for r in sorted(roles[0].replicas, key=lambda r: r.id)],
        indices=array.get("indices"),
        values=array.get("values"),
        size=array.get("size"),
    )
