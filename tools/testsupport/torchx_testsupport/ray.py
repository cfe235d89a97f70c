"""What the Ray-backed tests share: the dashboard of tools/ray-up.sh's cluster."""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

DASHBOARD = f"http://127.0.0.1:{os.environ.get('TORCHX_TEST_RAY_PORT', '8265')}"


def dashboard_get(path: str) -> Any:
    """A GET of the dashboard, behind torchx's back (what Ray itself says)."""
    with urllib.request.urlopen(DASHBOARD + path, timeout=30) as response:
        return json.load(response)
