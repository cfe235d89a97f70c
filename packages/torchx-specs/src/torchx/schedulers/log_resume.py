"""Resuming a followed log after its stream broke, with no line lost or repeated.

Docker and Kubernetes end a log stream when the daemon or the API server restarts, or
when a proxy drops the connection, while the program goes on writing. Both can stamp each
entry with its time (RFC 3339, nanoseconds) and start a log at a given second; a follower
remembers the stamp of the last entry it gave out and how many entries carried that very
stamp, asks again from that second, and skips what it already gave.
"""

from __future__ import annotations

__all__ = ["ResumePoint", "Stamp", "parse_stamp"]

Stamp = tuple[str, int]
"""(``YYYY-MM-DDTHH:MM:SS``, nanoseconds): ordered as the time is."""


def parse_stamp(raw: bytes | str) -> Stamp | None:
    """The stamp of ``2026-11-25T19:40:01.123456789Z`` (fewer digits, or none, too); None
    for anything else."""
    text = raw.decode("ascii", "replace") if isinstance(raw, bytes) else raw
    text = text.strip().rstrip("Z")
    seconds, _, fraction = text.partition(".")
    if len(seconds) != 19 or seconds[10] != "T" or (fraction and not fraction.isdigit()):
        return None
    return seconds, int(fraction[:9].ljust(9, "0")) if fraction else 0


class ResumePoint:
    """The last entry a follower gave out; decides which entries of a new stream are new."""

    def __init__(self) -> None:
        self.last: Stamp | None = None
        self._at_last = 0  # entries given out that carry the stamp `last`
        self._skip = 0

    def resume(self) -> int | None:
        """Call before asking for the log again: the Unix second to ask from (None: from
        the start, nothing was given out yet)."""
        self._skip = self._at_last
        if self.last is None:
            return None
        from datetime import datetime, timezone

        at = datetime.strptime(self.last[0], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
        return int(at.timestamp())

    def fresh(self, stamp: Stamp | None) -> bool:
        """Whether the entry stamped ``stamp`` was not given out yet (then it counts as
        given). An entry without a stamp is always fresh."""
        if stamp is None:
            return True
        if self.last is not None:
            if stamp < self.last:
                return False
            if stamp == self.last and self._skip:
                self._skip -= 1
                return False
        self._at_last = self._at_last + 1 if stamp == self.last else 1
        self.last = stamp
        return True
