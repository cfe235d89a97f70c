"""A sweep on Ray: one Ray job per element under one app id.

Element ``p`` of sweep ``ID`` is the job ``ID-p``: a one-replica app run by the usual driver,
its metadata naming the sweep (``torchx.sweep``), its position and what the element is
(index, values, the sweep's size). Nothing is submitted under ``ID`` itself: ``describe``
of ``ID`` finds no job and then reads the elements from the cluster's job list (one call).
``max_parallel`` K is a gate in the cluster: a named actor with K permits that each
element's driver holds while its replica runs (the other drivers wait for one, printing
``waiting_turn``).
"""

from __future__ import annotations

import json

from torchx.schedulers._ray.request import RayJob
from torchx.util.startup.lazy_dataclass import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from torchx.specs.sweep import AppArray

__all__ = ["META_ELEMENT", "META_SWEEP", "RaySweep", "elements_of", "gate", "sweep_state"]

META_SWEEP = "torchx.sweep"
"""An element job's metadata: the id of its sweep."""
META_ELEMENT = "torchx.sweep_element"
"""An element job's metadata: ``{"position", "index", "values", "size"}`` (JSON)."""


@dataclass
class RaySweep:
    """The jobs of a sweep, as ``schedule`` submits them (one package for all)."""

    sweep_id: str
    jobs: list[RayJob] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(job) for job in self.jobs)


def gate(array: AppArray, sweep_id: str) -> dict[str, Any] | None:
    """What the drivers of a sweep limited to ``max_parallel`` share (None: no limit)."""
    size = len(array.elements)
    if array.max_parallel is None or array.max_parallel >= size:
        return None
    return {"name": f"{sweep_id}/gate", "permits": array.max_parallel, "total": size}


def element_metadata(array: AppArray, sweep_id: str, position: int) -> dict[str, str]:
    element = array.elements[position]
    record = {
        "position": position,
        "index": element.index,
        "values": dict(element.values),
        "size": array.size_of(),
    }
    return {META_SWEEP: sweep_id, META_ELEMENT: json.dumps(record, separators=(",", ":"))}


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
    from torchx.schedulers._ray.describe import JOB_STATES
    from torchx.specs.status import AppState, ArrayStatus

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
