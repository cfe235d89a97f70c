"""``torchx list --state/--since/--name/--limit`` on local_cwd, and bad filters."""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from conftest import Cli, OneLineError


def _listed(cli: Cli, *args: str) -> list[dict[str, str]]:
    proc = cli.run("list", "-s", "local_cwd", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_filters(cli: Cli) -> None:
    for args in (
        ["utils.echo", "--msg", "a"],
        ["utils.sh", "exit", "3"],
        ["utils.echo", "--msg", "b"],
    ):
        cli.run("run", "-s", "local_cwd", *args)
    everything = _listed(cli)
    assert len(everything) == 3
    failed = _listed(cli, "--state", "failed")
    assert [a["name"] for a in failed] == ["sh"]
    assert {a["name"] for a in _listed(cli, "--state", "SUCCEEDED,failed")} == {"echo", "sh"}
    assert [a["name"] for a in _listed(cli, "--name", "ec*")] == ["echo", "echo"]
    newest = _listed(cli, "--name", "echo", "--limit", "1")
    assert len(newest) == 1 and newest[0]["app_id"] == everything[-1]["app_id"]
    assert _listed(cli, "--limit", "0") == []


def test_since_is_said_to_be_unsupported_where_it_is(cli: Cli) -> None:
    cli.run("run", "-s", "local_cwd", "utils.echo", "--msg", "a")
    proc = cli.run("list", "-s", "local_cwd", "--since", "1h")
    assert proc.returncode == 0
    assert "cannot list by start time: --since is not applied" in proc.stderr


def test_bad_filters_are_one_line(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("list", "-s", "local_cwd", "--state", "runing")
    assert proc.returncode == 2
    assert "unknown app state 'runing' in --state; use some of: unsubmitted" in one_line_error(proc)
    proc = cli.run("list", "-s", "local_cwd", "--since", "yesterday")
    assert "--since 'yesterday' is neither a duration" in one_line_error(proc)
    proc = cli.run("list", "-s", "local_cwd", "--limit", "-1")
    assert "--limit must be 0 or more" in one_line_error(proc)
