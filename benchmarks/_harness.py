"""Shared helpers for the benchmark scripts: venvs to compare and a robust timer.

Every figure is a ratio against a floor measured in the same run (``python -c pass`` in the
same venv), so results compare across machines. Upstream TorchX 0.7.0 is installed from PyPI
into its own venv for side-by-side numbers.

Measured commands run without ``PYTHONDONTWRITEBYTECODE``: a user's install has ``.pyc``
files, so compiling sources on every start would time something no user pays.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / ".bench"
UPSTREAM_VERSION = "0.7.0"
DISTS = ("torchx-specs", "torchx-runner", "torchx-cli")


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_upstream_venv() -> Path:
    """A venv holding upstream ``torchx==0.7.0`` from PyPI (created once, then reused)."""
    venv = BENCH_DIR / "upstream"
    marker = venv / ".torchx-installed"
    if not marker.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(_venv_python(venv)), "-m", "pip", "install", "-q", f"torchx=={UPSTREAM_VERSION}"],
            check=True,
        )
        marker.touch()
    return venv


def ensure_clean_venv(name: str, dists: Sequence[str] = DISTS) -> Path:
    """A venv with our distributions installed from freshly built wheels (not editable)."""
    venv = BENCH_DIR / name
    wheels = Path(tempfile.mkdtemp(prefix="torchx-wheels-"))
    try:
        for dist in dists:
            subprocess.run(
                [sys.executable, "-m", "build", "--wheel", "-q", "-o", str(wheels)],
                cwd=ROOT / "packages" / dist,
                check=True,
                stdout=subprocess.DEVNULL,
            )
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [
                str(_venv_python(venv)),
                "-m",
                "pip",
                "install",
                "-q",
                *map(str, wheels.glob("*.whl")),
            ],
            check=True,
        )
    finally:
        shutil.rmtree(wheels, ignore_errors=True)
    return venv


def bench_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without ``PYTHONDONTWRITEBYTECODE``."""
    source = os.environ if base is None else base
    return {k: v for k, v in source.items() if k != "PYTHONDONTWRITEBYTECODE"}


def compile_sources(python: Path | str, paths: Sequence[Path] | None = None) -> None:
    """Byte-compiles ``paths`` (default: every ``packages/*/src``) with ``python``.

    Editable installs leave the sources in the repository, where nothing writes ``.pyc``
    files while ``PYTHONDONTWRITEBYTECODE`` is set; a wheel install would have them.
    """
    targets = paths if paths is not None else sorted(ROOT.glob("packages/*/src"))
    subprocess.run(
        [str(python), "-m", "compileall", "-q", *map(str, targets)],
        env=bench_env(),
        check=True,
        stdout=subprocess.DEVNULL,
    )


def time_command(
    argv: Sequence[str],
    runs: int = 15,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> float:
    """Median wall time of ``argv`` over ``runs`` runs (after one warm-up run).

    ``env`` is the whole environment (default: this process's); ``PYTHONDONTWRITEBYTECODE``
    is always removed from it, so the warm-up run leaves ``.pyc`` files behind.
    """
    full_env = bench_env(env)
    subprocess.run(argv, env=full_env, cwd=cwd, capture_output=True, check=False)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=full_env, cwd=cwd, capture_output=True, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def time_call(fn: Callable[[], object], runs: int = 15) -> float:
    """Median wall time of ``fn()`` over ``runs`` calls (after one warm-up call)."""
    fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def run_timed(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None = None,
    ok: Callable[[subprocess.CompletedProcess[str]], bool] | None = None,
) -> float:
    """Wall time of one run of ``argv``; stops the benchmark with the command's output
    when ``ok`` says the run failed (a failing command would time nothing real)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if ok is not None and not ok(proc):
        raise SystemExit(f"{' '.join(argv)} failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
    return elapsed


def interleaved(
    commands: Mapping[str, Sequence[str]],
    runs: int,
    env: Mapping[str, str],
    cwd: str | None = None,
    ok: Callable[[subprocess.CompletedProcess[str]], bool] | None = None,
) -> dict[str, list[float]]:
    """``runs`` wall times of each command, the commands taking turns so that machine noise
    hits all alike, after one warm-up run each (``.pyc`` files, caches, first builds)."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        run_timed(argv, env, cwd, ok)
    for _ in range(runs):
        for name, argv in commands.items():
            samples[name].append(run_timed(argv, env, cwd, ok))
    return samples


def print_medians(
    samples: Mapping[str, Sequence[float]], floor: str, unit: str
) -> dict[str, float]:
    """Prints each command's median (fastest in brackets) and its ratio to the median of
    command ``floor`` (``unit`` names it in the table); returns the medians."""
    medians = {name: statistics.median(values) for name, values in samples.items()}
    width = max(map(len, medians)) + 2
    for name, value in medians.items():
        print(
            f"{name:<{width}} {value * 1e3:8.1f} ms [{min(samples[name]) * 1e3:7.1f}]"
            f"  {value / medians[floor]:5.2f}x {unit}"
        )
    return medians


_IMPORT_PROBE = """
import sys
from torchx.cli.main import main
roots, argv = sys.argv[1].split(","), sys.argv[2:]
try:
    main(argv)
except SystemExit:
    pass
print(sorted(m for m in sys.modules if m.split(".")[0] in roots), file=sys.stderr)
"""


def sdk_modules_imported(
    python: Path | str,
    argv: Sequence[str],
    sdks: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None = None,
) -> bool:
    """Whether ``torchx <argv>`` run by ``python`` imports any module of ``sdks``
    (top-level package names such as ``docker``): light commands must not."""
    proc = subprocess.run(
        [str(python), "-c", _IMPORT_PROBE, ",".join(sdks), *argv],
        env=env, cwd=cwd, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return proc.stderr.strip().splitlines()[-1:] != ["[]"]


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISS"
