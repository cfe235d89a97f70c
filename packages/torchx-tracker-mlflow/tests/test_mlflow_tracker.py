"""MLflowTracker against a real MLflow SQLite store (no server), and its settings."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from torchx.tracker.api import TrackerSource
from torchx.tracker.mlflow import (
    TAG_ARTIFACT_MD_PREFIX,
    MLflowTracker,
    MLflowTrackerError,
    create_tracker,
    default_experiment_name,
    flatten_params,
)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "user").mkdir()
    monkeypatch.chdir(tmp_path)
    for var in ("TORCHXCONFIG", "MLFLOW_TRACKING_URI", "TORCHX_TRACKING_EXPERIMENT_NAME"):
        monkeypatch.delenv(var, raising=False)
    yield


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite store for the module: creating its tables takes seconds."""
    return "sqlite:///" + str(tmp_path_factory.mktemp("store") / "mlflow.db")


@pytest.fixture
def tracker(store: str, request: pytest.FixtureRequest) -> MLflowTracker:
    return MLflowTracker(experiment_name=request.node.name, tracking_uri=store)


def test_metadata_artifacts_and_params_round_trip(tracker: MLflowTracker, tmp_path: Path) -> None:
    model = tmp_path / "model.pt"
    model.write_bytes(b"weights")
    tracker.add_metadata("local_cwd://s/app-1", lr=0.1, epochs=3)
    tracker.add_artifact("local_cwd://s/app-1", "model/best", str(model), {"acc": 0.9})
    tracker.add_artifact("local_cwd://s/app-1", "data", "s3://bucket/data")
    tracker.log_params_flat("local_cwd://s/app-1", {"optim": {"lr": 0.1}})

    assert tracker.metadata("local_cwd://s/app-1") == {"lr": "0.1", "epochs": "3"}
    artifacts = tracker.artifacts("local_cwd://s/app-1")
    assert sorted(artifacts) == ["data", "model/best"]
    assert artifacts["model/best"].metadata == {"acc": "0.9"}
    assert artifacts["model/best"].path.endswith("/model/best/model.pt")
    assert artifacts["data"].path == "s3://bucket/data"
    assert artifacts["data"].metadata is None

    run = tracker.client.get_run(tracker.get_run_id("local_cwd://s/app-1"))
    assert run.info.run_name == "local_cwd://s/app-1"
    assert run.data.params == {"optim.lr": "0.1"}
    assert run.data.tags[f"{TAG_ARTIFACT_MD_PREFIX}.model/best.acc"] == "0.9"
    local = tracker.client.download_artifacts(run.info.run_id, "model/best", str(tmp_path / "dl"))
    assert (Path(local) / "model.pt").read_bytes() == b"weights"


def test_unknown_run_reads_empty(tracker: MLflowTracker) -> None:
    assert tracker.metadata("nope") == {}
    assert tracker.artifacts("nope") == {}
    assert list(tracker.sources("nope")) == []
    assert list(tracker.run_ids()) == []


def test_sources_lineage_and_children(tracker: MLflowTracker) -> None:
    tracker.add_metadata("parent", stage="prep")
    tracker.add_source("child", "parent")
    tracker.add_source("child", "parent", artifact_name="dataset")
    tracker.add_source("child", "parent")  # recording twice changes nothing
    tracker.add_source("other", "elsewhere")

    assert list(tracker.sources("child")) == [
        TrackerSource("parent", None),
        TrackerSource("parent", "dataset"),
    ]
    assert list(tracker.sources("child", artifact_name="dataset")) == [
        TrackerSource("parent", "dataset")
    ]
    assert list(tracker.run_ids(parent_run_id="parent")) == ["child"]
    assert list(tracker.run_ids()) == ["parent", "child", "other"]
    lineage = tracker.lineage("parent")
    assert lineage.descendants == ["child"]
    assert tracker.lineage("child").sources == list(tracker.sources("child"))
    # MLflow itself nests the child under the parent run
    child = tracker.client.get_run(tracker.get_run_id("child"))
    assert child.data.tags["mlflow.parentRunId"] == tracker.get_run_id("parent")
    with pytest.raises(ValueError, match="only parent_run_id"):
        tracker.run_ids(owner="me")


