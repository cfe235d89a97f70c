"""What the Ray-backed tests share: the cluster of tools/ray-up.sh (its dashboard, its GCS
and the Python it runs, for a test that starts a driver itself)."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from typing import Any

DASHBOARD = f"http://127.0.0.1:{os.environ.get('TORCHX_TEST_RAY_PORT', '8265')}"
GCS_ADDRESS = f"127.0.0.1:{os.environ.get('TORCHX_TEST_RAY_GCS_PORT', '6390')}"
_STATE = Path(os.environ.get("TORCHX_CI_STATE", "/tmp/torchx-ci")) / "ray"
RAY_PYTHON = _STATE / "venv/bin/python"
LOGS = _STATE / "tmp/session_latest/logs"
"""The head node's log directory."""
NODE_LOGS = (LOGS, _STATE / "tmp-worker/session_latest/logs")
"""Each node's log directory (one machine, a temp dir per node, as on two machines)."""


def dashboard_get(path: str) -> Any:
    """A GET of the dashboard, behind torchx's back (what Ray itself says)."""
    with urllib.request.urlopen(DASHBOARD + path, timeout=30) as response:
        return json.load(response)


def alive_actors(app_id: str) -> dict[str, int]:
    """The app's actors that Ray still has alive: their names and worker process ids."""
    actors = dashboard_get("/api/v0/actors?detail=1&limit=10000")["data"]["result"]["result"]
    return {
        a["name"]: int(a.get("pid") or 0)
        for a in actors
        if str(a.get("name", "")).startswith(app_id + "/") and a.get("state") != "DEAD"
    }
