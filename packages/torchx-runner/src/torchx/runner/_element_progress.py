"""How far each element of a sweep is: the last ``torchx.progress`` report in each
element's own log (``torchx status --json``'s ``"array"`` elements' ``"progress"``).

A sweep's own progress is its elements counted (``Progress: 17/20 elements done``); this is
each element's, read only when asked for (one filtered log read per started element, a few
side by side, at most :data:`MAX_ELEMENTS` of them).
"""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from torchx.progress import MARK
from torchx.specs.progress import from_log_tail
from torchx.specs.status import is_started, is_terminal
from torchx.util.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.schedulers.api import Scheduler
    from torchx.specs.status import ArrayElementStatus, ArrayStatus

__all__ = ["MAX_ELEMENTS", "read_element_progress"]

logger = get_logger(__name__)

MAX_ELEMENTS = 256
"""Elements whose progress one status read reads at most (the first started ones); the
others' ``"progress"`` stays ``null``."""
_READERS = 8
_TAIL_REPORTS = 32
"""Reports kept of an element's log: the last one, and earlier ones for its rate."""


def read_element_progress(
    scheduler: Scheduler[Any], app_id: str, role: str, array: ArrayStatus
) -> None:
    """Fills in the ``progress`` of each started element of ``array`` (in place)."""
    started = [(p, e) for p, e in enumerate(array.elements) if is_started(e.state)]
    now = time.time()

    def read(item: tuple[int, ArrayElementStatus]) -> None:
        position, element = item
        try:
            lines = scheduler.log_iter(app_id, role, position, regex=MARK)
            tail = "".join(deque(lines, maxlen=_TAIL_REPORTS))
        except Exception as e:  # progress is extra: a log that cannot be read hides it only
            logger.debug("cannot read the progress of %s element %d: %s", app_id, element.index, e)
            return
        running = not is_terminal(element.state)
        element.progress = from_log_tail(tail, role, element.index, running=running, now=now)

    with ThreadPoolExecutor(max_workers=_READERS, thread_name_prefix="element-progress") as pool:
        list(pool.map(read, started[:MAX_ELEMENTS]))
