"""``torchx tracker list ...`` against the fsspec tracker on local files."""

from __future__ import annotations

import pytest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from conftest import Cli, OneLineError


@pytest.fixture
def tracked(cli: Cli) -> dict[str, str]:
    from torchx.tracker.backend.fsspec import create

    root = cli.root / "tracker_data"
    root.mkdir()
    tracker = create(str(root))
    tracker.add_metadata("parent-run", owner="alice")
    tracker.add_metadata("child-run", lr=0.1, owner="bob")
    tracker.add_source("child-run", "parent-run")
    tracker.add_artifact("child-run", "model", "/ckpt/model.pt", {"epoch": 3})
    tracker.add_artifact("child-run", "logs", "/ckpt/logs")
    return {"TORCHX_TRACKERS": "fsspec", "TORCHX_TRACKER_FSSPEC_CONFIG": str(root)}


def _rows(stdout: str) -> tuple[list[str], list[list[str]]]:
    header, rule, *rows = stdout.splitlines()
    assert set(rule) <= {"-", " "}
    return header.split(), [row.split() for row in rows]


def test_list_jobs(cli: Cli, tracked: dict[str, str]) -> None:
    proc = cli.run("tracker", "list", "jobs", env=tracked)
    assert proc.returncode == 0, proc.stderr
    header, rows = _rows(proc.stdout)
    assert header == ["JOB", "ID"]
    assert sorted(r[0] for r in rows) == ["child-run", "parent-run"]

    children = cli.run("tracker", "list", "jobs", "--parent-run-id", "parent-run", env=tracked)
    assert children.returncode == 0, children.stderr
    assert [r[0] for r in _rows(children.stdout)[1]] == ["child-run"]


def test_list_metadata(cli: Cli, tracked: dict[str, str]) -> None:
    proc = cli.run("tracker", "list", "metadata", "child-run", env=tracked)
    assert proc.returncode == 0, proc.stderr
    header, rows = _rows(proc.stdout)
    assert header == ["KEY", "VALUE"]
    assert sorted(rows) == [["lr", "0.1"], ["owner", "bob"]]


def test_list_artifacts(cli: Cli, tracked: dict[str, str]) -> None:
    proc = cli.run("tracker", "list", "artifacts", "child-run", env=tracked)
    assert proc.returncode == 0, proc.stderr
    header, rows = _rows(proc.stdout)
    assert header == ["ARTIFACT", "PATH", "METADATA"]
    assert sorted(r[:2] for r in rows) == [["logs", "/ckpt/logs"], ["model", "/ckpt/model.pt"]]
    only = cli.run("tracker", "list", "artifacts", "--artifact", "model", "child-run", env=tracked)
    assert [r[:2] for r in _rows(only.stdout)[1]] == [["model", "/ckpt/model.pt"]]


def test_lineage(cli: Cli, tracked: dict[str, str]) -> None:
    from torchx.tracker.backend.fsspec import create

    create(tracked["TORCHX_TRACKER_FSSPEC_CONFIG"]).add_source(
        "grandchild-run", "child-run", "model"
    )
    proc = cli.run("tracker", "list", "lineage", "child-run", env=tracked)
    assert proc.returncode == 0, proc.stderr
    header, rows = _rows(proc.stdout)
    assert header == ["RELATION", "RUN", "ID", "ARTIFACT"]
    assert rows == [["source", "parent-run"], ["descendant", "grandchild-run", "model"]]

    sources = cli.run("tracker", "list", "lineage", "--sources-only", "child-run", env=tracked)
    assert _rows(sources.stdout)[1] == [["source", "parent-run"]]
    through = cli.run(
        "tracker",
        "list",
        "lineage",
        "--artifact",
        "model",
        "--descendants-only",
        "child-run",
        env=tracked,
    )
    assert _rows(through.stdout)[1] == [["descendant", "grandchild-run", "model"]]
    none = cli.run("tracker", "list", "lineage", "--artifact", "logs", "child-run", env=tracked)
    assert _rows(none.stdout)[1] == []


def test_no_tracker_configured(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("tracker", "list", "jobs")
    assert proc.returncode == 1
    assert "no tracker configured" in one_line_error(proc)


def test_unknown_tracker_is_one_line(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("tracker", "list", "jobs", env={"TORCHX_TRACKERS": "no_such_tracker"})
    assert proc.returncode == 1
    assert "tracker `no_such_tracker` is neither a `torchx.tracker` entry point" in one_line_error(
        proc
    )


def test_tracker_without_command_prints_help(cli: Cli) -> None:
    proc = cli.run("tracker")
    assert proc.returncode == 0
    assert "list" in proc.stdout
