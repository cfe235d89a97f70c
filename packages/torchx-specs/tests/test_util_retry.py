"""The shared retry rule: transient failures are retried within a budget, permanent ones
are raised at once, and the final error says how long torchx tried."""

from __future__ import annotations

import random
import threading

import pytest

from torchx.util.support.retry import (
    ServiceUnavailableError,
    backoff_delays,
    budget_s,
    outage_budget,
    retry_call,
    within_outage_budget,
)


class Clock:
    """Time that passes only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def flaky(failures: int, error: Exception) -> tuple[list[int], object]:
    calls: list[int] = []

    def fn() -> str:
        calls.append(1)
        if len(calls) <= failures:
            raise error
        return "ok"

    return calls, fn


def transient(e: BaseException) -> bool:
    return isinstance(e, ConnectionError)


def test_transient_failures_are_retried_until_the_service_answers() -> None:
    clock = Clock()
    calls, fn = flaky(4, ConnectionRefusedError("connection refused"))
    result = retry_call(
        fn, service="svc", is_transient=transient, budget=30, sleep=clock.sleep, clock=clock
    )  # type: ignore[arg-type]
    assert result == "ok"
    assert len(calls) == 5
    assert len(clock.sleeps) == 4
    # doubling steps, each at least half of its step
    assert clock.sleeps[0] >= 0.1 and clock.sleeps[3] >= 0.8


def test_a_permanent_error_is_raised_at_once() -> None:
    clock = Clock()
    calls, fn = flaky(5, PermissionError("403 forbidden"))
    with pytest.raises(PermissionError, match="403"):
        retry_call(fn, service="svc", is_transient=transient, sleep=clock.sleep, clock=clock)  # type: ignore[arg-type]
    assert len(calls) == 1 and clock.sleeps == []


def test_the_budget_bounds_the_outage_and_the_error_says_so() -> None:
    clock = Clock()
    _calls, fn = flaky(10_000, ConnectionResetError("connection reset by peer"))
    with pytest.raises(ServiceUnavailableError) as caught:
        retry_call(
            fn, service="svc", is_transient=transient, budget=20, sleep=clock.sleep, clock=clock
        )  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith("connection reset by peer (still failing after")
    assert "TORCHX_RETRY_S" in message
    assert isinstance(caught.value.last, ConnectionResetError)
    assert 20 <= clock.now <= 20 + 5  # never sleeps past the budget by more than a step
    assert max(clock.sleeps) <= 5


def test_budget_zero_gives_the_backend_error_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_RETRY_S", "0")
    calls, fn = flaky(3, ConnectionRefusedError("refused"))
    with pytest.raises(ConnectionRefusedError):
        retry_call(fn, service="svc", is_transient=transient)  # type: ignore[arg-type]
    assert len(calls) == 1


def test_outage_budget_lengthens_the_budget_only_inside(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_RETRY_S", "7")
    monkeypatch.setenv("TORCHX_OUTAGE_S", "900")
    assert budget_s() == 7
    with outage_budget():
        assert budget_s() == 900
        with outage_budget(3):
            assert budget_s() == 3
        assert budget_s() == 900
    assert budget_s() == 7


def test_iterators_within_the_outage_budget_carry_it_into_any_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TORCHX_RETRY_S", "7")
    seen: list[float] = []

    def source() -> object:
        for _ in range(3):
            seen.append(budget_s())
            yield len(seen)

    items = within_outage_budget(source(), 120)  # type: ignore[arg-type]
    out: list[int] = []
    reader = threading.Thread(target=lambda: out.extend(items))
    reader.start()
    reader.join()
    assert out == [1, 2, 3]
    assert seen == [120, 120, 120]
    assert budget_s() == 7  # nothing leaks to the caller between items


def test_a_bad_budget_setting_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_RETRY_S", "soon")
    with pytest.raises(ValueError, match=r"TORCHX_RETRY_S='soon' is not a number of seconds"):
        budget_s()


def test_jittered_delays_differ_between_clients_and_stay_capped() -> None:
    a = backoff_delays(rng=random.Random(1))
    b = backoff_delays(rng=random.Random(2))
    first_a = [next(a) for _ in range(12)]
    first_b = [next(b) for _ in range(12)]
    assert first_a != first_b
    assert all(2.5 <= d <= 5 for d in first_a[6:])


def test_a_refused_first_contact_of_a_one_off_call_gives_up_soon(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing listens at the very first connection: the service is most likely not running,
    so a one-off command answers within a few seconds instead of the outage budget."""
    from torchx.util.support import retry

    monkeypatch.delenv("TORCHX_RETRY_S", raising=False)
    monkeypatch.setattr(retry, "_answered", set())
    clock = Clock()
    _, fn = flaky(100, ConnectionRefusedError(111, "Connection refused"))
    with pytest.raises(ServiceUnavailableError):
        retry_call(fn, service="svc", is_transient=transient, sleep=clock.sleep, clock=clock)
    assert clock.now <= retry.FIRST_CONTACT_S
    # the same refusal after the service answered once is an outage: the full budget
    _, fn = flaky(0, ConnectionRefusedError(111, "Connection refused"))
    retry_call(fn, service="svc", is_transient=transient, sleep=clock.sleep, clock=clock)
    clock.now = 0.0
    _, fn = flaky(100, ConnectionRefusedError(111, "Connection refused"))
    with pytest.raises(ServiceUnavailableError):
        retry_call(fn, service="svc", is_transient=transient, sleep=clock.sleep, clock=clock)
    assert clock.now >= retry.DEFAULT_BUDGET_S


@pytest.mark.parametrize("how", ["outage_budget", "TORCHX_RETRY_S", "reset"])
def test_waits_explicit_budgets_and_other_errors_keep_their_outage_budget(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    from torchx.util.support import retry

    monkeypatch.setattr(retry, "_answered", set())
    monkeypatch.delenv("TORCHX_RETRY_S", raising=False)
    error: Exception = ConnectionRefusedError(111, "Connection refused")
    if how == "TORCHX_RETRY_S":
        monkeypatch.setenv("TORCHX_RETRY_S", "30")
    if how == "reset":
        error = ConnectionResetError(104, "Connection reset by peer")
    clock = Clock()
    _, fn = flaky(10_000, error)
    with pytest.raises(ServiceUnavailableError):
        if how == "outage_budget":
            with outage_budget(60):
                retry_call(
                    fn, service="svc", is_transient=transient, sleep=clock.sleep, clock=clock
                )
        else:
            retry_call(fn, service="svc", is_transient=transient, sleep=clock.sleep, clock=clock)
    assert clock.now >= 15


def test_threads_that_meet_one_outage_warn_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.util.support import retry

    monkeypatch.setenv("TORCHX_RETRY_S", "15")
    clock = Clock()
    message = f"service at 127.0.0.1:{random.randrange(1 << 30)} refused"
    for _ in range(3):
        _, fn = flaky(1, ConnectionError(message))
        retry_call(fn, service="s2", is_transient=transient, sleep=clock.sleep, clock=clock)
    warned = [r for r in caplog.records if message in r.getMessage()]
    assert len(warned) == 1 and retry._warned
