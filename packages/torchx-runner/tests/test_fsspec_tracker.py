"""fsspec tracker backend on real local files (and fsspec's in-memory filesystem)."""

from __future__ import annotations

import base64
import os
import sys
import uuid
from pathlib import Path

import fsspec
import pytest

from torchx.specs import AppDef, AppState, Role
from torchx.tracker.api import TrackerArtifact, TrackerSource, build_trackers
from torchx.tracker.backend.fsspec import FsspecTracker, _parse_config, create


@pytest.fixture
def tracker(tmp_path: Path) -> FsspecTracker:
    return create(str(tmp_path / "runs"))


def b32(text: str) -> str:
    return base64.b32encode(text.encode()).decode()


class TestCreate:
    def test_config_file(self, tmp_path: Path) -> None:
        root = tmp_path / "root"
        root.mkdir()
        conf = tmp_path / "fsspec.conf"
        conf.write_text(f"# tracker\nprotocol = file\n\nroot_path={root}\nauto_mkdir = true\n")
        tracker = create(str(conf))
        assert repr(tracker) == f"<FsspecTracker: root_path={root}>"
        tracker.add_metadata("run", a=1)
        assert (root / b32("run") / "metadata").is_dir()

    def test_config_file_errors(self, tmp_path: Path) -> None:
        conf = tmp_path / "fsspec.conf"
        conf.write_text("protocol = file\n")
        with pytest.raises(ValueError, match="lacks root_path"):
            create(str(conf))
        conf.write_text(f"protocol = file\nroot_path = {tmp_path / 'missing'}\n")
        with pytest.raises(FileNotFoundError, match="does not exist"):
            create(str(conf))
        conf.write_text("protocol file\n")
        with pytest.raises(ValueError, match=r"fsspec\.conf:1: 'protocol file' is not a `key"):
            create(str(conf))
        with pytest.raises(FileNotFoundError, match=r"config file .*other\.conf does not exist"):
            create(str(tmp_path / "other.conf"))
        with pytest.raises(ValueError, match="needs a config"):
            create(None)

    def test_dotted_keys_nest(self) -> None:
        assert _parse_config("a.b.c = 1\na.d=2\nx = y = z\n", "s") == {
            "a": {"b": {"c": "1"}, "d": "2"},
            "x": "y = z",
        }
        with pytest.raises(ValueError, match=r"invalid key 'a\.'"):
            _parse_config("a. = 1", "s")

    def test_directory_is_used_as_root_and_created(self, tmp_path: Path) -> None:
        root = tmp_path / "tracker_data" / "nested"
        tracker = create(str(root))
        assert root.is_dir()
        tracker.add_artifact("r", "model", "/ckpt")
        assert list(create(str(root)).run_ids()) == ["r"]

    def test_directory_url(self) -> None:
        url = f"memory://torchx-test-{uuid.uuid4().hex}"
        tracker = create(url)
        tracker.add_metadata("r", loss=0.5)
        assert create(url).metadata("r") == {"loss": 0.5}
        assert fsspec.filesystem("memory").isdir(url[len("memory://") :])


