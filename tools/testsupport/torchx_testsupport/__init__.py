"""Test tooling shared by every distribution's tests (on sys.path via pytest's ``pythonpath``)
and by the benchmarks (``benchmarks/_harness.py`` puts it on sys.path; their venv has no
pytest, so pytest is imported only where it is used).

Real-backend suites (tests/docker, tests/slurm, ...) share three pieces: whether a server
answers (`http_ok`), what to do when their backend is not up (`backend_missing`) and a Runner
that cleans up after the test (`runner_that_cleans_up`).

Light commands must not import a scheduler SDK: `sdk_imports` runs a ``torchx`` command in a
probe that reports its exit status and the SDK modules it loaded (tests/test_sdk_imports.py
and the benchmarks).

Entry-point registration is tested against real installed-looking distributions: a
``*.dist-info`` directory with ``METADATA`` and ``entry_points.txt`` plus the modules it names,
laid out in a directory that the test puts on ``sys.path``/``PYTHONPATH``, exactly as pip
would install them.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, NoReturn


def http_ok(url: str, timeout: float) -> bool:
    """Whether a GET of ``url`` answers 200 within ``timeout`` seconds."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def backend_missing(require_env: str, message: str) -> NoReturn:
    """Skips the test, or fails it where ``require_env`` is ``1``.

    tools/test-all.sh sets the ``TORCHX_REQUIRE_*`` variables: a suite meant to run against
    a real backend must not pass there by skipping.
    """
    import pytest

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


def wait_until(
    predicate: Callable[[], object], what: str, timeout: float = 60, interval: float = 0.01
) -> None:
    """Polls ``predicate`` every ``interval`` s until it is true; fails naming ``what``
    after ``timeout`` s (for states that come with no event to wait on)."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def terminal_status(runner: Any, handle: str, timeout: float = 60) -> Any:
    """``runner``'s status of ``handle`` once it is terminal; fails after ``timeout`` s."""
    import time

    status = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = runner.status(handle)
        if status is not None and status.is_terminal():
            return status
        time.sleep(0.2)
    raise AssertionError(f"{handle} still {status} after {timeout} s")


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

    def describe(self, app_id: str) -> StandInApp:
        return self

    def finish(self) -> None:
        from torchx.specs import AppState

        self.state = AppState.SUCCEEDED


_SDK_PROBE = """
import json, sys
from torchx.cli.main import main
roots, argv = sys.argv[1].split(","), sys.argv[2:]
code = None
try:
    main(argv)
except SystemExit as e:
    code = e.code
modules = sorted(m for m in sys.modules if m.split(".")[0] in roots)
print(json.dumps({"exit": code, "modules": modules}, default=str), file=sys.stderr)
"""


class SdkImports(NamedTuple):
    """What :func:`sdk_imports` saw of one ``torchx`` command."""

    exit_code: int | str | None
    """The command's ``SystemExit`` code: ``0`` or ``None`` when it succeeded."""
    modules: list[str]
    """The SDK modules loaded by then, sorted."""
    stderr: str
    """Everything the command printed to stderr, the probe's own line last."""

    @property
    def succeeded(self) -> bool:
        return self.exit_code in (0, None)


