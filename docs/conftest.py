"""Runs every example of the documentation site (``hatch run docs:test``).

Python blocks run as they are (each page's blocks share one namespace). ``console``
blocks are shell transcripts: each ``$ command`` (with ``> `` continuation lines) runs in
bash, in a directory of its own per page, and its output (stdout and stderr together)
must match the lines shown under it, ``...`` standing for any text. Blocks marked
``shell`` or ``bash`` are shown, never run (cluster set-up, installs).

A command that runs a real job on ``local_docker``, ``slurm``, ``ray`` or ``kubernetes``
needs that backend: it is skipped where the backend is not up, unless
``TORCHX_REQUIRE_DOCKER`` / ``TORCHX_REQUIRE_SLURM`` / ``TORCHX_REQUIRE_RAY`` /
``TORCHX_REQUIRE_K8S`` is set (as the test command sets it), which makes that a failure.
``kubernetes`` commands run against the cluster of ``tools/k8s-up.sh`` (its admin
kubeconfig), which has the LocalQueue ``user-queue`` the Kueue example uses.
``--dryrun`` commands need no backend. ``$IMAGE`` is an image the Docker daemon has.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sybil import Example, Sybil
from sybil.parsers.myst import CodeBlockParser, PythonCodeBlockParser, SkipParser
from torchx_testsupport.k8s.cluster import ADMIN

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
TEST_IMAGE = os.environ.get("TORCHX_TEST_IMAGE", "torchx-test/python:3.11-r2")
COMMAND_TIMEOUT_S = 300

_CHECKER = doctest.OutputChecker()
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def parse_transcript(text: str) -> list[tuple[str, str]]:
    """``[(command, expected output)]`` of a console block."""
    steps: list[tuple[str, list[str]]] = []
    continuing = False
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
            continuing = True
        elif continuing and (line.startswith("> ") or line == ">"):
            command, out = steps[-1]
            steps[-1] = (command + "\n" + line[2:], out)
        elif steps:
            continuing = False
            steps[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"console block starts with output, not a `$ ` command: {line!r}")
    return [(command, "\n".join(out).strip("\n")) for command, out in steps]


def _backend_of(command: str) -> str | None:
    """The backend a command needs up, if any (dry runs and local_cwd need none)."""
    if "--dryrun" in command:
        return None
    match = re.search(r"(?:-s|--scheduler)[ =](\w+)", command)
    scheduler = match.group(1) if match else None
    if scheduler == "aws_batch":
        raise AssertionError(
            f"a runnable docs example submits to {scheduler}, which cannot run here: {command}"
        )
    backends = {"local_docker": "DOCKER", "slurm": "SLURM", "ray": "RAY", "kubernetes": "K8S"}
    return backends.get(scheduler or "")


def _backend_up(backend: str) -> tuple[bool, str]:
    try:
        if backend == "DOCKER":
            proc = subprocess.run(
                ["docker", "image", "inspect", TEST_IMAGE],
                check=False,
                capture_output=True,
                timeout=20,
            )
            return proc.returncode == 0, f"no Docker daemon with the image {TEST_IMAGE}"
        if backend == "K8S":
            proc = subprocess.run(
                ["bash", str(ROOT / "tools" / "k8s-up.sh"), "--check"],
                check=False,
                capture_output=True,
                timeout=30,
            )
            return proc.returncode == 0, "no Kubernetes cluster answers"
        if backend == "RAY":
            import urllib.request

            url = os.environ.get("RAY_ADDRESS") or "http://127.0.0.1:8265"
            with urllib.request.urlopen(f"{url}/api/version", timeout=10):  # noqa: S310
                return True, ""
        proc = subprocess.run(
            ["scontrol", "ping"], capture_output=True, text=True, timeout=20, check=False
        )
        return "is UP" in proc.stdout, "no Slurm controller answers `scontrol ping`"
    except (OSError, subprocess.SubprocessError) as e:
        return False, f"no {backend.lower()} backend ({e})"


def _require(backend: str) -> None:
    up, why = _backend_up(backend)
    if up:
        return
    message = f"{why} (tools/{backend.lower()}-up.sh starts one)"
    if os.environ.get(f"TORCHX_REQUIRE_{backend}") == "1":
        pytest.fail(message)
    pytest.skip(message)


def evaluate_console(example: Example) -> str | None:
    """Runs each command of a console block; a mismatch is returned as the failure."""
    namespace: dict[str, Any] = example.namespace
    for command, expected in parse_transcript(example.parsed):
        backend = _backend_of(command)
        if backend:
            _require(backend)
        proc = subprocess.run(
            ["bash", "-c", command],
            check=False,
            cwd=namespace["__workdir__"],
            env=namespace["__env__"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
        got = proc.stdout.rstrip("\n")
        namespace["__handles__"].update(
            re.findall(r"\b(?:local_docker|kubernetes)://[\w.-]+/[\w.:-]+", got)
        )
        if expected and not _CHECKER.check_output(expected + "\n", got + "\n", _FLAGS):
            return f"$ {command}\nexpected:\n{expected}\ngot (exit {proc.returncode}):\n{got}"
        if not expected and proc.returncode != 0:
            return f"$ {command}\nexited {proc.returncode}:\n{got}"
    return None


def _setup(namespace: dict[str, Any]) -> None:
    """Each page gets its own working directory and TORCHX_HOME; Python blocks run there."""
    workdir = Path(tempfile.mkdtemp(prefix="torchx-docs-"))
    env = dict(os.environ)
    env.update(TORCHX_HOME=str(workdir / ".torchx"), IMAGE=TEST_IMAGE, PYTHONUNBUFFERED="1")
    # the examples that run torch in containers mount the environment running these tests
    # (it has torch) and the Python it was made from: the test image has Python, no torch
    env.update(TORCH_ENV=sys.prefix, PYTHON_HOME=os.path.realpath(sys.base_prefix))
    env.pop("TORCHXCONFIG", None)
    if ADMIN.exists():  # the test cluster's (tools/k8s-up.sh)
        env["KUBECONFIG"] = str(ADMIN)
    namespace["__workdir__"] = str(workdir)
    namespace["__env__"] = env
    namespace["__handles__"] = set()
    namespace["__saved__"] = (os.getcwd(), os.environ.get("TORCHX_HOME"))
    os.chdir(workdir)
    os.environ["TORCHX_HOME"] = env["TORCHX_HOME"]


def _teardown(namespace: dict[str, Any]) -> None:
    cwd, home = namespace["__saved__"]
    os.chdir(cwd)
    if home is None:
        os.environ.pop("TORCHX_HOME", None)
    else:
        os.environ["TORCHX_HOME"] = home
    _stop_apps(namespace)
    shutil.rmtree(namespace["__workdir__"], ignore_errors=True)


def _stop_apps(namespace: dict[str, Any]) -> None:
    """Deletes what a page's examples started on local_docker and kubernetes (containers
    and jobs outlive runs)."""
    for handle in sorted(namespace["__handles__"]):
        subprocess.run(
            ["torchx", "delete", handle],
            check=False,
            env=namespace["__env__"],
            capture_output=True,
            timeout=60,
        )


pytest_collect_file = Sybil(
    parsers=[
        PythonCodeBlockParser(),
        CodeBlockParser("console", evaluate_console),
        SkipParser(),
    ],
    patterns=["*.md"],
    excludes=["_build/*", "_generated/*", "README.md"],
    setup=_setup,
    teardown=_teardown,
).pytest()


@pytest.fixture(scope="session")
def built_site() -> Iterator[Path]:
    """The site, built once per test session with warnings as errors."""
    out = Path(tempfile.mkdtemp(prefix="torchx-docs-html-"))
    proc = subprocess.run(
        ["sphinx-build", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, f"the docs build failed:\n{proc.stdout}\n{proc.stderr}"
    yield out
    shutil.rmtree(out, ignore_errors=True)