class TestOperations:
    def test_metadata_merges_in_write_order(self, tracker: FsspecTracker) -> None:
        tracker.add_metadata("run", a=1, b="x")
        tracker.add_metadata("run", a=2)
        assert tracker.metadata("run") == {"a": 2, "b": "x"}
        assert tracker.metadata("unknown") == {}

    def test_artifacts_last_write_wins(self, tracker: FsspecTracker) -> None:
        tracker.add_artifact("run", "model", "/v1", {"epoch": 1})
        tracker.add_artifact("run", "model", "/v2")
        tracker.add_artifact("run", "data", "/d", {"rows": 3})
        assert tracker.artifacts("run") == {
            "model": TrackerArtifact("model", "/v2", None),
            "data": TrackerArtifact("data", "/d", {"rows": 3}),
        }

    def test_sources_accumulate_without_duplicates(self, tracker: FsspecTracker) -> None:
        tracker.add_source("child", "parent")
        tracker.add_source("child", "parent", "model")
        tracker.add_source("child", "parent", "model")
        tracker.add_source("child", "other", "data")
        assert sorted(tracker.sources("child"), key=repr) == sorted(
            [
                TrackerSource("parent", None),
                TrackerSource("parent", "model"),
                TrackerSource("other", "data"),
            ],
            key=repr,
        )
        assert list(tracker.sources("child", "model")) == [TrackerSource("parent", "model")]
        with pytest.raises(ValueError, match="newline"):
            tracker.add_source("child", "parent", "a\nb")

    def test_descendants_recorded_when_the_parent_is_tracked(self, tracker: FsspecTracker) -> None:
        tracker.add_source("orphan", "untracked-parent")
        assert tracker.descendants("untracked-parent") == []
        tracker.add_metadata("parent", step=1)
        tracker.add_source("child1", "parent")
        tracker.add_source("child2", "parent", "model")
        tracker.add_source("child2", "parent", "model")
        assert tracker.descendants("parent") == ["child1", "child2"]

    def test_run_ids(self, tracker: FsspecTracker, tmp_path: Path) -> None:
        tracker.add_metadata("p", a=1)
        tracker.add_source("c1", "p")
        tracker.add_source("c2", "q")
        (tmp_path / "runs" / "not-base32!").mkdir()
        assert sorted(tracker.run_ids()) == ["c1", "c2", "p"]
        assert list(tracker.run_ids(parent_run_id="p")) == ["c1"]
        with pytest.raises(ValueError, match="only parent_run_id"):
            tracker.run_ids(owner="me")

    def test_any_run_id_is_a_valid_name(self, tracker: FsspecTracker) -> None:
        run_id = "local_cwd://torchx/app-1 ü"
        tracker.add_metadata(run_id, ok=True)
        assert list(tracker.run_ids()) == [run_id]

    def test_lineage_is_one_level_of_sources_and_descendants(self, tracker: FsspecTracker) -> None:
        tracker.add_source("child", "parent", "model")
        tracker.add_source("grandchild", "child")
        lineage = tracker.lineage("child")
        assert lineage.run_id == "child"
        assert [(s.source_run_id, s.artifact_name) for s in lineage.sources] == [
            ("parent", "model")
        ]
        assert lineage.descendants == ["grandchild"]
        assert tracker.lineage("unknown").sources == []

    def test_root_must_exist(self, tmp_path: Path) -> None:
        with pytest.raises(FileNotFoundError, match="does not exist"):
            FsspecTracker(fsspec.filesystem("file"), str(tmp_path / "nope"))


def test_registered_as_the_fsspec_tracker(tmp_path: Path) -> None:
    (tracker,) = build_trackers({"fsspec": str(tmp_path / "data")})
    assert isinstance(tracker, FsspecTracker)


def test_a_launched_job_records_into_the_tracker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runner injects the tracker env; the job's AppRun writes; the launcher reads."""
    for key in list(os.environ):
        if key.startswith("TORCHX"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "torchx_home"))
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "tracker_data"
    monkeypatch.setenv("TORCHX_TRACKERS", "fsspec")
    monkeypatch.setenv("TORCHX_TRACKER_FSSPEC_CONFIG", str(data))
    code = (
        "from torchx.tracker import app_run_from_env; "
        "run = app_run_from_env(); run.add_metadata(answer=42); print(run.job_id())"
    )
    app = AppDef(
        "tracked",
        roles=[Role(name="py", image="", entrypoint=sys.executable, args=["-c", code])],
    )
    from torchx.runner import get_runner

    with get_runner() as runner:
        handle = runner.run(app, "local_cwd", parent_run_id="the-parent")
        status = runner.wait(handle, wait_interval=5)
        assert status is not None and status.state == AppState.SUCCEEDED, status
        logs = "".join(runner.log_lines(handle, "py"))
    job_id = handle  # TORCHX_JOB_ID is the app handle
    assert logs == f"{job_id}\n"
    tracker = create(str(data))
    assert tracker.metadata(job_id) == {"answer": 42}
    assert list(tracker.sources(job_id)) == [TrackerSource("the-parent", None)]
