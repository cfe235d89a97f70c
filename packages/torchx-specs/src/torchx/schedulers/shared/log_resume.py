"""Resuming a followed log after its stream broke, with no line lost or repeated.

Docker and Kubernetes end a log stream when the daemon or the API server restarts, or
when a proxy drops the connection, while the program goes on writing. Both stamp each
entry with its time (RFC 3339, nanoseconds) and can start a log at a given time, but stamps
are neither unique (a burst shares one) nor in order (stdout and stderr are stamped by two
readers). What holds is the order of the log itself: it only grows, and asking again from
second ``S`` returns, in that order, the entries stamped at ``S`` or later. The entries a
follower already gave out are a head of the log, so they are the head of the new answer
too: it skips as many entries as it gave out stamped at ``S`` or later, and takes the rest.

A follower records an entry as given only once the whole line it belongs to was given out;
the entries of a line cut by the break are asked for again with the rest of that line.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime, timezone

__all__ = ["ResumePoint", "Stamp", "parse_stamp", "stamp_seconds"]

Stamp = tuple[str, int]
"""(``YYYY-MM-DDTHH:MM:SS``, nanoseconds): ordered as the time is."""

MARGIN_S = 2
"""How far before the newest given entry a resumed log starts: entries written after it
but stamped up to this much earlier (the other stream's reader lagging) are not lost."""


def parse_stamp(raw: bytes | str) -> Stamp | None:
    """The stamp of ``2026-11-25T19:40:01.123456789Z`` (fewer digits, or none, too); None
    for anything else."""
    text = raw.decode("ascii", "replace") if isinstance(raw, bytes) else raw
    text = text.strip().rstrip("Z")
    seconds, _, fraction = text.partition(".")
    if len(seconds) != 19 or seconds[10] != "T" or (fraction and not fraction.isdigit()):
        return None
    return seconds, int(fraction[:9].ljust(9, "0")) if fraction else 0


def stamp_seconds(stamp: Stamp) -> int:
    """The Unix second ``stamp`` falls in."""
    at = datetime.strptime(stamp[0], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return int(at.timestamp())


def _stamp_at(unix_second: int) -> Stamp:
    at = datetime.fromtimestamp(unix_second, tz=timezone.utc)
    return at.strftime("%Y-%m-%dT%H:%M:%S"), 0


class ResumePoint:
    """What a follower gave out of one log; decides which entries of a new stream are new.

    ``floor`` is the caller's own lower bound (Unix seconds), if the log was asked for
    from a given time: a resumed stream never starts before it.
    """

    def __init__(self, floor: int | None = None) -> None:
        self._floor = floor
        self._given: deque[Stamp] = deque()  # stamps of given entries recent enough to count
        self._newest: Stamp | None = None
        self._since: Stamp | None = None  # where the current stream starts (None: the start)
        self._skip = 0
        self._kept = 1024  # prune the record when it grows past twice this

    def resume(self) -> int | None:
        """Call before asking for the log again: the Unix second to ask from (None: as the
        first time, nothing was given out yet). Entries the new stream repeats are then
        refused by :meth:`fresh`."""
        if self._newest is None:
            self._since, self._skip = None, 0
            return None
        second = stamp_seconds(self._newest) - MARGIN_S
        if self._floor is not None:
            second = max(second, self._floor)
        self._since = _stamp_at(second)
        self._skip = sum(1 for s in self._given if s >= self._since)
        return second

    def fresh(self, stamp: Stamp | None) -> bool:
        """Whether the entry stamped ``stamp`` (the next of the current stream) was not
        given out yet. An entry before the resume second is refused too, for servers that
        start a log earlier than asked (Kubernetes counts back from its own clock). An
        entry without a stamp is always fresh."""
        if stamp is None:
            return True
        if self._since is not None and stamp < self._since:
            return False
        if self._skip:
            self._skip -= 1
            return False
        return True

    def given(self, *stamps: Stamp | None) -> None:
        """Records entries as given out (call once the line they form was given)."""
        for stamp in stamps:
            if stamp is None:
                continue
            self._given.append(stamp)
            if self._newest is None or stamp > self._newest:
                self._newest = stamp
        if len(self._given) > 2 * self._kept and self._newest is not None:
            oldest = _stamp_at(stamp_seconds(self._newest) - MARGIN_S - 1)
            self._given = deque(s for s in self._given if s >= oldest)
            self._kept = max(1024, len(self._given))
