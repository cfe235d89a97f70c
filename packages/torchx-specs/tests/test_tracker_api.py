"""Tracker API: backend contract, building trackers from names and env, AppRun fan-out."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest
from torchx_testsupport import write_dist

import torchx.tracker
from torchx.tracker.api import (
    ENV_TORCHX_JOB_ID,
    ENV_TORCHX_PARENT_RUN_ID,
    ENV_TORCHX_TRACKERS,
    AppRun,
    AppRunTrackableSource,
    Lineage,
    TrackerArtifact,
    TrackerBase,
    TrackerSource,
    _extract_tracker_name_and_config_from_environ,
    build_trackers,
    tracker_config_env_var_name,
    trackers_from_environ,
)

MEMORY_TRACKER_SOURCE = '''
from collections import defaultdict
from torchx.tracker.api import Lineage, TrackerArtifact, TrackerBase, TrackerSource

STORE = {}


class MemoryTracker(TrackerBase):
    """Keeps runs in a module-level dict shared by every instance with the same config."""

    def __init__(self, config):
        self.config = config
        self.runs = STORE.setdefault(config, defaultdict(
            lambda: {"artifacts": {}, "metadata": {}, "sources": []}))

    def add_artifact(self, run_id, name, path, metadata=None):
        self.runs[run_id]["artifacts"][name] = TrackerArtifact(name, path, metadata)

    def artifacts(self, run_id):
        return self.runs[run_id]["artifacts"]

    def add_metadata(self, run_id, **kwargs):
        self.runs[run_id]["metadata"].update(kwargs)

    def metadata(self, run_id):
        return self.runs[run_id]["metadata"]

    def add_source(self, run_id, source_id, artifact_name=None):
        self.runs[run_id]["sources"].append(TrackerSource(source_id, artifact_name))

    def sources(self, run_id, artifact_name=None):
        return [s for s in self.runs[run_id]["sources"]
                if artifact_name is None or s.artifact_name == artifact_name]

    def lineage(self, run_id):
        return Lineage()

    def run_ids(self, **kwargs):
        parent = kwargs.get("parent_run_id")
        return [r for r, d in list(self.runs.items())
                if parent is None or any(s.source_run_id == parent for s in d["sources"])]


def create(config):
    return MemoryTracker(config)


def broken(config):
    raise RuntimeError("tracker backend is down")
'''


class ListTracker(TrackerBase):
    """A complete in-memory backend used to exercise AppRun."""

    def __init__(self) -> None:
        self.runs: dict[str, dict[str, object]] = defaultdict(
            lambda: {"artifacts": {}, "metadata": {}, "sources": []}
        )

    def add_artifact(
        self, run_id: str, name: str, path: str, metadata: Mapping[str, object] | None = None
    ) -> None:
        self.runs[run_id]["artifacts"][name] = TrackerArtifact(name, path, metadata)  # type: ignore[index]

    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        return self.runs[run_id]["artifacts"]  # type: ignore[return-value]

    def add_metadata(self, run_id: str, **kwargs: object) -> None:
        self.runs[run_id]["metadata"].update(kwargs)  # type: ignore[attr-defined]

    def metadata(self, run_id: str) -> Mapping[str, object]:
        return self.runs[run_id]["metadata"]  # type: ignore[return-value]

    def add_source(self, run_id: str, source_id: str, artifact_name: str | None = None) -> None:
        self.runs[run_id]["sources"].append(TrackerSource(source_id, artifact_name))  # type: ignore[attr-defined]

    def sources(self, run_id: str, artifact_name: str | None = None) -> Iterable[TrackerSource]:
        sources: list[TrackerSource] = self.runs[run_id]["sources"]  # type: ignore[assignment]
        return list(sources)

    def lineage(self, run_id: str) -> Lineage:
        return Lineage()

    def run_ids(self, **kwargs: str) -> Iterable[str]:
        parent = kwargs.get("parent_run_id")
        return [
            r
            for r, d in list(self.runs.items())
            if parent is None or any(s.source_run_id == parent for s in d["sources"])  # type: ignore[attr-defined]
        ]


@pytest.fixture
def tracker_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "memtracker_for_tests.py").write_text(MEMORY_TRACKER_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    yield "memtracker_for_tests"
    sys.modules.pop("memtracker_for_tests", None)


def test_tracker_base_has_eight_abstract_methods() -> None:
    assert TrackerBase.__abstractmethods__ == {
        "add_artifact",
        "artifacts",
        "add_metadata",
        "metadata",
        "add_source",
        "sources",
        "lineage",
        "run_ids",
    }
    with pytest.raises(TypeError):
        TrackerBase()  # type: ignore[abstract]


def test_env_names_and_config_var() -> None:
    assert ENV_TORCHX_TRACKERS == "TORCHX_TRACKERS"
    assert ENV_TORCHX_PARENT_RUN_ID == "TORCHX_PARENT_RUN_ID"
    assert ENV_TORCHX_JOB_ID == "TORCHX_JOB_ID"
    assert tracker_config_env_var_name("fsspec") == "TORCHX_TRACKER_FSSPEC_CONFIG"


def test_extract_names_and_config_from_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHX_TRACKERS", raising=False)
    assert _extract_tracker_name_and_config_from_environ() == {}
    monkeypatch.setenv("TORCHX_TRACKERS", "a, b,,c")
    monkeypatch.setenv("TORCHX_TRACKER_A_CONFIG", "cfg-a")
    monkeypatch.setenv("TORCHX_TRACKER_B_CONFIG", "")
    assert _extract_tracker_name_and_config_from_environ() == {"a": "cfg-a", "b": None, "c": None}


def test_build_trackers_from_module_paths_skips_bad_ones(
    tracker_module: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        trackers = list(
            build_trackers(
                {
                    f"{tracker_module}:create": "cfg1",
                    "no.such.module:fn": None,
                    f"{tracker_module}:broken": None,
                    f"{tracker_module}:STORE": None,
                }
            )
        )
    assert len(trackers) == 1
    assert trackers[0].config == "cfg1"  # type: ignore[attr-defined]
    assert "no.such.module:fn" in caplog.text
    assert "tracker backend is down" in caplog.text
    assert f"{tracker_module}:STORE" in caplog.text
    assert list(build_trackers({})) == []


def test_build_tracker_says_why_in_one_line(tracker_module: str) -> None:
    from torchx.tracker.api import TrackerLoadError, build_tracker

    assert build_tracker(f"{tracker_module}:create", "cfg").config == "cfg"  # type: ignore[attr-defined]
    with pytest.raises(TrackerLoadError, match="`no-such-tracker` is neither"):
        build_tracker("no-such-tracker", None)
    with pytest.raises(TrackerLoadError, match=r"cannot be created: .*tracker backend is down"):
        build_tracker(f"{tracker_module}:broken", None)


def test_trackers_from_environ(tracker_module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHX_TRACKERS", raising=False)
    assert list(trackers_from_environ()) == []
    name = f"{tracker_module}:create"
    monkeypatch.setenv("TORCHX_TRACKERS", name)
    monkeypatch.setenv(tracker_config_env_var_name(name), "from-env")
    (tracker,) = trackers_from_environ()
    assert tracker.config == "from-env"  # type: ignore[attr-defined]


def test_app_run_fans_out_to_every_backend() -> None:
    first, second = ListTracker(), ListTracker()
    run = AppRun("local_cwd://s/app", [first, second])
    run.add_metadata(lr=0.1)
    run.add_artifact("model", "/tmp/m", {"v": 1})
    run.add_source("parent-run", "ckpt")
    assert run.job_id() == "local_cwd://s/app"
    for backend in (first, second):
        assert backend.metadata(run.id) == {"lr": 0.1}
        assert backend.artifacts(run.id)["model"] == TrackerArtifact("model", "/tmp/m", {"v": 1})
        assert list(backend.sources(run.id)) == [TrackerSource("parent-run", "ckpt")]
    (source,) = run.sources()
    assert isinstance(source, AppRunTrackableSource)
    assert source.parent.id == "parent-run" and source.artifact_name == "ckpt"
    assert list(source.parent.backends) == [first, second]
    child = AppRun("child", [first])
    child.add_source(run.id)
    assert [c.id for c in run.children()] == ["child"]
    assert list(AppRun("lonely", []).sources()) == []
    assert list(AppRun("lonely", []).children()) == []


def test_run_from_env_singleton(tracker_module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    AppRun.run_from_env.cache_clear()
    name = f"{tracker_module}:create"
    monkeypatch.setenv("TORCHX_TRACKERS", name)
    monkeypatch.setenv(tracker_config_env_var_name(name), "singleton")
    monkeypatch.setenv("TORCHX_JOB_ID", "local_cwd://torchx/app-1")
    monkeypatch.setenv("TORCHX_PARENT_RUN_ID", "parent-1")
    try:
        run = torchx.tracker.app_run_from_env()
        assert run is AppRun.run_from_env()
        assert run.id == "local_cwd://torchx/app-1"
        (backend,) = run.backends
        assert list(backend.sources(run.id)) == [TrackerSource("parent-1", None)]
    finally:
        AppRun.run_from_env.cache_clear()
    monkeypatch.delenv("TORCHX_JOB_ID")
    monkeypatch.delenv("TORCHX_TRACKERS")
    try:
        assert AppRun.run_from_env().id == "<UNDEFINED>"
    finally:
        AppRun.run_from_env.cache_clear()


def test_package_exports() -> None:
    assert torchx.tracker.TrackerBase is TrackerBase
    assert torchx.tracker.AppRun is AppRun
    with pytest.raises(AttributeError):
        _ = torchx.tracker.nope


def test_tracker_registered_through_entry_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_dist(
        site,
        "memtracker",
        {"torchx.tracker": {"mem": "memtracker_ep:create", "bad": "memtracker_ep:broken"}},
        {"memtracker_ep.py": MEMORY_TRACKER_SOURCE},
    )
    code = textwrap.dedent(
        """
        import json
        from torchx.tracker import app_run_from_env
        run = app_run_from_env()
        run.add_metadata(k="v")
        print(json.dumps({
            "configs": [b.config for b in run.backends],
            "metadata": [dict(b.metadata(run.id)) for b in run.backends],
        }))
        """
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "TORCHX_HOME": str(tmp_path / "home"),
        "TORCHX_TRACKERS": "mem,bad,missing",
        "TORCHX_TRACKER_MEM_CONFIG": "ep-config",
        "TORCHX_JOB_ID": "local_cwd://torchx/x",
    }
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"configs": ["ep-config"], "metadata": [{"k": "v"}]}
    assert "tracker backend is down" in proc.stderr
    assert "`missing`" in proc.stderr
