"""The readiness contract: statuses, the worst-of rule, probes that never raise, the
Scheduler's default hook, and trackers without a check."""

from __future__ import annotations

import pytest

from torchx.schedulers.api import Scheduler
from torchx.util.readiness import (
    NO_CHECKS,
    NOT_CONFIGURED,
    NOT_READY,
    READY,
    ReadinessCheck,
    not_configured,
    not_ready,
    overall,
    probe,
    ready,
)


def test_overall_is_the_worst_status() -> None:
    assert overall([]) == NO_CHECKS
    assert overall([ready("a", "x")]) == READY
    assert overall([ready("a", "x"), not_configured("b", "y", "fix")]) == NOT_CONFIGURED
    assert overall([not_configured("b", "y", "f"), not_ready("c", "z", "f"), ready("a", "x")]) == (
        NOT_READY
    )


def test_probe_turns_an_exception_into_a_problem_with_a_fix() -> None:
    def boom() -> ReadinessCheck:
        raise OSError("socket closed\nsecond line")

    check = probe("daemon", boom, "start it")
    assert (check.status, check.found, check.fix) == (NOT_READY, "socket closed", "start it")
    assert probe("ok", lambda: ready("ok", "fine"), "unused") == ready("ok", "fine")


class _Minimal(Scheduler[dict[str, str]]):
    def schedule(self, dryrun_info):  # type: ignore[no-untyped-def]
        return "x"

    def _submit_dryrun(self, app, cfg):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def describe(self, app_id):  # type: ignore[no-untyped-def]
        return None

    def list(self, cfg=None):  # type: ignore[no-untyped-def]
        return []

    def _cancel_existing(self, app_id):  # type: ignore[no-untyped-def]
        pass


def test_a_scheduler_without_checks_says_so() -> None:
    checks = _Minimal("acme", "s").check_ready({"queue": "q"})
    assert checks == [ReadinessCheck("checks", NO_CHECKS, "scheduler `acme` offers no checks")]
    assert overall(checks) == NO_CHECKS


def test_unknown_tracker_is_not_ready() -> None:
    from torchx.tracker.api import check_tracker

    (check,) = check_tracker("no_such_tracker_module", None)
    assert check.status == NOT_READY and "cannot be loaded" in check.found
    assert "torchx plugins" in check.fix


@pytest.mark.parametrize("module", ["json"])
def test_a_tracker_module_without_check_ready_has_no_checks(module: str) -> None:
    from torchx.tracker.api import check_tracker

    (check,) = check_tracker(module, None)
    assert check.status == NO_CHECKS


def test_write_problem_looks_without_creating(tmp_path: object) -> None:
    from pathlib import Path

    from torchx.util.readiness import write_problem

    root = Path(str(tmp_path))
    assert write_problem(str(root)) is None
    assert write_problem(str(root / "a" / "b"), directory=True) is None
    assert not (root / "a").exists(), "a check creates nothing"
    (root / "file").write_text("")
    assert write_problem(str(root / "file")) is None
    assert (
        write_problem(str(root / "file"), directory=True) == f"{root / 'file'} is not a directory"
    )
    assert write_problem(str(root / "file" / "sub")) == f"{root / 'file'} is not a directory"
