"""Every recorded Slurm output format reads into the same rows and app states."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchx.schedulers._slurm.parse import (
    base_state,
    leaders,
    parse_sacct_json,
    parse_sacct_text,
    parse_scontrol_text,
    parse_squeue_json,
    parse_squeue_text,
    parse_time_limit,
    split_job_name,
)
from torchx.schedulers._slurm.records import JobRecord
from torchx.schedulers._slurm.status import describe_rows
from torchx.schedulers.slurm_scheduler import (
    SLURM_STATES,
    appstate_from_slurm_state,
    get_appstate_from_job,
)
from torchx.specs import AppState

FIXTURES = Path(__file__).parent / "fixtures"
NEW_VERSIONS = ["23.02", "23.11", "24.05", "24.11", "25.05"]


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


class TestSqueueText:
    """``squeue -t all -O SQUEUE_FORMAT``, the status path (recorded from 22.05)."""

    def test_het_job(self) -> None:
        rows = parse_squeue_text(fixture("squeue-22.05.txt"), leader="163")
        assert [(r.job_id, r.het_offset, r.name, r.state, r.hosts) for r in rows] == [
            ("163", 0, "train:trainer-0", "RUNNING", ["n3"]),
            ("164", 1, "train:trainer-1", "RUNNING", ["n1"]),
        ]
        assert rows[0].command == "/tmp/eng10/cap/het.sh"
        desc = describe_rows("163", rows, None)
        assert desc.state == AppState.RUNNING
        assert [len(r.replicas) for r in desc.roles_statuses] == [2]
        # Slurm's Submit and Start: queued 38 s; running (its End is the limit, not an end)
        assert [(p.phase, p.end - p.start if p.end else None) for p in desc.timeline] == [
            ("submitted", 0.0),
            ("queued", 38.0),
            ("running", None),
        ]
        assert desc.waiting is None

    def test_a_pending_job_says_why_it_waits(self) -> None:
        by_id = {r.job_id: r for r in parse_squeue_text(fixture("squeue-22.05.txt"))}
        desc = describe_rows("165", [by_id["165"]], None)
        assert desc.state == AppState.PENDING and desc.waiting is not None
        assert desc.waiting.phase == "queued" and desc.waiting.since == by_id["165"].submit
        assert desc.waiting.reason.startswith("JobHeldUser")
        assert [p.phase for p in desc.timeline] == ["submitted", "queued"]

    def test_states_reasons_exit_codes_and_resources(self) -> None:
        by_id = {r.job_id: r for r in parse_squeue_text(fixture("squeue-22.05.txt"))}
        held, failed, cancelled = by_id["165"], by_id["166"], by_id["167"]
        assert (held.state, held.reason, held.hosts, held.mem_mb) == (
            "PENDING",
            "JobHeldUser",
            [],
            300,
        )
        assert held.name == "held|pipe:w-0"  # the name may hold the separator
        assert held.command == ""  # a script sent on stdin
        assert (failed.state, failed.exit_code) == ("FAILED", 3)
        assert (cancelled.state, cancelled.signal, cancelled.cpus) == ("CANCELLED", 15, 2)
        assert failed.workdir == "/tmp/eng10/cap"

    def test_garbage_lines_are_skipped(self) -> None:
        assert parse_squeue_text("squeue: error: something\n\n") == []


class TestSqueue2205:
    """Recorded from the Slurm 22.05 cluster the real tests use."""

    def test_het_job_components_in_order(self) -> None:
        rows = parse_squeue_json(fixture("squeue-22.05.json"), leader="10")
        assert [(r.job_id, r.het_offset, r.name) for r in rows] == [
            ("10", 0, "train:trainer-0"),
            ("11", 1, "train:trainer-1"),
        ]
        assert [r.state for r in rows] == ["RUNNING", "RUNNING"]
        assert rows[0].hosts == ["n4"] and rows[1].hosts == ["n1"]

    def test_22_05_lists_every_job_so_the_id_filters(self) -> None:
        all_rows = parse_squeue_json(fixture("squeue-22.05.json"))
        assert {r.het_leader for r in all_rows} == {"10", "12", "13", "14", "15"}
        assert parse_squeue_json(fixture("squeue-22.05.json"), leader="999") == []

    def test_held_job_without_job_resources(self) -> None:
        (row,) = parse_squeue_json(fixture("squeue-22.05.json"), leader="12")
        assert (row.state, row.reason, row.hosts) == ("PENDING", "JobHeldUser", [])
        desc = describe_rows("12", [row], None)
        assert desc.state == AppState.PENDING
        assert desc.msg.startswith("pending: JobHeldUser (held by its user: `scontrol release")

    def test_raw_wait_status_is_decoded(self) -> None:
        (row,) = parse_squeue_json(fixture("squeue-22.05.json"), leader="13")
        assert (row.state, row.exit_code, row.signal) == ("FAILED", 3, 0)
        desc = describe_rows("13", [row], None)
        assert desc.state == AppState.FAILED
        assert "exit code 3" in desc.msg

    def test_foreign_job_is_described_not_rejected(self) -> None:
        (row,) = parse_squeue_json(fixture("squeue-22.05.json"), leader="15")
        desc = describe_rows("15", [row], None)
        assert desc.state == AppState.SUCCEEDED
        assert [r.role for r in desc.roles_statuses] == ["not torchx"]


@pytest.mark.parametrize("version", NEW_VERSIONS)
class TestSqueueNewer:
    def rows(self, version: str, leader: str) -> list:  # type: ignore[type-arg]
        return parse_squeue_json(fixture(f"squeue-{version}.json"), leader=leader)

    def test_three_component_het_job(self, version: str) -> None:
        rows = self.rows(version, "40")
        assert [(r.het_offset, r.state) for r in rows] == [
            (0, "RUNNING"),
            (1, "RUNNING"),
            (2, "RUNNING"),  # ["RUNNING", "COMPLETING"]: the flag is not the state
        ]
        assert [r.hosts for r in rows] == [["n1"], ["n2"], ["n3"]]
        assert rows[0].cpus == 2 and rows[0].mem_mb == 4096
        desc = describe_rows("40", rows, None)
        assert desc.state == AppState.RUNNING
        assert [(r.role, [x.id for x in r.replicas]) for r in desc.roles_statuses] == [
            ("trainer", [0, 1]),
            ("ps", [0]),
        ]
        assert desc.roles[0].resource.memMB == 4096

    def test_pending_reason_and_no_resources(self, version: str) -> None:
        (row,) = self.rows(version, "50")
        assert (row.state, row.reason) == ("PENDING", "Priority")
        assert describe_rows("50", [row], None).msg == (
            "pending: Priority (jobs of higher priority are ahead of it)"
        )

    def test_requeued_is_pending_with_restarts(self, version: str) -> None:
        (row,) = self.rows(version, "51")
        desc = describe_rows("51", [row], None, "NODE_FAIL")
        assert (desc.state, desc.num_restarts) == (AppState.PENDING, 1)
        assert desc.msg.startswith(
            "pending again (attempt 1; the last one ended: NODE_FAIL): BeginTime (a requeued"
            " job waits before it may start again"
        )

    def test_exit_objects(self, version: str) -> None:
        (failed,) = self.rows(version, "52")
        (cancelled,) = self.rows(version, "53")
        (oom,) = self.rows(version, "54")
        assert (failed.exit_code, failed.signal) == (3, 0)
        assert cancelled.signal == 15
        assert appstate_from_slurm_state(cancelled.state) == AppState.CANCELLED
        assert describe_rows("54", [oom], None).state == AppState.FAILED
        assert "signal 9" in describe_rows("54", [oom], None).msg

    def test_unknown_state_is_unknown_not_an_error(self, version: str) -> None:
        (row,) = self.rows(version, "56")
        desc = describe_rows("56", [row], None)
        assert desc.state == AppState.UNKNOWN
        assert desc.msg == "slurm state SOME_FUTURE_STATE"


def test_the_record_names_roles_even_when_names_were_sanitized() -> None:
    rows = parse_squeue_json(fixture("squeue-24.11.json"), leader="40")
    record = JobRecord("40", roles=[("my trainer", 2), ("ps", 1)], log_dir="/shared/run")
    desc = describe_rows("40", rows, record)
    assert [r.role for r in desc.roles_statuses] == ["my trainer", "ps"]
    assert desc.ui_url == "file:///shared/run"


class TestSacct:
    def test_text_22_05(self) -> None:
        groups = leaders(parse_sacct_text(fixture("sacct-22.05.txt")))
        assert [r.job_id for r in groups["10"]] == ["10+0", "10+1"]
        assert [r.state for r in groups["14"]] == ["CANCELLED"]  # "CANCELLED by 0"
        assert groups["13"][0].exit_code == 3
        assert groups["13"][0].workdir == "/tmp/eng10/cap"

    def test_upstream_default_columns_and_truncated_states(self) -> None:
        rows = parse_sacct_text(fixture("sacct-upstream-columns.txt"))
        assert [(r.job_id, r.state, r.signal) for r in rows] == [
            ("20+0", "CANCELLED", 15),
            ("20+1", "CANCELLED", 15),
            ("21", "TIMEOUT", 0),
        ]

    @pytest.mark.parametrize("name", ["sacct-22.05.json", "sacct-23.11.json"])
    def test_json(self, name: str) -> None:
        groups = leaders(parse_sacct_json(fixture(name)))
        het = groups["10"] if "10" in groups else groups["60"]
        assert [r.het_offset for r in het] == [0, 1]
        failed = groups["13"] if "13" in groups else groups["62"]
        assert failed[0].state == "FAILED"
        # 22.05 recorded the exit code in accounting only later (the text one has it)
        assert failed[0].exit_code == (0 if name == "sacct-22.05.json" else 3)

    def test_empty_state_list(self) -> None:
        rows = parse_sacct_json(fixture("sacct-23.11.json"), leader="63")
        assert rows[0].state == "" and rows[0].hosts == []
        assert appstate_from_slurm_state(rows[0].state) == AppState.UNKNOWN


def test_scontrol_text() -> None:
    rows = parse_scontrol_text(fixture("scontrol-22.05.txt"), leader="10")
    assert [(r.job_id, r.het_offset, r.name, r.state) for r in rows] == [
        ("10", 0, "train:trainer-0", "RUNNING"),
        ("11", 1, "train:trainer-1", "RUNNING"),
    ]
    (foreign,) = parse_scontrol_text(fixture("scontrol-22.05.txt"), leader="15")
    assert foreign.name == "not torchx"  # a value with a space
    (held,) = parse_scontrol_text(fixture("scontrol-22.05.txt"), leader="12")
    assert held.reason == "JobHeldUser"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("RUNNING", "RUNNING"),
        ("CANCELLED by 0", "CANCELLED"),
        ("CANCELLED+", "CANCELLED"),
        (["PENDING", "REQUEUED"], "PENDING"),
        (["REQUEUED"], "REQUEUED"),
        ({"current": ["COMPLETED"]}, "COMPLETED"),
        ({"current": "FAILED"}, "FAILED"),
        ([], ""),
        (None, ""),
        (42, ""),
    ],
)
def test_base_state(value: object, expected: str) -> None:
    assert base_state(value) == expected


def test_state_table_and_unknown_states() -> None:
    assert appstate_from_slurm_state("COMPLETED") == AppState.SUCCEEDED
    assert appstate_from_slurm_state("REQUEUED") == AppState.PENDING
    assert appstate_from_slurm_state("COMPLETING") == AppState.UNKNOWN
    assert get_appstate_from_job({"job_state": ["TIMEOUT"]}) == AppState.FAILED
    assert get_appstate_from_job({"job_state": "NO_SUCH"}) == AppState.UNKNOWN
    assert set(SLURM_STATES.values()) <= set(AppState)


def test_job_names() -> None:
    assert split_job_name("train:trainer-3") == ("train", "trainer", 3)
    assert split_job_name("trainer-0") == ("", "trainer", 0)  # upstream's names
    assert split_job_name("my-role-12") == ("", "my-role", 12)
    assert split_job_name("interactive") is None
    assert split_job_name("x-y") is None


@pytest.mark.parametrize(
    ("value", "minutes"),
    [
        ("30", 30),
        ("1:30", 2),
        ("2:00:00", 120),
        ("1-12", 36 * 60),
        ("1-0:30", 24 * 60 + 30),
        ("0-0:0:59", 1),
        ("INFINITE", -1),
        ("1h", None),
        ("1:2:3:4", None),
        ("-5", None),
        ("", None),
    ],
)
def test_time_limits(value: str, minutes: int | None) -> None:
    assert parse_time_limit(value) == minutes


def test_malformed_json_reads_as_no_jobs() -> None:
    assert parse_squeue_json("not json") == []
    assert parse_squeue_json('{"jobs": {"x": 1}}') == []
    assert parse_squeue_json('{"jobs": [{"job_id": null}, 7]}') == []


def test_reasons_that_can_never_be_met_say_so() -> None:
    from torchx.schedulers._slurm.status import explain_reason

    for reason in ("PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints"):
        assert "it can never start as submitted" in explain_reason(reason)
    assert "it can never" not in explain_reason("Resources")
    assert explain_reason("QOSMaxJobsPerUserLimit").endswith(
        "(a limit of its QOS is reached; it starts once other jobs end)"
    )
    assert explain_reason("SomethingNew") == "SomethingNew"


def test_squeue_list_rows_recorded_from_22_05() -> None:
    """``torchx list`` reads only id, heterogeneous leader, state and name from squeue's
    text form (recorded: two single jobs, one two-component heterogeneous job, a pending
    one, and a sweep's array: its pending rest and a running task, listed with it)."""
    from torchx.schedulers._slurm.parse import parse_squeue_list

    rows = parse_squeue_list(fixture("squeue-list-22.05.txt"))
    assert [(r.job_id, r.het_leader, r.het_offset, r.state, r.name) for r in rows] == [
        ("220", "220", 0, "COMPLETED", "echo:echo-0"),
        ("221", "221", 0, "COMPLETED", "sh:sh-0"),
        ("222", "222", 0, "COMPLETED", "train:trainer-0"),
        ("223", "222", 1, "COMPLETED", "train:trainer-1"),
        ("224", "224", 0, "PENDING", "wait:wait-0"),
        ("225", "225", 0, "PENDING", "sweep:train-array-0"),
        ("226", "225", 0, "RUNNING", "sweep:train-array-0"),
    ]
    assert [r.reason for r in rows][:5] == ["", "", "", "", "Priority"]  # why 224 waits
    groups = leaders(rows)
    assert sorted(groups) == ["220", "221", "222", "224", "225"] and len(groups["222"]) == 2
    assert len(groups["225"]) == 2  # a sweep: one row
    import time

    submitted = time.mktime(time.strptime("2026-11-25T17:01:00", "%Y-%m-%dT%H:%M:%S"))
    later = [r.job_id for r in parse_squeue_list(fixture("squeue-list-22.05.txt"), submitted)]
    assert later == ["222", "223", "224", "225", "226"], "only the jobs submitted since then"
