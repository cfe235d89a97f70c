"""Starts a sweep's elements K at a time on ``local_docker``: the daemon has no queue, so
``schedule`` creates every element's container, starts the first K and leaves this
process (detached, ``python -m torchx.schedulers._docker.starter APP_ID K``) to start the
next one each time one ends. It stops once every container was started, or when the app
is cancelled or removed; its own errors go to ``$TORCHX_HOME/local_docker/APP_ID.starter.log``.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

POLL_S = 0.5
_BUSY = ("running", "restarting", "paused")


def log_path(app_id: str) -> str:
    from torchx.util.support.home import torchx_home

    return os.path.join(torchx_home(), "local_docker", f"{app_id}.starter.log")


def _api() -> Any:
    """The daemon's API, as the scheduler reaches it (its light client, else the SDK's)."""
    from torchx.schedulers._docker import client as engine
    from torchx.schedulers._docker import retry

    light = engine.from_env()
    if light is not None:
        return retry.RetryingApi(light, light.address)
    import docker

    return retry.RetryingApi(docker.from_env().api, "DOCKER_HOST")


def start_in_turn(app_id: str, permits: int) -> None:
    """Starts the app's created containers in position order, at most ``permits``
    running at once, until none is left to start (or the app was cancelled)."""
    from torchx.schedulers._docker.request import LABEL_APP_ID, LABEL_CANCELLED, LABEL_REPLICA_ID

    api = _api()
    cancelled = {"label": [f"{LABEL_APP_ID}={app_id}", LABEL_CANCELLED]}
    while True:
        found = api.containers(all=True, filters={"label": [f"{LABEL_APP_ID}={app_id}"]})
        waiting = sorted(
            (s for s in found if s.get("State") == "created"),
            key=lambda s: int((s.get("Labels") or {}).get(LABEL_REPLICA_ID, "0") or 0),
        )
        if not waiting or (api.volumes(filters=cancelled) or {}).get("Volumes"):
            return
        busy = sum(1 for s in found if s.get("State") in _BUSY)
        for summary in waiting[: max(0, permits - busy)]:
            api.start(summary["Id"])
        time.sleep(POLL_S)


def main(argv: list[str]) -> int:
    app_id, permits = argv[1], int(argv[2])
    start_in_turn(app_id, permits)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