def sdk_imports(
    python: Path | str,
    argv: Sequence[str],
    sdks: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    timeout: float = 60,
) -> SdkImports:
    """Runs ``torchx <argv>`` in-process under ``python`` and reports its exit code and which
    modules of ``sdks`` (top-level names such as ``docker``) it imported. A command that
    fails before it reaches a scheduler imports nothing: check :attr:`SdkImports.succeeded`
    too. A probe that could not run (no torchx, a crash) reports its own exit status."""
    proc = subprocess.run(
        [str(python), "-c", _SDK_PROBE, ",".join(sdks), *argv],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    try:
        record = json.loads(proc.stderr.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return SdkImports(proc.returncode or "no probe output", [], proc.stderr)
    return SdkImports(record["exit"], record["modules"], proc.stderr)


def one_error_line(proc: Any, *, alone: bool = True, no_stdout: bool = False) -> str:
    """Checks that a ``torchx`` command (a ``subprocess.CompletedProcess``) was refused with
    one clear line: a non-zero exit, no traceback and one ``torchx: error:`` line on stderr,
    the only line there unless ``alone`` is false (log lines before it allowed); with
    ``no_stdout``, nothing on stdout. Returns the error line."""
    assert proc.returncode != 0, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("torchx: error: ")]
    assert len(errors) == 1 and (not alone or lines == errors), proc.stderr
    if no_stdout:
        assert not proc.stdout.strip(), proc.stdout
    return str(errors[0])


def torchx_check(*args: str, env: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """``torchx check --json ARGS`` run for real: ``{backend: {"status", "checks": {name:
    (status, found, fix)}, "exit": code}}`` for schedulers and trackers alike."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    proc = subprocess.run(
        [str(Path(sys.executable).parent / "torchx"), "check", "--json", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    result = json.loads(proc.stdout)
    out: dict[str, dict[str, Any]] = {}
    for kind in ("schedulers", "trackers"):
        for name, entry in result[kind].items():
            checks = {c["name"]: (c["status"], c["found"], c["fix"]) for c in entry["checks"]}
            for status, _, fix in checks.values():
                assert status in ("ready", "no checks") or fix, f"{name}: a problem without a fix"
            out[name] = {"status": entry["status"], "checks": checks, "exit": proc.returncode}
    return out


def all_backends_down_env(tmp: Any, host: str = "127.0.0.1") -> dict[str, str]:
    """Environment in which every backend ``torchx check`` probes is configured but down
    (``host`` 127.0.0.1: a port nothing listens on, refused at once) or unreachable (a
    black-holed ``host`` such as 192.0.2.1: connections hang until the probes give up)."""
    import json
    import socket
    from pathlib import Path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = Path(tmp)
    (tmp / "slurm.conf").write_text(
        "ClusterName=down\n"
        f"SlurmctldHost=down({host})\nSlurmctldPort={port}\n"
        f"AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost={host}\n"
        f"AccountingStoragePort={port}\n"
        "NodeName=n1 CPUs=1 State=UNKNOWN\nPartitionName=debug Nodes=n1 Default=YES State=UP\n"
    )
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "down", "cluster": {"server": f"http://{host}:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "down", "context": {"cluster": "down", "user": "u"}}],
        "current-context": "down",
    }
    (tmp / "kubeconfig").write_text(json.dumps(kubeconfig))
    (tmp / ".torchxconfig").write_text("[aws_batch]\nqueue = some-queue\n")
    return {
        "DOCKER_HOST": f"tcp://{host}:{port}",
        "SLURM_CONF": str(tmp / "slurm.conf"),
        "KUBECONFIG": str(tmp / "kubeconfig"),
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "TORCHXCONFIG": str(tmp / ".torchxconfig"),
        "TORCHX_TRACKERS": "mlflow,fsspec",
        "TORCHX_TRACKER_MLFLOW_CONFIG": f"http://{host}:{port}",
        "TORCHX_TRACKER_FSSPEC_CONFIG": str(tmp / "runs"),
    }


def build_wheels(root: Any, dists: list[str], out: Any) -> list[Any]:
    """Wheels of ``packages/<dist>`` for each of ``dists`` (no isolation: the test env has
    hatchling), into ``out``; returns their paths."""
    import subprocess
    import sys
    from pathlib import Path

    for dist in dists:
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", str(out)],
            cwd=Path(root) / "packages" / dist,
            check=True,
            capture_output=True,
        )
    return sorted(Path(out).glob("*.whl"))


def fresh_venv(path: Any) -> tuple[Any, list[str]]:
    """A new virtualenv at ``path``: ``(its python, the argv prefix that installs into it)``
    (uv where it is on PATH, else the venv's pip)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    python = Path(path) / "bin" / "python"
    uv = shutil.which("uv")
    install = (
        [uv, "pip", "install", "--python", str(python)]
        if uv
        else [str(python), "-m", "pip", "install", "-q"]
    )
    return python, install


def submitted_as_status_says(row: Any, status: Any) -> None:
    """A ``list`` row's ``submitted`` (``torchx ui``'s age) is the moment the app's status
    timeline starts with, within the second (a listing may read whole seconds)."""
    (submitted,) = [p.start for p in status.timeline if p.phase == "submitted"]
    assert row.submitted is not None, row
    assert abs(row.submitted - submitted) < 1.0, (row.submitted, submitted)
