"""Running apps on the real test cluster from a test: small one-role apps, run options,
and following an app's state through real watches until it reaches what a test waits for."""

from __future__ import annotations

import time
from collections.abc import Callable

from torchx.schedulers.api import DescribeAppResponse
from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler
from torchx.specs import AppDef, AppState, Resource, Role
from torchx_testsupport.k8s.cluster import IMAGE

# small requests: the node has 2 CPUs and several apps of the suite may be on it at once
SMALL = Resource(cpu=1, gpu=0, memMB=1152)  # requests 900m CPU, 128 MB


def sh(script: str, replicas: int = 1, image: str = IMAGE, resource: Resource = SMALL) -> AppDef:
    """A one-role app (role ``sh``) running ``script`` in the test image."""
    role = Role("sh", image, entrypoint="sh", args=["-c", script], num_replicas=replicas)
    role.resource = resource
    return AppDef("app", [role])


def batch(namespace: str, **extra: object) -> dict[str, object]:
    return {"queue": "-", "job_type": "batch", "namespace": namespace, **extra}


def until(
    sched: KubernetesScheduler,
    app_id: str,
    done: Callable[[DescribeAppResponse], bool],
    seconds: float = 180,
) -> DescribeAppResponse:
    """Describes the app at each change (a real watch) until ``done`` holds."""
    deadline = time.monotonic() + seconds
    while True:
        status = sched.describe(app_id)
        assert status is not None, f"{app_id} is gone"
        if done(status):
            return status
        assert time.monotonic() < deadline, f"{app_id}: still {status.state} ({status.msg})"
        # pod-only changes (an image pull backing off) do not touch the Job: look again soon
        sched.wait_for_change(app_id, 2)


def finished(status: DescribeAppResponse) -> bool:
    return status.state in (AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED)
