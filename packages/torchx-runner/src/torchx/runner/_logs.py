"""Following a log for as long as its replica runs, through outages of the scheduler's
service (a restarted API server, a dropped connection)."""

from __future__ import annotations

from torchx.util.support.retry import within_outage_budget

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import TypeVar

    T = TypeVar("T")

__all__ = ["PatientLog"]


class PatientLog:
    """A followed log whose every read rides out outages of the scheduler's service
    (:func:`torchx.util.support.retry.within_outage_budget`), whether read as lines or,
    where the scheduler offers them (log files), as ``raw_chunks()``."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = lines
        raw = getattr(lines, "raw_chunks", None)
        if raw is not None:
            self.raw_chunks = lambda: self._within_outage_budget(raw())

    @staticmethod
    def _within_outage_budget(items: Iterable[T]) -> Iterator[T]:
        return within_outage_budget(iter(items))

    def __iter__(self) -> Iterator[str]:
        return self._within_outage_budget(self._lines)