def test_concurrent_writers_share_one_run(store: str) -> None:
    """Replicas start together: exactly one MLflow run per TorchX run id."""
    errors: list[BaseException] = []

    def replica(i: int) -> None:
        try:
            MLflowTracker("race", store).add_metadata("job-1", **{f"replica{i}": i})
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=replica, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    tracker = MLflowTracker("race", store)
    experiment_id = tracker.experiment_id
    runs = tracker.client.search_runs([experiment_id])
    assert [r.info.run_name for r in runs] == ["job-1"]
    assert tracker.metadata("job-1") == {f"replica{i}": str(i) for i in range(4)}


def test_missing_artifact_path_records_nothing(tracker: MLflowTracker, tmp_path: Path) -> None:
    tracker.add_metadata("run", a=1)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        tracker.add_artifact("run", "model", str(tmp_path / "missing.pt"))
    with pytest.raises(ValueError, match="not usable in MLflow"):
        tracker.add_artifact("run", "../escape", str(tmp_path))
    assert tracker.artifacts("run") == {}
    assert tracker.metadata("run") == {"a": "1"}


def test_directory_artifact(tracker: MLflowTracker, tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "a.bin").write_bytes(b"a")
    tracker.add_artifact("run", "checkpoints", str(tmp_path / "ckpt"))
    artifact = tracker.artifacts("run")["checkpoints"]
    assert artifact.path.endswith("/checkpoints")
    run_id = tracker.get_run_id("run")
    assert [f.path for f in tracker.client.list_artifacts(run_id, "checkpoints")] == [
        "checkpoints/a.bin"
    ]


def test_get_run_activates_and_close_finishes(tracker: MLflowTracker) -> None:
    import mlflow

    run = tracker.get_run("active")
    try:
        assert mlflow.active_run() is not None
        mlflow.log_metric("loss", 0.5)  # user code logging through MLflow's own API
    finally:
        tracker.close()
    assert mlflow.active_run() is None
    finished = tracker.client.get_run(run.info.run_id)
    assert finished.info.status == "FINISHED"
    assert finished.data.metrics == {"loss": 0.5}


def test_default_store_is_sqlite_under_torchx_home(tmp_path: Path) -> None:
    tracker = create_tracker(None)
    assert tracker.tracking_uri == "sqlite:///" + str(tmp_path / "home" / "mlflow" / "mlflow.db")
    assert tracker.experiment_name == default_experiment_name()
    assert default_experiment_name().startswith("default-experiment/")


def test_settings_from_torchxconfig_and_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".torchxconfig").write_text(
        "[tracker:mlflow]\nconfig = .\ntracking_uri = sqlite:///x.db\n"
        "experiment_name = from-file\nartifact_location = /tmp/art\n"
    )
    tracker = create_tracker(None)
    assert (tracker.tracking_uri, tracker.experiment_name) == ("sqlite:///x.db", "from-file")
    assert tracker.artifact_location == "/tmp/art"
    # a URI config wins over the file's tracking_uri; the env names the experiment
    monkeypatch.setenv("TORCHX_TRACKING_EXPERIMENT_NAME", "from-env")
    tracker = create_tracker("http://127.0.0.1:5000")
    assert (tracker.tracking_uri, tracker.experiment_name) == ("http://127.0.0.1:5000", "from-env")
    # upstream's form: the config is a directory holding .torchxconfig
    other = tmp_path / "proj"
    other.mkdir()
    (other / ".torchxconfig").write_text("[tracker:mlflow]\ntracking_uri = sqlite:///y.db\n")
    assert create_tracker(str(other)).tracking_uri == "sqlite:///y.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow-env:5000")
    assert create_tracker(str(other)).tracking_uri == "sqlite:///y.db"
    (other / ".torchxconfig").write_text("[tracker:mlflow]\nexperiment_name = e\n")
    assert create_tracker(str(other)).tracking_uri == "http://mlflow-env:5000"


@pytest.mark.parametrize(
    ("config", "content", "message"),
    [
        ("no/such/dir", None, "neither a tracking URI"),
        ("cfg", "[tracker:mlflow]\ntracking_url = http://x\n", "unknown key.*tracking_url"),
        ("cfg", "tracking_uri = http://x\n", r"comes before any \[section\] header"),
    ],
    ids=["missing-path", "unknown-key", "no-section-header"],
)
def test_malformed_config_is_one_line(
    tmp_path: Path, config: str, content: str | None, message: str
) -> None:
    if content is not None:
        (tmp_path / config).write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        create_tracker(config)
    assert "\n" not in str(info.value)


