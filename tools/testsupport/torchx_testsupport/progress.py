"""What the progress tests of every backend share: a job that reports steps 1..3 of 4 with
a ``loss`` and then keeps running (until the test cancels it), and the check of what
``status`` makes of it."""

from __future__ import annotations

import shlex
import time
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs import AppDef

HOLD_S = 600
"""How long the job runs on after its reports: the test cancels it long before."""


def python_reporter(python: str) -> str:
    """A shell script: ``torchx.progress`` in ``python`` reports 1..3 of 4 (every call
    written), then the job waits."""
    code = (
        "import torchx.progress as p\n"
        "for i in (1, 2, 3):\n"
        "    p.report(i, total=4, loss=round(0.3 + i / 100, 2))\n"
        "    print(f'step {i} done', flush=True)\n"
    )
    return (
        f"TORCHX_PROGRESS_INTERVAL=0 {shlex.quote(python)} -c {shlex.quote(code)}; sleep {HOLD_S}"
    )


SHELL_REPORTS = (
    "for i in 1 2 3; do"
    ' echo "TORCHX_PROGRESS {\\"step\\": $i, \\"total\\": 4, \\"time\\": $(date +%s),'
    ' \\"metrics\\": {\\"loss\\": 0.3$i}}" >&2;'
    ' echo "step $i done";'
    " done"
)
"""The protocol from a job without torchx (an image with only a shell): the same reports
as :func:`python_reporter`, written by ``echo``."""

SHELL_REPORTER = f"{SHELL_REPORTS}; sleep {HOLD_S}"
""":data:`SHELL_REPORTS`, then the job waits."""


def reporting_app(image: str, script: str, replicas: int = 1, memMB: int = 256) -> AppDef:
    """One role ``train`` of ``replicas`` that runs ``script`` with ``sh -c`` in ``image``."""
    from torchx.specs import AppDef, Resource, Role

    role = Role(
        name="train",
        image=image,
        entrypoint="sh",
        args=["-c", script],
        resource=Resource(cpu=1, gpu=0, memMB=memMB),
        num_replicas=replicas,
    )
    return AppDef("reporting", [role])


def reported(runner: Any, handle: str, timeout: float = 240) -> Any:
    """The app's status once it shows the third report (fails after ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        status = runner.status(handle)
        if status is not None and status.is_terminal():
            break
        if status is not None and status.progress is not None and status.progress.step == 3:
            return status
        time.sleep(0.5)
    raise AssertionError(f"{handle}: no report of step 3 within {timeout} s: {status}")


def check_reported(status: Any) -> None:
    """Step 3 of 4, three quarters done, the last loss, from the first role's replica 0."""
    progress = status.progress
    assert (progress.step, progress.total, progress.fraction) == (3, 4, 0.75), progress
    assert progress.metrics == {"loss": 0.33}, progress
    assert progress.replica_id == 0 and progress.updated is not None, progress
    data = status.to_json()["progress"]
    assert (data["step"], data["total"], data["fraction"]) == (3, 4, 0.75)
    assert "Progress: 75% (3/4)" in status.format() and "loss=0.33" in status.format()
