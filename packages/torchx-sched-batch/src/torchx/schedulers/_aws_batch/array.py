"""A sweep on AWS Batch: one array job (``arrayProperties.size``), child ``i`` running
element ``i``.

The job definition is a single-container one whose command is ``/bin/sh`` picking the
element from the child's index (``AWS_BATCH_JOB_ARRAY_INDEX``; else the ``:INDEX`` end of
``AWS_BATCH_JOB_ID``, all an emulator sets). The elements' indices and values ride in the
job's ``parameters`` (``torchxArray``), which ``DescribeJobs`` returns. Batch runs an
array's children all at once or one after another (``SEQUENTIAL``): ``max_parallel`` 1 is
the latter; any other limit below the size is refused.
"""

from __future__ import annotations

from torchx.schedulers._aws_batch.request import node_range

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from torchx.schedulers.api import DescribeAppResponse
    from torchx.specs.sweep import AppArray

__all__ = ["PARAMETER", "array_job", "child_ids", "describe_array", "is_array"]

PARAMETER = "torchxArray"
"""The job parameter holding a sweep's elements (JSON)."""
_POSITION = "${AWS_BATCH_JOB_ARRAY_INDEX:-${AWS_BATCH_JOB_ID##*:}}"


def array_job(
    array: AppArray,
    name: str,
    app_id: str,
    container_extra: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the job definition's container properties, what ``SubmitJob`` adds: the array's
    size, its dependency type, the elements' parameter) of a sweep."""
    import json

    from torchx.specs.api import macros
    from torchx.specs.sweep import shell_dispatch
    from torchx.util.startup.lazy_dataclass import shallow_copy

    size = len(array.elements)
    if array.max_parallel is not None and 1 < array.max_parallel < size:
        raise ValueError(
            f"max_parallel={array.max_parallel}: AWS Batch runs an array's children all at"
            " once or one after another; give --max-parallel 1, none, or limit the compute"
            " environment's vCPUs"
        )
    values = macros.Values(img_root="", app_id=app_id, replica_id="0", rank0_env="")
    role = shallow_copy(array.role)
    role.entrypoint = "/bin/sh"
    role.args = ["-c", shell_dispatch(array, _POSITION, values.to_dict())]
    container = node_range(role, 0, 0, app_id, container_extra)["container"]
    container.pop("instanceType", None)  # a node range's, not a single container's
    submit: dict[str, Any] = {
        "arrayProperties": {"size": size},
        "parameters": {PARAMETER: json.dumps(array.record())},
    }
    if array.max_parallel == 1 and size > 1:
        submit["dependsOn"] = [{"type": "SEQUENTIAL"}]
    return container, submit


def is_array(job: Mapping[str, Any]) -> bool:
    """Whether a described job is a sweep's array job."""
    return PARAMETER in (job.get("parameters") or {})


def child_ids(job: Mapping[str, Any]) -> list[str]:
    """The job ids of a sweep's children (``ID:0`` ... ``ID:N-1``)."""
    import json

    record = json.loads((job.get("parameters") or {})[PARAMETER])
    size = len(record.get("indices") or []) or int(
        (job.get("arrayProperties") or {}).get("size") or 0
    )
    return [f"{job['jobId']}:{i}" for i in range(size)]


def describe_array(
    app_id: str,
    job: Mapping[str, Any],
    children: Sequence[Mapping[str, Any]],
    tail: Callable[[Mapping[str, Any]], str] | None = None,
) -> DescribeAppResponse:
    """The sweep of array ``job`` from its children: each element's state, the sweep's
    (every element succeeded, or all ended and one failed), the first failure."""
    import json

    from torchx.schedulers._aws_batch.state import (
        _node_host,
        _root_cause,
        app_state,
        failure_message,
        node_failure,
        timing,
    )
    from torchx.schedulers.api import DescribeAppResponse
    from torchx.settings import ENV_TORCHX_ROLE_NAME
    from torchx.specs.status import AppState, ArrayStatus, ReplicaStatus, RoleStatus

    record = json.loads((job.get("parameters") or {})[PARAMETER])
    by_id = {str(c.get("jobId")): c for c in children}
    ids = child_ids(job)
    env = {
        str(e.get("name")): str(e.get("value"))
        for e in ((job.get("container") or {}).get("environment") or [])
    }
    role = env.get(ENV_TORCHX_ROLE_NAME) or "role"
    states: list[AppState] = []
    replicas: list[ReplicaStatus] = []
    failed = []
    for position, child_id in enumerate(ids):
        child = by_id.get(child_id)
        state = app_state(child) if child is not None else AppState.PENDING
        if app_state(job) == AppState.CANCELLED and state not in (
            AppState.SUCCEEDED,
            AppState.FAILED,
        ):
            state = AppState.CANCELLED
        states.append(state)
        host = _node_host(child) if child is not None else ""
        replicas.append(ReplicaStatus(position, state, role, host))
        if child is not None and state == AppState.FAILED:
            failed.append((node_failure(role, position, child), child))
    status = ArrayStatus.of(
        states, indices=record.get("indices"), values=record.get("values"), size=record.get("size")
    )
    state = status.state()
    phases, waiting = timing(job, state)
    response = DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=0,
        roles_statuses=[RoleStatus(role, replicas)],
        array=status,
        timeline=phases,
        waiting=waiting,
    )
    if state == AppState.FAILED:
        response.failure = _root_cause(failed, [role], tail)
        response.msg = status.failed_message()
    elif failed:
        response.msg = failure_message(failed[0][1])
    return response