def test_unreachable_server_keeps_the_write_names_the_uri_and_imports_nothing(
    tmp_path: Path,
) -> None:
    """A job's write to a server that is away does not fail the job: it is kept in a
    private journal (and said so, with the password masked) for a later write."""
    code = (
        "import sys\n"
        "from torchx.tracker.mlflow import create_tracker\n"
        "t = create_tracker('http://user:secret@127.0.0.1:9')\n"
        "assert 'mlflow' not in sys.modules, 'configuring must not import mlflow'\n"
        "t.add_metadata('r', a=1)\n"
        "print('job goes on')\n"
    )
    env = {**os.environ, "TORCHX_HOME": str(tmp_path), "TORCHX_RETRY_S": "0"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
        env=env,
    )  # fmt: skip
    assert proc.stdout.strip() == "job goes on"
    warning = proc.stderr.strip()
    assert "cannot reach the MLflow tracking server at http://***@127.0.0.1:9" in warning
    assert "kept `add_metadata` of run 'r'" in warning
    assert "secret" not in warning
    (journal,) = (tmp_path / "trackers" / "mlflow-pending").iterdir()
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600
    assert json.loads(journal.read_text()) == {
        "op": "add_metadata", "args": ["r"], "kwargs": {"a": 1}
    }  # fmt: skip


def test_bad_uri_scheme_is_one_line(tmp_path: Path) -> None:
    tracker = MLflowTracker("e", "nosuchscheme://host/db")
    with pytest.raises(MLflowTrackerError, match="nosuchscheme://host/db") as info:
        tracker.add_metadata("r", a=1)
    assert "\n" not in str(info.value)


def test_deleted_experiment_is_reported(store: str) -> None:
    tracker = MLflowTracker("doomed", store)
    tracker.add_metadata("r", a=1)
    tracker.client.delete_experiment(tracker.experiment_id)
    with pytest.raises(MLflowTrackerError, match=r"'doomed' .* is deleted"):
        MLflowTracker("doomed", store).add_metadata("r", b=2)


@dataclass
class _Optim:
    lr: float = 0.1
    betas: tuple[float, float] = (0.9, 0.99)


@dataclass
class _Cfg:
    optim: _Optim = field(default_factory=_Optim)
    layers: list[dict[str, int]] = field(default_factory=lambda: [{"n": 1}, {"n": 2}])
    tags: dict[str, str] = field(default_factory=dict)


def test_flatten_params() -> None:
    assert flatten_params(_Cfg()) == {
        "optim.lr": 0.1,
        "optim.betas": (0.9, 0.99),
        "layers._0.n": 1,
        "layers._1.n": 2,
        "tags": {},
    }
    assert flatten_params(3, key="x") == {"x": 3}
    with pytest.raises(ValueError, match="without a name"):
        flatten_params(3)


def test_entry_point_is_registered() -> None:
    from torchx.util.entrypoints import load_group

    factory = load_group("torchx.tracker")["mlflow"]
    assert isinstance(factory("sqlite:///t.db"), MLflowTracker)


def _journal(home: Path, uri: str, *entries: dict[str, object]) -> Path:
    from torchx.tracker.mlflow._pending import journal_path

    os.environ["TORCHX_HOME"] = str(home)
    path = Path(journal_path(uri))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    path.chmod(0o600)
    return path


def test_a_journal_where_others_can_write_is_never_replayed(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A loose ``TORCHX_HOME/trackers`` made earlier (or by someone else): its journal
    could have been swapped, so it is not replayed, and nothing new is kept there."""
    from torchx.tracker.mlflow._pending import keep

    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    journal = _journal(
        tmp_path / "home", store, {"op": "add_metadata", "args": ["r"], "kwargs": {"x": 1}}
    )
    (tmp_path / "home" / "trackers").chmod(0o777)
    tracker = MLflowTracker("loose", store)
    tracker.add_metadata("r", a=1)
    assert journal.exists(), "the swapped journal must not be replayed"
    assert "is writable by others (mode 0777)" in caplog.text
    with pytest.raises(PermissionError, match=r"trackers is writable by others") as refused:
        keep(store, "add_metadata", ["r"], {"b": 2})
    assert "\n" not in str(refused.value)


def test_only_the_writes_a_journal_may_hold_are_replayed(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    _journal(tmp_path / "home", store,
             {"op": "_write", "args": ["add_metadata", None, [], {}], "kwargs": {}},
             {"op": "add_metadata", "args": ["r"], "kwargs": {"kept": 1}})  # fmt: skip
    tracker = MLflowTracker("ops", store)
    tracker.add_metadata("r", a=1)
    assert "not replaying '_write'" in caplog.text
    assert tracker.metadata("r") == {"kept": "1", "a": "1"}
