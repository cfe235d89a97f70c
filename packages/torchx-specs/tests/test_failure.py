"""The root cause of a failed app: which failure is first, and what a log tail, an exit
status and a torchelastic error file say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchx.specs.failure import (
    LOG_TAIL_BYTES,
    Failure,
    from_error_file,
    from_exit_status,
    from_log_tail,
    read_log_tail,
    root_cause,
)


def test_the_earliest_failure_is_the_root_cause() -> None:
    late = Failure(role="trainer", replica_id=0, time=20.0)
    early = Failure(role="trainer", replica_id=3, time=10.0)
    unknown = Failure(role="reader", replica_id=0)
    assert root_cause([late, unknown, early], ["reader", "trainer"]) is early
    assert root_cause([], ["trainer"]) is None


def test_ties_go_to_an_own_failure_then_the_role_then_the_replica() -> None:
    stopped = Failure(role="reader", replica_id=0, cause="cancelled", time=5.0)
    own = Failure(role="trainer", replica_id=2, cause="exit_code", time=5.0)
    assert root_cause([stopped, own], ["reader", "trainer"]) is own
    a = Failure(role="trainer", replica_id=2, time=5.0)
    b = Failure(role="trainer", replica_id=1, time=5.0)
    c = Failure(role="reader", replica_id=4, time=5.0)
    assert root_cause([a, b, c], ["reader", "trainer"]) is c
    assert root_cause([a, b], ["reader", "trainer"]) is b


@pytest.mark.parametrize(
    ("code", "signal", "signal_exits", "cause", "name", "exit_code"),
    [
        (3, 0, False, "exit_code", None, 3),
        (-9, 0, False, "signal", "SIGKILL", None),
        (137, 0, True, "signal", "SIGKILL", 137),
        (137, 0, False, "exit_code", None, 137),
        (0, 15, False, "signal", "SIGTERM", None),
    ],
)
def test_exit_status(
    code: int, signal: int, signal_exits: bool, cause: str, name: str | None, exit_code: int | None
) -> None:
    failure = from_exit_status(Failure("r", 0), code, signal, signal_exits=signal_exits)
    assert (failure.cause, failure.signal, failure.exit_code) == (cause, name, exit_code)


def test_the_last_traceback_of_the_tail_names_the_exception() -> None:
    tail = "\n".join(
        [
            "[0]:step 10",
            "[1]:Traceback (most recent call last):",
            "[0]:step 11",
            '[1]:  File "train.py", line 3, in <module>',
            "[1]:RuntimeError: CUDA error: out of bounds",
            "Root Cause (first observed failure):",
            "[0]:",
            "  time      : 2026-11-29_04:25:43",
            "  rank      : 1 (local_rank: 1)",
        ]
    )
    failure = from_log_tail(Failure("trainer", 0), tail)
    assert (failure.cause, failure.rank) == ("exception", 1)
    assert failure.message == "RuntimeError: CUDA error: out of bounds"
    assert failure.traceback.splitlines()[1] == '  File "train.py", line 3, in <module>'


def test_pytorch_rank_prefixes_inside_torchruns_tee_prefix() -> None:
    tail = "\n".join(
        [
            "[0]:[rank1]: Traceback (most recent call last):",
            '[0]:[rank1]:   File "/train/train.py", line 4, in <module>',
            "[0]:[rank1]:     raise ValueError('rank one broke')",
            "[0]:[rank1]: ValueError: rank one broke",
            "Traceback (most recent call last):",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        ]
    )
    failure = from_log_tail(Failure("trainer", 1), tail)
    assert (failure.cause, failure.message) == ("exception", "ValueError: rank one broke")
    assert failure.traceback.splitlines()[2] == "    raise ValueError('rank one broke')"


def test_a_traceback_whose_indentation_a_log_service_stripped() -> None:
    tail = "\n".join(
        [
            "Traceback (most recent call last):",
            'File "train.py", line 9, in <module>',
            "main()",
            'File "train.py", line 5, in main',
            "raise",
            "KeyError: 'lr'",
        ]
    )
    failure = from_log_tail(Failure("trainer", 0), tail)
    assert (failure.cause, failure.message) == ("exception", "KeyError: 'lr'")
    assert len(failure.traceback.splitlines()) == 6


def test_an_error_file_gives_message_traceback_and_time() -> None:
    doc = {
        "message": {
            "message": "ValueError: bad shard",
            "extraInfo": {
                "py_callstack": "Traceback ...\nValueError: bad shard",
                "timestamp": "17",
            },
        }
    }
    failure = from_error_file(Failure("trainer", 1), json.dumps(doc))
    assert (failure.cause, failure.message, failure.time) == (
        "exception",
        "ValueError: bad shard",
        17.0,
    )


def test_a_long_log_is_read_from_its_end_only(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with log.open("w") as f:
        f.write("x" * (3 * LOG_TAIL_BYTES) + "\n")
        f.write("last line\n")
    tail = read_log_tail(str(log))
    assert tail == "last line\n"
    assert read_log_tail(str(tmp_path / "missing.log")) == ""


def test_a_tail_of_traceback_headers_is_read_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's tail (traceback headers that never end) took 4.6-9.4 s: every line is
    now looked at once, whatever the number of headers."""
    from torchx.specs import failure as _failure
    from torchx.specs.failure import Failure, from_log_tail

    headers = 20_000
    seen = 0
    real = _failure._tee_prefix

    def counted(line: str) -> tuple[str, str]:
        nonlocal seen
        seen += 1
        return real(line)

    monkeypatch.setattr(_failure, "_tee_prefix", counted)
    tail = "Traceback (most recent call last):\n" * headers + "ValueError: last\n"
    failure = from_log_tail(Failure(role="r", replica_id=0), tail)
    assert failure.message == "ValueError: last"
    assert seen <= headers + 1 + 64  # one look per line (and at most a few more)
