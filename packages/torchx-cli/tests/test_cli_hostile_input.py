"""Odd or hostile input: one clear line, a non-zero exit, nothing started, nothing echoed
that could flood or rewrite the terminal."""

from __future__ import annotations

import json

import pytest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from conftest import Cli, OneLineError


def _stdin(cli: Cli, **fields: object) -> str:
    doc = {"component_name": "utils.echo", "scheduler": "local_cwd", "scheduler_args": {}}
    return json.dumps({**doc, **fields})


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"dryrun": "yes"}, "`dryrun` is str 'yes': input should be a valid boolean"),
        ({"component_args_str": [{"a": 1}]}, "`component_args_str.0` is dict {'a': 1}"),
        ({"scheduler_args": []}, "`scheduler_args` is list []"),
        ({"wait": 1}, "`wait` is int 1: input should be a valid boolean"),
    ],
)
def test_stdin_json_is_type_checked(
    cli: Cli, one_line_error: OneLineError, fields: dict[str, object], expected: str
) -> None:
    proc = cli.run("run", "--stdin", input=_stdin(cli, **fields))
    assert expected in one_line_error(proc)
    assert not (cli.root / "home" / ".torchx" / "local_cwd").exists()


def test_nul_byte_in_an_argument(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("run", "--stdin", input=_stdin(cli, component_args_str=["--msg", "a\0b"]))
    assert "has a NUL byte in 'a\\x00b'" in one_line_error(proc)


def test_absurd_replica_count(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("run", "-s", "local_cwd", "utils.echo", "--num_replicas", "1000000")
    assert "more than 100,000 replicas per role is refused" in one_line_error(proc)


def test_sys_exit_in_a_component_file(cli: Cli, one_line_error: OneLineError) -> None:
    (cli.cwd / "exiter.py").write_text("import sys\nsys.exit(3)\ndef main() -> None: ...\n")
    proc = cli.run("run", "./exiter.py:main")
    assert "called sys.exit(3) while it was loaded" in one_line_error(proc)


def test_over_long_handle_is_not_echoed(cli: Cli, one_line_error: OneLineError) -> None:
    handle = "local_cwd://torchx/" + "a" * 100_000
    for command in ("status", "describe", "cancel", "delete"):
        proc = cli.run(command, handle)
        line = one_line_error(proc)
        assert "is longer than 1024 characters" in line and len(line) < 300
    proc = cli.run("log", handle)
    assert len(one_line_error(proc)) < 300


def test_control_bytes_in_a_handle_are_escaped(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("status", "local_cwd://torchx/x\x1b[2Jy")
    line = one_line_error(proc)
    assert "\x1b" not in proc.stderr and "x\\x1b[2Jy" in line
