"""An image pull in progress, from kubelet's events: a pod's status says only
``ContainerCreating`` while kubelet pulls, so ``describe`` reads the events of one such
pod (one call, made only while the app waits to start) to say what it waits for."""

from __future__ import annotations

import re

from torchx.schedulers._kubernetes.failure import unix_time
from torchx.specs.timeline import Phase

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.schedulers.api import DescribeAppResponse

__all__ = ["awaiting_start", "with_image_pull"]

_IMAGE = re.compile(r'image "([^"]+)"')


def awaiting_start(pods: list[dict[str, Any]]) -> str | None:
    """The name of a pod that is bound to a node but none of whose containers has started
    (kubelet is making its sandbox or pulling its images), or None."""
    for pod in pods:
        status = pod.get("status") or {}
        bound = any(
            c.get("type") == "PodScheduled" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        started = any(
            (c.get("state") or {}).get(key)
            for c in status.get("containerStatuses") or ()
            for key in ("running", "terminated")
        )
        if bound and not started and status.get("phase") == "Pending":
            return str((pod.get("metadata") or {}).get("name"))
    return None


def _when(event: dict[str, Any]) -> float | None:
    return unix_time(event.get("eventTime") or event.get("firstTimestamp"))


def _pull(events: list[dict[str, Any]]) -> tuple[str, float | None] | None:
    """(the image of the last pull, when that pull ended or None) from a pod's events."""
    began = [e for e in events if e.get("reason") == "Pulling" and _when(e) is not None]
    if not began:
        return None
    last = max(began, key=lambda e: _when(e) or 0.0)
    start = _when(last) or 0.0
    found = _IMAGE.search(str(last.get("message") or ""))
    image = found.group(1) if found else ""
    done = [
        t
        for e in events
        if e.get("reason") == "Pulled"
        and (t := _when(e)) is not None
        and t >= start
        and (not image or image in str(e.get("message") or ""))
    ]
    return image, (min(done) if done else None)


def with_image_pull(response: DescribeAppResponse, events: list[dict[str, Any]]) -> None:
    """Says, on a response that waits to start, that kubelet pulls an image: ``waiting``
    names it while the pull lasts, and the timeline's start-up becomes ``pulling_image``
    (then ``starting`` again once the image is there)."""
    pull = _pull(events)
    if pull is None or response.waiting is None or response.waiting.phase != "starting":
        return
    image, done = pull
    if done is None:
        response.waiting.reason = f"pulling image {image}"
    phases = response.timeline
    at = next((i for i, p in enumerate(phases) if p.phase == "starting"), None)
    if at is None:
        return
    # from the pod's binding: kubelet makes its sandbox first, a moment against a pull
    bound = phases[at]
    phases[at] = Phase("pulling_image", bound.start, done, image or None)
    if done is not None:
        phases.insert(at + 1, Phase("starting", done, bound.end, None))
