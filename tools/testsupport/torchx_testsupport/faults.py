"""Fault injection for the tests of issue 24: restart a real service while torchx waits on
it or follows a log through it, then count what came through.

Each fault test records one row (``record_fault``) into ``$TORCHX_FAULT_RECORD`` when set:
``benchmarks/bench_faults.py`` runs the fault tests with it and renders the table of
faults injected, survived and lines lost (docs/faults.md).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

RESTART = Path(__file__).resolve().parents[2] / "restart.sh"  # tools/restart.sh
TORCHX = str(Path(sys.executable).parent / "torchx")


def numbered_script(n: int, delay_s: float) -> str:
    """A shell loop printing ``line-1`` .. ``line-N``, one every ``delay_s`` seconds."""
    return f"for i in $(seq 1 {n}); do echo line-$i; sleep {delay_s}; done"


def count_lines(text: str, n: int) -> tuple[int, int]:
    """(lines lost, lines repeated) of ``line-1``..``line-N`` in ``text`` (each line may
    carry a prefix, such as the ``role/replica`` of ``torchx log``)."""
    seen = [m.group(0) for m in re.finditer(r"\bline-\d+$", text, re.MULTILINE)]
    lost = sum(1 for i in range(1, n + 1) if f"line-{i}" not in seen)
    return lost, len(seen) - len(set(seen))


def restart(service: str, down_s: float = 3) -> None:
    """Stops ``service`` (slurmctld, dockerd, moto, mlflow), waits ``down_s``, starts it."""
    proc = subprocess.run(
        ["bash", str(RESTART), service, str(down_s)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"could not restart {service}: {proc.stderr.strip() or proc.stdout}")


class _Restart(threading.Thread):
    """:func:`restart` in a thread; ``join`` raises what stopped it, so a test whose fault
    was never injected fails instead of passing without one."""

    def __init__(self, service: str, down_s: float) -> None:
        super().__init__(daemon=True)
        self.service, self.down_s = service, down_s
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            restart(self.service, self.down_s)
        except BaseException as e:  # pytest.fail raises an exception pytest knows
            self.errors.append(e)

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self.errors and not self.is_alive():
            raise self.errors[0]


def restart_in_background(service: str, down_s: float = 3) -> threading.Thread:
    """:func:`restart` in a thread (joined by the caller), so the test keeps reading."""
    thread = _Restart(service, down_s)
    thread.start()
    return thread


def record_fault(
    backend: str,
    fault: str,
    *,
    survived: bool,
    lost: int | str = "-",
    repeated: int | str = "-",
    outcome: str = "",
) -> None:
    """Adds this test's row to the fault table (when ``$TORCHX_FAULT_RECORD`` is set)."""
    path = os.environ.get("TORCHX_FAULT_RECORD")
    if not path:
        return
    row: dict[str, Any] = {
        "backend": backend,
        "fault": fault,
        "survived": survived,
        "lost": lost,
        "repeated": repeated,
        "outcome": outcome,
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


class Followed:
    """What ``torchx log --tail`` printed while the service went away and came back."""

    def __init__(self, proc: subprocess.Popen[str], lines: int) -> None:
        self.out, self.err = proc.communicate(timeout=240)
        self.returncode = proc.returncode
        self.lost, self.repeated = count_lines(self.out, lines)

    @property
    def survived(self) -> bool:
        return self.returncode == 0 and not self.lost and not self.repeated

    def record(self, backend: str, fault: str, end: str = "followed to the end") -> None:
        record_fault(
            backend, fault, survived=self.survived, lost=self.lost, repeated=self.repeated,
            outcome=end if self.survived else self.err.strip()[-200:],
        )  # fmt: skip

    def why(self) -> tuple[Any, ...]:
        return self.returncode, self.lost, self.repeated, self.out[-300:], self.err


def follow_through_restart(
    replica: str, service: str, lines: int, *, down_s: float = 3, lead_s: float = 1
) -> Followed:
    """Follows ``replica`` (``HANDLE/ROLE/K``) with ``torchx log --tail`` and, ``lead_s``
    seconds in (so some lines came before), restarts ``service``; what came through."""
    import time

    follower = subprocess.Popen(
        [TORCHX, "log", "--tail", replica],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(lead_s)
    restarting = restart_in_background(service, down_s)
    followed = Followed(follower, lines)
    restarting.join()
    return followed
