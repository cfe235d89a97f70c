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

POLL_S = 0.5
_BUSY = ("running", "restarting", "paused")


def log_path(app_id: str) -> str:
    from torchx.util._support.home import torchx_home

    return os.path.join(torchx_home(), "local_docker", f"{app_id}.starter.log")


def start_in_turn(app_id: str, permits: int) -> None:
    """Starts the app's created containers in position order, at most ``permits``
    running at once, until none is left to start."""
    from torchx.schedulers.docker_scheduler import LABEL_REPLICA_ID, create_scheduler

    scheduler = create_scheduler("torchx")
    api = scheduler._api
    while True:
        found = scheduler._containers(app_id)
        waiting = sorted(
            (s for s in found if s.get("State") == "created"),
            key=lambda s: int((s.get("Labels") or {}).get(LABEL_REPLICA_ID, "0") or 0),
        )
        if not waiting or app_id in scheduler._cancelled_apps(app_id):
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
