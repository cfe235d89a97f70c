"""Shared helpers for the benchmark scripts: venvs to compare and a robust timer.

Every figure is a ratio against a floor measured in the same run (``python -c pass`` in the
same venv), so results compare across machines. Upstream TorchX 0.7.0 is installed from PyPI
into its own venv for side-by-side numbers.

Measured commands run without ``PYTHONDONTWRITEBYTECODE``: a user's install has ``.pyc``
files, so compiling sources on every start would time something no user pays.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import NamedTuple

# the helpers shared with the tests: the private torchx-testsupport package. Hatch envs have it
# installed; the README's .venv, which benchmarks also run in, holds only the published
# distributions, so there it is read from its source folder.
try:
    from torchx_testsupport import sdk_imports
except ImportError:
    sys.path.append(str(Path(__file__).resolve().parent.parent / "tools" / "testsupport"))
    from torchx_testsupport import sdk_imports

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


def _uv() -> str:
    found = shutil.which("uv") or shutil.which("uv", path=os.path.dirname(sys.executable))
    if not found:
        raise SystemExit("benchmarks need uv to build wheels: pip install uv")
    return found


def ensure_clean_venv(name: str, dists: Sequence[str] = DISTS) -> Path:
    """A venv with our distributions installed from freshly built wheels (not editable)."""
    venv = BENCH_DIR / name
    wheels = Path(tempfile.mkdtemp(prefix="torchx-wheels-"))
    try:
        for dist in dists:
            # uv (set up with hatch; the project's venv has neither `build` nor pip), through
            # the package's own build backend as `python -m build` would
            subprocess.run(
                [_uv(), "build", "--wheel", "-q", "-o", str(wheels), str(ROOT / "packages" / dist)],
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


def exited_0(proc: subprocess.CompletedProcess[str]) -> bool:
    return proc.returncode == 0


def run_timed(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None = None,
    ok: Callable[[subprocess.CompletedProcess[str]], bool] = exited_0,
) -> float:
    """Wall time of one run of ``argv``; stops the benchmark with the command's output
    when ``ok`` (default: exit status 0) says the run failed (a failing command would time
    nothing real)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if not ok(proc):
        raise SystemExit(f"{' '.join(argv)} failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
    return elapsed


def interleaved_calls(fns: Sequence[Callable[[], float]], runs: int) -> list[list[float]]:
    """``runs`` timings of each function (each returns the seconds it measured), the
    functions taking turns so that machine noise hits all alike, after one warm-up call each
    (``.pyc`` files, caches, first builds)."""
    for fn in fns:
        fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, values in zip(fns, samples, strict=True):
            values.append(fn())
    return samples


def interleaved(
    commands: Mapping[str, Sequence[str]],
    runs: int,
    env: Mapping[str, str],
    cwd: str | None = None,
    ok: Callable[[subprocess.CompletedProcess[str]], bool] = exited_0,
) -> dict[str, list[float]]:
    """``runs`` wall times of each command (by name), run as :func:`interleaved_calls`."""
    fns = [partial(run_timed, argv, env, cwd, ok) for argv in commands.values()]
    return dict(zip(commands, interleaved_calls(fns, runs), strict=True))


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


def sdk_import_report(
    python: Path | str,
    argv: Sequence[str],
    sdks: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None = None,
) -> str:
    """Whether ``torchx <argv>`` run by ``python`` imports a module of ``sdks`` (top-level
    names such as ``docker``; light commands must not), with its verdict: ``not imported: ok``.
    A command that fails loads nothing and proves nothing: it is reported, with its exit
    code, as a MISS."""
    probe = sdk_imports(python, argv, sdks, env=env, cwd=cwd)
    text = f"{'' if probe.modules else 'not '}imported"
    if not probe.succeeded:
        text += f", but the command failed (exit {probe.exit_code})"
    return f"{text}: {verdict(probe.succeeded and not probe.modules)}"


def ensure_module(venv_bin: Path | str, module: str, requirement: str) -> None:
    """Installs ``requirement`` with pip into the venv of ``venv_bin`` (its ``bin``
    directory) unless its Python can already import ``module``."""
    python = str(Path(venv_bin) / "python")
    probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True, check=False)
    if probe.returncode != 0:
        subprocess.run([python, "-m", "pip", "install", "-q", requirement], check=True)


_DRYRUN_SCRIPT = """
import json, logging, statistics, sys, time, warnings
warnings.simplefilter("ignore")
logging.disable(logging.WARNING)
from torchx.runner import get_runner
from torchx.specs import AppDef, Resource, Role

scheduler, cfg, spec = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
runs, show = int(sys.argv[4]), sys.argv[5] == "show"
runner = get_runner()
role = Role(name="w", image=spec["image"], entrypoint="python", args=spec["args"],
            num_replicas=10_000, resource=Resource(cpu=1, gpu=0, memMB=512))
app = AppDef("big", [role])
info = runner.dryrun(app, scheduler, cfg=cfg)
text = str(info) if show else ""
dry, shown = [], []
for _ in range(runs):
    start = time.perf_counter()
    info = runner.dryrun(app, scheduler, cfg=cfg)
    dry.append(time.perf_counter() - start)
    if show:
        start = time.perf_counter()
        text = str(info)
        shown.append(time.perf_counter() - start)
print(statistics.median(dry), statistics.median(shown) if show else 0.0, len(text))
"""


class DryrunTimes(NamedTuple):
    dryrun: float
    """Median seconds of ``Runner.dryrun``."""
    show: float
    """Median seconds of printing its result (``str(info)``), 0 unless asked for."""
    chars: int
    """Length of that printed request (0 unless asked for)."""


def dryrun_median(
    python: Path | str,
    scheduler: str,
    cfg: Mapping[str, str],
    runs: int,
    env: Mapping[str, str],
    *,
    cwd: str | None = None,
    image: str = "img:1",
    args: Sequence[str] = ("-m", "train"),
    show: bool = False,
) -> DryrunTimes | None:
    """Medians over ``runs`` calls (after one warm-up) of ``Runner.dryrun`` of a
    10,000-replica role (``image``, ``python`` with ``args``) on ``scheduler`` with ``cfg``,
    in a fresh ``python`` (ours or upstream's); with ``show``, of printing the request too.
    None (the reason printed) when it fails."""
    proc = subprocess.run(
        [str(python), "-c", _DRYRUN_SCRIPT, scheduler, json.dumps(dict(cfg)),
         json.dumps({"image": image, "args": list(args)}), str(runs), "show" if show else "-"],
        env=env, cwd=cwd, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        venv = Path(python).parent.parent.name
        print(f"  ({venv}: dryrun failed: {proc.stderr.strip()[-200:]})")
        return None
    dry, shown, chars = proc.stdout.split()[-3:]
    return DryrunTimes(float(dry), float(shown), int(chars))


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISS"
