"""When a pod that cannot pull its image fails the app (run option image_pull_timeout)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from torchx.schedulers._kubernetes.request import ANNOTATION_IMAGE_PULL_TIMEOUT
from torchx.schedulers._kubernetes.status import image_pull_failure
from torchx.specs import AppState


def pod(reason: str, scheduled_s_ago: float, timeout: str | None = None) -> dict[str, Any]:
    at = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=scheduled_s_ago)
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    annotations = {ANNOTATION_IMAGE_PULL_TIMEOUT: timeout} if timeout is not None else {}
    return {
        "metadata": {"annotations": annotations, "creationTimestamp": "2020-01-01T00:00:00Z"},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}],
            "containerStatuses": [
                {"name": "c", "image": "reg/img:1", "state": {"waiting": {"reason": reason}}}
            ],
        },
    }


def test_a_failed_pull_fails_only_after_the_timeout_since_scheduling() -> None:
    assert image_pull_failure(pod("ImagePullBackOff", 60)) == ""  # default 300 s
    assert image_pull_failure(pod("ErrImagePull", 301)).startswith(
        "image reg/img:1 cannot be pulled for over 300 s (run option image_pull_timeout)"
    )
    assert image_pull_failure(pod("ImagePullBackOff", 11, timeout="10")).endswith(
        ": ImagePullBackOff"
    )


def test_zero_waits_without_end_and_bad_names_fail_at_once() -> None:
    assert image_pull_failure(pod("ImagePullBackOff", 10_000, timeout="0")) == ""
    assert "InvalidImageName" in image_pull_failure(pod("InvalidImageName", 0))
    assert image_pull_failure(pod("ContainerCreating", 10_000)) == ""


def test_a_container_restarting_in_a_running_pod_says_why() -> None:
    from torchx.schedulers._kubernetes.status import describe_batch
    from torchx.specs import AppState

    job = {
        "metadata": {"name": "app-sh", "labels": {"torchx.pytorch.org/role-name": "sh"}},
        "spec": {"completions": 1, "template": {"spec": {"containers": []}}},
        "status": {"active": 1},
    }
    crashing = pod("CrashLoopBackOff", 30)
    crashing["metadata"].update(
        name="app-sh-0-x",
        labels={"job-name": "app-sh", "batch.kubernetes.io/job-completion-index": "0"},
    )
    crashing["status"]["phase"] = "Running"
    crashing["status"]["containerStatuses"][0]["state"]["waiting"]["message"] = "back-off 20s"
    status = describe_batch("ns:batch:app", "ns", [job], [crashing])
    assert status.state == AppState.RUNNING
    assert status.msg == "restarting: app-sh-0-x: CrashLoopBackOff: back-off 20s"
    # between two back-offs kubelet reports the exit it restarts from (seen on 1.36)
    container = crashing["status"]["containerStatuses"][0]
    container.update(restartCount=3, state={"terminated": {"exitCode": 1, "reason": "Error"}})
    status = describe_batch("ns:batch:app", "ns", [job], [crashing])
    assert status.state == AppState.RUNNING
    assert status.msg == "restarting: app-sh-0-x: container c exited with 1 (Error), restarting"
    container.update(restartCount=0, state={"terminated": {"exitCode": 0}})  # a finished sidecar
    assert describe_batch("ns:batch:app", "ns", [job], [crashing]).msg == "<NONE>"


def test_a_finished_pull_is_followed_by_starting_again() -> None:
    """kubelet's events: the image is there, the container is being made; the app waits
    for that, no longer for the image."""
    from torchx.schedulers._kubernetes.pulls import with_image_pull
    from torchx.schedulers.api import DescribeAppResponse
    from torchx.specs.timeline import Phase, Waiting

    response = DescribeAppResponse(app_id="ns:batch:a", state=AppState.PENDING)
    response.waiting = Waiting(phase="starting", reason="", since=10.0)
    response.timeline = [Phase("submitted", 1.0, 1.0), Phase("starting", 10.0, None)]
    events = [
        {"reason": "Scheduled", "firstTimestamp": "2026-11-29T00:00:10Z"},
        {"reason": "Pulling", "message": 'Pulling image "r/i:1"',
         "firstTimestamp": "2026-11-29T00:00:11Z"},
        {"reason": "Pulled", "message": 'Successfully pulled image "r/i:1" in 3s',
         "eventTime": "2026-11-29T00:00:14.500000Z"},
    ]  # fmt: skip
    with_image_pull(response, events)
    assert response.waiting.reason == ""  # not pulling any more
    pulled = 1795910414.5
    assert [(p.phase, p.start, p.end, p.detail) for p in response.timeline] == [
        ("submitted", 1.0, 1.0, None),
        ("pulling_image", 10.0, pulled, "r/i:1"),
        ("starting", pulled, None, None),
    ]
