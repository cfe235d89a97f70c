"""Upstream's small public modules ``torchx.util.datetime`` and ``torchx.util.cuda``."""

from __future__ import annotations

import subprocess
import sys
import time


def test_past_epoch_time() -> None:
    from torchx.util.datetime import get_past_epoch_time

    now = int(time.time())
    assert abs(get_past_epoch_time(0) - now) <= 1
    assert abs(get_past_epoch_time(2) - (now - 2 * 86400)) <= 3601  # a DST change at most


def test_has_cuda_devices_matches_torch_and_imports_it_only_when_asked() -> None:
    code = (
        "import sys, torchx.util.cuda as c\n"
        "assert 'torch' not in sys.modules\n"
        "import torch\n"
        "found = torch.cuda.is_available() and torch.cuda.device_count() > 0\n"
        "print(c.has_cuda_devices() == found)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
