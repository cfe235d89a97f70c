"""Test tooling shared by every distribution's tests (on sys.path via pytest's ``pythonpath``).

Real-backend suites (tests/docker, tests/slurm, ...) share two pieces: what to do when their
backend is not up (`backend_missing`) and a Runner that cleans up after the test
(`runner_that_cleans_up`).

Entry-point registration is tested against real installed-looking distributions: a
``*.dist-info`` directory with ``METADATA`` and ``entry_points.txt`` plus the modules it names,
laid out in a directory that the test puts on ``sys.path``/``PYTHONPATH``, exactly as pip
would install them.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import pytest


def backend_missing(require_env: str, message: str) -> NoReturn:
    """Skips the test, or fails it where ``require_env`` is ``1``.

    tools/test-all.sh sets the ``TORCHX_REQUIRE_*`` variables: a suite meant to run against
    a real backend must not pass there by skipping.
    """
    if os.environ.get(require_env) == "1":
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def runner_that_cleans_up(finish: Callable[[Any, str], object]) -> Iterator[Any]:
    """A Runner that records each handle it schedules and calls ``finish(runner, handle)``
    on every one when the test ends (cancel, delete, ...).

    The handles are in ``runner.test_handles``; a test adds those it launched another way
    (the CLI) so that they are cleaned up too.
    """
    from torchx.runner import get_runner

    with get_runner() as runner:
        handles: list[str] = []
        schedule = runner.schedule

        def recording_schedule(dryrun_info: Any) -> str:
            handle: str = schedule(dryrun_info)
            handles.append(handle)
            return handle

        runner.schedule = recording_schedule
        runner.test_handles = handles
        yield runner
        for handle in handles:
            finish(runner, handle)


def write_dist(
    site: Path,
    name: str,
    entry_points: Mapping[str, Mapping[str, str]],
    modules: Mapping[str, str] | None = None,
    version: str = "1.0",
) -> Path:
    """Installs distribution ``name`` into ``site``; returns its ``.dist-info`` directory.

    ``entry_points`` maps a group to ``{entry name: "module:attr"}``; ``modules`` maps a path
    relative to ``site`` (``my_pkg/__init__.py``) to its source (dedented).
    """
    dist_info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    )
    lines = []
    for group, entries in entry_points.items():
        lines.append(f"[{group}]")
        lines += [f"{key} = {value}" for key, value in entries.items()]
        lines.append("")
    (dist_info / "entry_points.txt").write_text("\n".join(lines))
    for rel_path, source in (modules or {}).items():
        path = site / rel_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return dist_info


class StandInApp:
    """An app for the log followers, which ask only ``describe(app_id).state``: RUNNING until
    ``finish()``. Real apps of real schedulers are covered in each scheduler's own tests."""

    def __init__(self) -> None:
        from torchx.specs import AppState

        self.state = AppState.RUNNING

    def describe(self, app_id: str) -> Any:
        return _Description(self.state)

    def finish(self) -> None:
        from torchx.specs import AppState

        self.state = AppState.SUCCEEDED


class _Description:
    def __init__(self, state: Any) -> None:
        self.state = state
