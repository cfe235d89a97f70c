"""Resuming a followed log: what a second stream repeats is skipped, nothing else.

A log here is what a daemon holds: entries in the order written, each with its stamp. A
stream asked from second S gives the entries stamped at S or later, in that order; the
follower is cut after any entry and asks again.
"""

from __future__ import annotations

import itertools

from torchx.schedulers.shared.log_resume import ResumePoint, Stamp, parse_stamp, stamp_seconds


def stamp(second: int, nanos: int = 0) -> Stamp:
    parsed = parse_stamp(f"2026-11-25T10:00:{second:02d}.{nanos:09d}Z")
    assert parsed is not None
    return parsed


def from_second(log: list[tuple[Stamp, str]], since: int | None) -> list[tuple[Stamp, str]]:
    """What the daemon streams when asked from Unix second ``since``."""
    return [e for e in log if since is None or stamp_seconds(e[0]) >= since]


def follow(log: list[tuple[Stamp, str]], cuts: list[int]) -> list[str]:
    """Follows ``log`` through a stream cut after ``cuts[i]`` entries of each stream."""
    point, out = ResumePoint(), []
    for cut in [*cuts, len(log) + 1]:
        stream = from_second(log, point.resume())
        for entry_stamp, text in stream[:cut]:
            if point.fresh(entry_stamp):
                point.given(entry_stamp)
                out.append(text)
    return out


def test_stamps_order_as_time_with_any_number_of_digits() -> None:
    assert parse_stamp(b"2026-11-25T10:00:01.5Z") == ("2026-11-25T10:00:01", 500_000_000)
    assert parse_stamp("2026-11-25T10:00:01Z") == ("2026-11-25T10:00:01", 0)
    assert parse_stamp(b"2026-11-25T10:00:01.123456789Z") > parse_stamp(b"2026-11-25T10:00:01.12Z")  # type: ignore[operator]
    assert parse_stamp(b"hello world") is None


def test_bursts_under_one_stamp_cut_anywhere() -> None:
    """Many identical lines under one stamp (a burst read at once, or the pieces of one
    long line): every place the stream can be cut gives each line exactly once."""
    log = [(stamp(1, 5), "a")] + [(stamp(2, 7), "same")] * 6 + [(stamp(2, 9), "b")]
    log += [(stamp(3), "same")] * 3 + [(stamp(4, 1), "end")]
    texts = [text for _, text in log]
    for first, second in itertools.product(range(len(log) + 1), repeat=2):
        assert follow(log, [first, second]) == texts, (first, second)


def test_stamps_out_of_order_across_a_second() -> None:
    """stdout and stderr are stamped by two readers: an entry written later may carry an
    earlier stamp, even of the second before the newest given one."""
    log = [(stamp(1), "out-1"), (stamp(2, 100), "out-2"), (stamp(1, 999_999_000), "err-1")]
    log += [(stamp(2, 50), "err-2"), (stamp(3), "out-3")]
    texts = [text for _, text in log]
    for cut in range(len(log) + 1):
        assert follow(log, [cut, 1, 0, 2]) == texts, cut


def test_a_resume_never_starts_before_the_callers_own_since() -> None:
    point = ResumePoint(floor=stamp_seconds(stamp(30)))
    point.given(stamp(31))
    assert point.resume() == stamp_seconds(stamp(30))  # not 2 s before the newest
    assert not point.fresh(stamp(31))  # given already
    assert point.fresh(stamp(31, 1))


def test_entries_before_the_resume_second_are_refused() -> None:
    """Kubernetes counts ``sinceSeconds`` back from the node's clock, so a stream may start
    earlier than asked: what comes before the resume second was given out already."""
    point = ResumePoint()
    for s in range(1, 10):
        point.given(stamp(s))
    since = point.resume()
    assert since == stamp_seconds(stamp(7))
    assert not point.fresh(stamp(5))
    assert [point.fresh(stamp(s)) for s in (7, 8, 9)] == [False] * 3
    assert point.fresh(stamp(9, 1))


def test_lines_without_a_stamp_are_never_dropped() -> None:
    point = ResumePoint()
    assert point.fresh(None) and point.fresh(None)
    point.given(None)
    assert point.resume() is None  # nothing given out yet: from the start


def test_the_record_of_given_entries_stays_small() -> None:
    """Only the last seconds of a long log are kept to count from (10,000 lines a second
    for 50 s here: at most twice the lines of the last MARGIN_S + 2 seconds)."""
    point = ResumePoint()
    for i in range(500_000):
        point.given(stamp(i // 10_000, i))
    assert len(point._given) <= 2 * 40_000
    since = point.resume()
    assert since == stamp_seconds(stamp(47))
    fresh = [point.fresh(stamp(i // 10_000, i)) for i in range(470_000, 500_000)]
    assert not any(fresh) and point.fresh(stamp(49, 999_999_999))
