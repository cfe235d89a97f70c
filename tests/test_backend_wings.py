"""Every backend's wing (``torchx.schedulers._<backend>``) has the same rooms, so that a
newcomer adding a cause, a waiting reason or a sweep feature knows which file of each
backend to open; and each entry module's docstring lists every module of its wing."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from torchx.specs.vocabulary import Cause

ROOT = Path(__file__).resolve().parent.parent

WINGS = {
    "local_scheduler": ("torchx-runner", "_local"),
    "docker_scheduler": ("torchx-sched-docker", "_docker"),
    "slurm_scheduler": ("torchx-sched-slurm", "_slurm"),
    "kubernetes_scheduler": ("torchx-sched-k8s", "_kubernetes"),
    "aws_batch_scheduler": ("torchx-sched-batch", "_aws_batch"),
    "ray_scheduler": ("torchx-sched-ray", "_ray"),
}
"""entry module -> (distribution, wing)."""

ROOMS = {
    "request": "options, rendering, the sweep request",
    "status": "state, waiting, timeline, attempts, the sweep's status",
    "failure": "native reasons -> causes",
    "logs": "log reading, the progress tail too",
    "readiness": "torchx check",
}
CALLS = ("client", "commands")
"""The room for the SDK's or the commands' calls: one of these names."""
NO_CALLS = {
    "_local": "local_cwd calls no SDK and no command: its launcher and supervisor start the"
    " processes themselves",
}


def _wing_dir(distribution: str, wing: str) -> Path:
    return ROOT / "packages" / distribution / "src" / "torchx" / "schedulers" / wing


def _modules(distribution: str, wing: str) -> set[str]:
    return {p.stem for p in _wing_dir(distribution, wing).glob("*.py") if p.stem != "__init__"}


def test_every_backend_has_a_wing() -> None:
    entries = {
        p.stem for p in ROOT.glob("packages/torchx-sched-*/src/torchx/schedulers/*_scheduler.py")
    } | {"local_scheduler"}
    assert entries == set(WINGS), "a backend without a wing here, or a wing without a backend"


@pytest.mark.parametrize("entry", sorted(WINGS))
def test_the_wing_has_every_room(entry: str) -> None:
    distribution, wing = WINGS[entry]
    modules = _modules(distribution, wing)
    missing = [f"{room}.py ({what})" for room, what in ROOMS.items() if room not in modules]
    if wing not in NO_CALLS and not modules & set(CALLS):
        missing.append("client.py or commands.py (the SDK's or the commands' calls)")
    assert missing == [], f"{wing} lacks: " + ", ".join(missing)


@pytest.mark.parametrize("entry", sorted(WINGS))
def test_the_entry_docstring_lists_every_module_of_its_wing(entry: str) -> None:
    distribution, wing = WINGS[entry]
    path = ROOT / "packages" / distribution / "src" / "torchx" / "schedulers" / f"{entry}.py"
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    # the wing's list: one bullet per module (or two that share one job), ``name``: its job
    listed = {
        name
        for line in docstring.splitlines()
        if (match := re.match(r"\* (``\w+``(?: and ``\w+``)?):", line))
        for name in re.findall(r"``(\w+)``", match.group(1))
    }
    unlisted = sorted(_modules(distribution, wing) - listed)
    assert unlisted == [], f"{entry}'s docstring does not name: {', '.join(unlisted)}"


def _causes_written(distribution: str, wing: str, entry: str) -> set[str]:
    """The causes the wing's code names, on the lines that set or compare a cause."""
    words = {cause.value for cause in Cause}
    entry_path = _wing_dir(distribution, wing).parent / f"{entry}.py"
    found = set()
    for path in [*_wing_dir(distribution, wing).glob("*.py"), entry_path]:
        for line in path.read_text().splitlines():
            if "cause" in line:
                found |= set(re.findall(r"[\"']([a-z_]+)[\"']", line)) & words
    return found


@pytest.mark.parametrize("entry", sorted(WINGS))
def test_the_wing_says_how_it_names_every_cause(entry: str) -> None:
    """A cause added to ``Cause`` fails here until each backend's ``failure.py`` says how
    (or whether) it names it; and a cause a backend's code writes is one its table names."""
    distribution, wing = WINGS[entry]
    table = importlib.import_module(f"torchx.schedulers.{wing}.failure").CAUSES
    forgotten = [cause.value for cause in Cause if cause not in table]
    assert forgotten == [], (
        f"torchx/schedulers/{wing}/failure.py: CAUSES does not say how this backend names"
        f" {', '.join(forgotten)} (the native evidence, or None where it never does)"
    )
    never = {cause.value for cause, how in table.items() if how is None}
    written = _causes_written(distribution, wing, entry)
    assert sorted(written & never) == [], f"{wing} writes causes its CAUSES says it never names"
