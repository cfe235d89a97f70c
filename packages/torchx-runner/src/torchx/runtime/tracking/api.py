"""``ResultTracker``: a dict-like store of per-key results; ``FsspecResultTracker`` on files."""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["FsspecResultTracker", "KeyType", "ResultTracker", "ResultType"]

KeyType = int | str
"""What results are stored under (an epoch, a step, a name)."""
ResultType = int | float | str
"""One stored result value."""


class ResultTracker(abc.ABC):
    """Stores a mapping of results under a key; ``tracker[key]`` reads, ``tracker[key] = d``
    writes (replacing what was there)."""

    def __getitem__(self, key: KeyType) -> dict[str, Any]:
        return self.get(key)

    def __setitem__(self, key: KeyType, results: Mapping[str, Any]) -> None:
        self.put(key, **results)

    @abc.abstractmethod
    def put(self, key: str | int, **results: Any) -> None:
        """Stores ``results`` (JSON-serializable values) under ``key``."""

    @abc.abstractmethod
    def get(self, key: str | int) -> dict[str, Any]:
        """The results stored under ``key``; ``{}`` when nothing was stored."""


class FsspecResultTracker(ResultTracker):
    """Keeps each key's results as a JSON file ``<tracker_base>/<key>`` (any fsspec URL)."""

    def __init__(self, tracker_base: str) -> None:
        self._tracker_base = tracker_base

    def __repr__(self) -> str:
        return f"FsspecResultTracker(tracker_base={self._tracker_base!r})"

    def _mapper(self) -> Any:
        import fsspec

        return fsspec.get_mapper(self._tracker_base, create=True)

    def put(self, key: str | int, **results: Any) -> None:
        self._mapper()[str(key)] = json.dumps(results, indent=2).encode("utf-8")

    def get(self, key: str | int) -> dict[str, Any]:
        try:
            data = self._mapper()[str(key)]
        except KeyError:
            return {}
        loaded: dict[str, Any] = json.loads(data)
        return loaded
