"""How a scheduler's ``DescribeAppResponse`` becomes the ``AppStatus`` that ``torchx
status``, ``--json`` and the dashboard show: the root cause (the scheduler's, else the
first failed replica), the attempts completed with the current one, how far the app is,
and a sweep's replicas and root cause numbered by their elements' indices."""

from __future__ import annotations

import time

from torchx.specs.api import AppStatus, is_started, is_terminal
from torchx.specs.failure import Failure
from torchx.specs.status import AppState
from torchx.util.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.schedulers.api import DescribeAppResponse, Scheduler
    from torchx.specs.attempts import Attempt
    from torchx.specs.failure import Failure
    from torchx.specs.progress import Progress
    from torchx.specs.status import ArrayStatus


logger = get_logger(__name__)


def status_from(
    desc: DescribeAppResponse,
    scheduler: Scheduler[Any],
    *,
    progress: bool,
    element_progress: bool,
) -> AppStatus:
    """The status of the app ``desc`` describes (see :meth:`torchx.runner.Runner.status`
    for ``progress`` and ``element_progress``)."""
    status = AppStatus(
        state=desc.state,
        num_restarts=desc.num_restarts,
        msg=desc.msg,
        structured_error_msg=desc.structured_error_msg,
        ui_url=desc.ui_url,
        roles=desc.roles_statuses,
        failure=failure_of(desc),
        waiting=desc.waiting if not is_started(desc.state) else None,
        timeline=list(desc.timeline),
    )
    status.attempts = attempts_of(desc, status)
    if desc.array is not None:
        status.array = desc.array
        if status.failure is not None:
            name_element(status.failure, desc.array)
        number_by_element(status, desc.array)
        if element_progress and desc.roles_statuses:
            # its thread pool is for `status --json` of a sweep only (bench_cli: status)
            from torchx.runner._element_progress import read_element_progress

            role = desc.roles_statuses[0].role
            read_element_progress(scheduler, desc.app_id, role, desc.array)
    if progress and is_started(desc.state) and desc.array is None:
        # a sweep's progress is its elements' (the Sweep line), not element 0's
        status.progress = progress_of(desc)
    return status


def attempts_of(desc: DescribeAppResponse, status: AppStatus) -> list[Attempt]:
    """The app's attempts: the scheduler's, completed with the current one (its state,
    failure, and times from the timeline)."""
    from torchx.specs.attempts import with_current

    starts = {phase.phase: phase.start for phase in status.timeline}
    return with_current(
        desc.attempts,
        max(desc.num_restarts, 0),
        state=status.state,
        failure=status.failure,
        start=starts.get("running"),
        end=starts.get("finished"),
    )


def progress_of(desc: DescribeAppResponse) -> Progress | None:
    """How far a started app is: the last report in the end of its first role's replica 0
    log, where its scheduler can read that (``progress_tail``); None otherwise."""
    if desc.progress_tail is None:
        return None

    from torchx.specs.progress import from_log_tail

    try:
        tail = desc.progress_tail()
    except Exception as e:  # progress is extra: a log that cannot be read hides it only
        logger.debug("cannot read the progress of %s: %s", desc.app_id, e)
        return None
    role = desc.roles_statuses[0].role if desc.roles_statuses else ""
    running = not is_terminal(desc.state)
    return from_log_tail(tail, role, 0, running=running, now=time.time())


def name_element(failure: Failure, array: ArrayStatus) -> None:
    """A sweep's root cause names its element: the first failed one (the scheduler's
    replica ids are the elements' positions)."""
    elements = array.elements
    if not 0 <= failure.replica_id < len(elements):
        return
    element = elements[failure.replica_id]
    values = ", ".join(f"{k}={v}" for k, v in element.values.items())
    where = f"sweep element {element.index}" + (f" ({values})" if values else "")
    failure.message = f"{where}: {failure.message}" if failure.message else where


def number_by_element(status: AppStatus, array: ArrayStatus) -> None:
    """A sweep's replicas and root cause are numbered by their elements' indices, as its
    ``Msg:``, its logs and ``$TORCHX_ARRAY_INDEX`` number them (the scheduler's ids are the
    elements' positions in this submission: ``--retry-failed`` of 3 and 7 is 0 and 1)."""
    indices = [element.index for element in array.elements]
    for role in status.roles:
        for replica in role.replicas:
            if 0 <= replica.id < len(indices):
                replica.id = indices[replica.id]
    failure = status.failure
    if failure is not None and 0 <= failure.replica_id < len(indices):
        failure.replica_id = indices[failure.replica_id]


def failure_of(desc: DescribeAppResponse) -> Failure | None:
    """The root cause of a FAILED app: the scheduler's, else the first failed replica it
    lists, with the scheduler's message and an ``unknown`` cause (nothing more is known)."""

    if desc.state != AppState.FAILED:
        return None
    if desc.failure is not None:
        return desc.failure

    for role in desc.roles_statuses:
        for replica in sorted(role.replicas, key=lambda r: r.id):
            if replica.state == AppState.FAILED:
                return Failure(role=role.role, replica_id=replica.id, message=desc.msg or "")
    return Failure(role="", replica_id=-1, message=desc.msg or "")
