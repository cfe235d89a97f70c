"""``torchx check`` through the real CLI: local_cwd's probes, the table and JSON, plugins
with and without a check hook, and the exit status for what was named explicitly."""

from __future__ import annotations

import json
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from conftest import Cli, OneLineError

_PLUGIN = '''
TORCHX_PLUGIN_API = 1
from torchx.schedulers.local_scheduler import create_scheduler as _local
from torchx.util.readiness import not_ready, ready


from torchx.schedulers import Scheduler


class _Plain(Scheduler):
    """A third-party scheduler written before check_ready existed."""

    def __init__(self, session_name):
        super().__init__("acme_plain", session_name)

    def schedule(self, dryrun_info):
        return "app"

    def _submit_dryrun(self, app, cfg):
        raise ValueError("not used here")

    def describe(self, app_id):
        return None

    def list(self, cfg=None):
        return []

    def _cancel_existing(self, app_id):
        pass


def plain(session_name, **kwargs):
    return _Plain(session_name)


class _Probed(type(_local("x"))):
    def check_ready(self, cfg=None):
        if (cfg or {}).get("zone") == "down":
            return [not_ready("zone", "zone down is closed", "pick -cfg zone=up")]
        return [ready("zone", f"zone {(cfg or {}).get('zone', 'default')} is open")]


def probed(session_name, **kwargs):
    return _Probed(session_name)


class _Broken(type(_local("x"))):
    def check_ready(self, cfg=None):
        raise RuntimeError("the probe itself crashed")


def broken(session_name, **kwargs):
    return _Broken(session_name)


class _HeavySdk(type(_local("x"))):
    sdk_loaded = False

    def load_for_check(self):
        import time

        time.sleep(1.5)  # an SDK's import on a busy machine: longer than the --timeout below
        _HeavySdk.sdk_loaded = True

    def check_ready(self, cfg=None):
        if not _HeavySdk.sdk_loaded:
            self.load_for_check()  # what a probe does that imports its SDK itself
        return [ready("api", "answered")]


def heavy(session_name, **kwargs):
    return _HeavySdk(session_name)
'''


def _json(cli: Cli, *args: str, env: dict[str, str] | None = None) -> dict:  # type: ignore[type-arg]
    proc = cli.run("check", "--json", *args, env=env)
    assert proc.stderr == "" or proc.returncode != 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_local_cwd_is_ready(cli: Cli) -> None:
    proc = cli.run("check", "-s", "local_cwd")
    assert proc.returncode == 0, proc.stderr
    which, _blank, header, _rule, first, *rest = proc.stdout.splitlines()
    assert which.startswith("torchx-cli ") and "multi-distribution TorchX" in which
    assert header.split() == ["BACKEND", "STATUS", "CHECK", "FOUND"]
    assert first.split()[:3] == ["local_cwd", "ready", "state"]
    assert str(Path(cli.env["TORCHX_HOME"])) in first
    assert any(line.split()[:1] == ["python"] for line in rest), rest


def test_json_schema(cli: Cli) -> None:
    result = _json(cli, "-s", "local_cwd")
    assert set(result) == {"install", "schedulers", "trackers"}
    assert result["install"]["status"] == "ready"
    local = result["schedulers"]["local_cwd"]
    assert local["status"] == "ready"
    names = [c["name"] for c in local["checks"]]
    assert names == ["state dir", "python", "torchrun"]
    assert all(set(c) == {"name", "status", "found", "fix"} for c in local["checks"])


