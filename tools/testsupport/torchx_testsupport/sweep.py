"""What the sweep tests of every backend share: a component whose elements print their
values and index, fail where told, and can note when they start and end (to see
``--max-parallel`` honoured), and the checks of what ``status`` makes of a sweep.

Used by path: ``torchx run --sweep lr=0.1,0.2 --sweep batch=8,16 f"{COMPONENT}"``.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from torchx.specs import AppDef, Resource, Role

COMPONENT = f"{Path(__file__)}:train"
"""The component, as ``torchx run`` and ``Runner.run_sweep`` take it."""


def train(
    lr: float = 0.1,
    batch: int = 8,
    *,
    fail_batch: int = 0,
    image: str = "/tmp",
    record: str = "",
    hold: int = 0,
    memMB: int = 128,
) -> AppDef:
    """An element of a sweep: prints ``lr=.. batch=.. index=.. size=..``; exits 3 when
    ``batch == fail_batch``; appends ``start INDEX``/``end INDEX`` to ``record`` around a
    ``hold`` of that many seconds."""
    lines = [f'echo "lr={lr} batch={batch} index=$TORCHX_ARRAY_INDEX size=$TORCHX_ARRAY_SIZE"']
    if record:
        path = shlex.quote(record)
        lines.append(f'echo "start $TORCHX_ARRAY_INDEX" >> {path}')
    if hold:
        lines.append(f"sleep {hold}")
    if record:
        lines.append(f'echo "end $TORCHX_ARRAY_INDEX" >> {path}')
    lines.append(f"[ {batch} -ne {fail_batch} ]")
    return AppDef(
        name="sweep",
        roles=[
            Role(
                name="train",
                image=image,
                entrypoint="sh",
                args=["-c", "; ".join(lines)],
                resource=Resource(cpu=1, gpu=0, memMB=memMB),
            )
        ],
    )


def most_at_once(record: str) -> int:
    """The most elements the ``start``/``end`` lines of ``record`` show running at once."""
    running = most = 0
    for line in record.splitlines():
        running += 1 if line.startswith("start") else -1
        most = max(most, running)
    return most


FAILED_2X2 = {
    1: "sweep element 1 (lr=0.1, batch=16)",
    3: "sweep element 3 (lr=0.2, batch=16)",
}
"""The failed elements of ``--sweep lr=0.1,0.2 --sweep batch=8,16`` with ``fail_batch``
16, as a root cause names them; which fails first is the scheduler's timing."""


def names_a_failed_element(replica_id: int, message: str) -> bool:
    """Whether a 2x2 sweep's root cause (``replica_id``, ``message``) is one of its failed
    elements, named with its values."""
    return replica_id in FAILED_2X2 and message.startswith(FAILED_2X2[replica_id])


ARRAY_2X2 = {
    "size": 4,
    "states": {"SUCCEEDED": 2, "FAILED": 2},
    "failed": [1, 3],
    "elements": [
        {"index": 0, "args": {"lr": "0.1", "batch": "8"}, "state": "SUCCEEDED", "progress": None},
        {"index": 1, "args": {"lr": "0.1", "batch": "16"}, "state": "FAILED", "progress": None},
        {"index": 2, "args": {"lr": "0.2", "batch": "8"}, "state": "SUCCEEDED", "progress": None},
        {"index": 3, "args": {"lr": "0.2", "batch": "16"}, "state": "FAILED", "progress": None},
    ],
}
"""``status --json``'s ``"array"`` of that 2x2 sweep once it ended."""

LOG_2X2 = [f"lr={lr} batch={b} index={i} size=4" for i, (lr, b) in enumerate(
    [("0.1", 8), ("0.1", 16), ("0.2", 8), ("0.2", 16)]
)]  # fmt: skip
"""What each element of that sweep prints, by index."""
