"""A job's record survives any name or path and stays private."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from torchx.schedulers._slurm.records import (
    JobRecord,
    read_record,
    record_path,
    write_record,
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


AWKWARD = "tab\there, new\nline, back\\slash, é€ 日本, $(rm -rf x) `q` 'x' \"y\""


def test_round_trip_of_awkward_names_and_paths() -> None:
    record = JobRecord(
        "1234",
        session="torchx",
        app_name=AWKWARD,
        log_dir="/shared/" + AWKWARD + "/\udcff",  # a path holding a byte that is no UTF-8
        job_dir=None,
        roles=[(AWKWARD, 2), ("ps", 1)],
    )
    write_record(record)
    assert read_record("1234") == record


def test_job_dir_is_kept_when_set() -> None:
    write_record(JobRecord("7", log_dir="/jobs/7", job_dir="/jobs/7", roles=[("t", 1)]))
    loaded = read_record("7")
    assert loaded is not None
    assert loaded.job_dir == "/jobs/7"


def test_the_file_is_private(home: Path) -> None:
    write_record(JobRecord("8", log_dir="/x", roles=[("t", 1)]))
    mode = Path(record_path("8")).stat().st_mode
    assert stat.S_IMODE(mode) == 0o600
    assert stat.S_IMODE((home / "slurm").stat().st_mode) == 0o700


def test_missing_or_damaged_records_read_as_none() -> None:
    assert read_record("9") is None
    path = Path(record_path("9"))
    path.parent.mkdir(parents=True)
    path.write_text("not a record\n")
    assert read_record("9") is None
    path.write_text("torchx-slurm-record 1\nrole\tt\tmany\n")
    assert read_record("9") is None