def test_unwritable_state_dir_is_not_ready_and_fails_when_named(
    cli: Cli, one_line_error: OneLineError, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {"TORCHX_HOME": str(blocker / "home")}
    proc = cli.run("check", "-s", "local_cwd", env=env)
    assert proc.returncode == 1
    assert "not ready" in proc.stdout
    assert "fix: make" in proc.stdout
    assert "not ready: local_cwd" in one_line_error(proc)
    # not named: reported, but the command succeeds (a survey, not a gate)
    assert cli.run("check", env=env).returncode == 0


def test_unknown_scheduler_is_one_line(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("check", "-s", "slurmm")
    assert "unknown scheduler 'slurmm'" in one_line_error(proc)


def test_plugins_take_part(cli: Cli, one_line_error: OneLineError) -> None:
    cli.add_distribution(
        "acme-sched",
        "1.0",
        {
            "torchx.schedulers": {
                "acme_plain": "acme:plain",
                "acme": "acme:probed",
                "acme_broken": "acme:broken",
            }
        },
        {"acme.py": _PLUGIN},
    )
    result = _json(cli, "-s", "acme_plain,acme,acme_broken")["schedulers"]
    assert result["acme_plain"]["status"] == "no checks"
    assert result["acme"]["checks"] == [
        {"name": "zone", "status": "ready", "found": "zone default is open", "fix": ""}
    ]
    broken = result["acme_broken"]["checks"][0]
    assert broken["status"] == "not ready"
    assert "the probe itself crashed" in broken["found"] and broken["fix"]

    proc = cli.run("check", "-s", "acme", "-cfg", "zone=down")
    assert "fix: pick -cfg zone=up" in proc.stdout
    assert "not ready: acme" in one_line_error(proc)
    assert cli.run("plugins").returncode == 0


def test_loading_a_schedulers_sdk_does_not_count_against_its_probes(cli: Cli) -> None:
    """``Scheduler.load_for_check`` runs before the deadline starts: a busy machine's
    import of the kubernetes client (4 s beside stress-ng) is not the API server being
    slow, whose probes took 0.06 s."""
    cli.add_distribution(
        "acme-sched", "1.0", {"torchx.schedulers": {"acme_heavy": "acme:heavy"}},
        {"acme.py": _PLUGIN},
    )  # fmt: skip
    result = _json(cli, "-s", "acme_heavy", "--timeout", "0.5")["schedulers"]["acme_heavy"]
    assert result["checks"] == [
        {"name": "api", "status": "ready", "found": "answered", "fix": ""}
    ], result


def test_trackers(cli: Cli, tmp_path: Path) -> None:
    store = tmp_path / "runs"
    env = {"TORCHX_TRACKERS": "fsspec", "TORCHX_TRACKER_FSSPEC_CONFIG": str(store)}
    result = _json(cli, env=env)
    fsspec = result["trackers"]["fsspec"]
    assert fsspec["status"] == "ready"
    assert "will be created" in fsspec["checks"][0]["found"]
    assert not store.exists(), "a check must create nothing"

    bad = tmp_path / "missing.conf"
    env["TORCHX_TRACKER_FSSPEC_CONFIG"] = str(bad)
    proc = cli.run("check", "-t", "fsspec", env=env)
    assert proc.returncode == 1
    assert f"config file {bad} does not exist" in proc.stdout


def test_no_tracker_configured_is_a_note(cli: Cli) -> None:
    proc = cli.run("check")
    assert proc.returncode == 0, proc.stderr
    assert "no tracker configured" in proc.stdout


def test_the_table_fits_the_terminal(cli: Cli) -> None:
    """Long findings and fixes wrap onto lines of their own instead of widening the table."""
    cli.add_distribution(
        "acme-sched", "1.0", {"torchx.schedulers": {"acme": "acme:probed"}}, {"acme.py": _PLUGIN}
    )
    long_zone = "zone-" + "x" * 150
    for columns in (100, 60):
        proc = cli.run(
            "check", "-s", "acme,local_cwd", "-cfg", f"zone={long_zone}",
            env={"COLUMNS": str(columns)},
        )  # fmt: skip
        lines = proc.stdout.splitlines()
        assert lines and max(len(line) for line in lines) <= columns, proc.stdout
        assert long_zone.replace("\n", "") in "".join(line.strip() for line in lines)
