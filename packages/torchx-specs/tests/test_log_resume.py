"""Resuming a followed log: what a second stream repeats is skipped, nothing else."""

from __future__ import annotations

from torchx.schedulers.log_resume import ResumePoint, parse_stamp


def stamp(second: int, nanos: int = 0) -> str:
    return f"2026-11-25T10:00:{second:02d}.{nanos:09d}Z"


def test_stamps_order_as_time_with_any_number_of_digits() -> None:
    assert parse_stamp(b"2026-11-25T10:00:01.5Z") == ("2026-11-25T10:00:01", 500_000_000)
    assert parse_stamp("2026-11-25T10:00:01Z") == ("2026-11-25T10:00:01", 0)
    assert parse_stamp(b"2026-11-25T10:00:01.123456789Z") > parse_stamp(b"2026-11-25T10:00:01.12Z")  # type: ignore[operator]
    assert parse_stamp(b"hello world") is None


def test_a_second_stream_gives_only_what_is_new() -> None:
    """Docker and Kubernetes start a log at a whole second: the second stream repeats the
    entries of that second, including several that share one stamp."""
    first = [stamp(1), stamp(2, 5), stamp(2, 5), stamp(2, 7)]
    second = [stamp(2, 5), stamp(2, 5), stamp(2, 7), stamp(2, 7), stamp(3)]  # one new at 2.7
    point = ResumePoint()
    assert point.resume() is None  # nothing given yet: from the start
    given = [s for s in first if point.fresh(parse_stamp(s))]
    assert given == first
    since = point.resume()
    assert since is not None and since % 60 == 2  # asked again from that whole second
    again = [s for s in second if point.fresh(parse_stamp(s))]
    assert again == [stamp(2, 7), stamp(3)]


def test_lines_without_a_stamp_are_never_dropped() -> None:
    point = ResumePoint()
    assert point.fresh(None) and point.fresh(None)
    assert point.resume() is None
