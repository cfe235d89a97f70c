"""Release tooling: build every distribution, check the artifacts, rehearse publishing.

    python tools/release.py build [--out DIR]   # a wheel and an sdist per distribution
    python tools/release.py check DIR           # twine, check-wheel-contents, our own rules
    python tools/release.py rehearse            # all of it, through a real package index

``rehearse`` starts ``pypiserver`` on 127.0.0.1 (stopped by pid at the end), uploads every
artifact with ``twine upload``, and installs by name in fresh virtual environments, as users
will: one backend alone, the CLI with one backend, the meta-package and its extras, an
uninstall, a backend upgraded or downgraded alone, the oldest ``torchx-specs`` the policy
allows under the newest plugins, a plugin built earlier under the newest ``torchx-specs``,
and a third-party plugin (``examples/torchx-plugin-example``) that runs a job. Packages
this project does not publish reach the index's fallback (the public registry); ours are
always served from the local index, so a same-named package elsewhere (``torchx`` exists
there) never stands in for one of ours.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import email.parser
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
EXAMPLE = ROOT / "examples" / "torchx-plugin-example"
FROZEN = ROOT / "tests" / "data" / "frozen"
SHARED_INITS = {
    "torchx/__init__.py",
    "torchx/schedulers/__init__.py",
    "torchx/tracker/__init__.py",
    "torchx/workspace/__init__.py",
    "torchx/util/__init__.py",
}
METADATA_FIELDS = (
    "Summary",
    "Requires-Python",
    "License-Expression",
    "Classifier",
    "Project-URL",
    "Keywords",
    "Description-Content-Type",
)
ALL_SCHEDULERS = ["aws_batch", "kubernetes", "local_cwd", "local_docker", "ray", "slurm"]


# --------------------------------------------------------------------------- build


def _uv_build(source: Path, out: Path, *only: str) -> None:
    """``uv build`` of ``source`` into ``out`` (an sdist, then the wheel built from it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
    subprocess.run(
        [sys.executable, "-m", "uv", "build", "-q", *only, "--out-dir", str(out), str(source)],
        check=True,
        env=env,
    )


def _wheel_contents(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as wheel:
        return {name: wheel.read(name) for name in wheel.namelist()}


def build(out: Path, sources: list[Path] | None = None) -> list[Path]:
    """Builds a wheel and an sdist of each source into ``out`` and checks that the wheel
    built from the sdist equals one built straight from the tree. Returns the artifacts."""
    out.mkdir(parents=True, exist_ok=True)
    sources = sources or PACKAGES
    with tempfile.TemporaryDirectory() as tmp:

        def one(source: Path) -> None:
            _uv_build(source, out)
            _uv_build(source, Path(tmp) / source.name, "--wheel")

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(one, sources))
        for direct in Path(tmp).glob("*/*.whl"):
            from_sdist = out / direct.name
            if _wheel_contents(direct) != _wheel_contents(from_sdist):
                raise SystemExit(f"{direct.name}: the wheel built from the sdist differs")
    return sorted(p for p in out.iterdir() if p.suffix in (".whl", ".gz"))


# --------------------------------------------------------------------------- check


def _own_files(package: Path) -> set[str]:
    src = package / "src"
    return {
        str(p.relative_to(src))
        for p in src.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode())


def check(out: Path) -> list[str]:
    """Problems with the artifacts in ``out`` (empty: publishable)."""
    problems: list[str] = []
    artifacts = sorted(str(p) for p in out.iterdir() if p.suffix in (".whl", ".gz"))
    wheels = sorted(out.glob("*.whl"))
    meta = [str(w) for w in wheels if w.name.startswith("torchx-")]  # the meta-package
    libraries = [str(w) for w in wheels if str(w) not in meta]
    tools = [[sys.executable, "-m", "twine", "check", "--strict", *artifacts]]
    if libraries:
        tools.append([sys.executable, "-m", "check_wheel_contents", *libraries])
    if meta:  # it holds no module on purpose: W007/W008 ("empty") is its shape
        tools.append([sys.executable, "-m", "check_wheel_contents", "--ignore", "W007,W008", *meta])
    for tool in tools:
        proc = subprocess.run(tool, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            problems.append(f"{' '.join(tool[2:4])}: {proc.stdout}{proc.stderr}".strip())
    typed_dirs: set[str] = set()
    by_name = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
        typed_dirs |= {n.rsplit("/", 1)[0] for n in names if n.endswith("/py.typed")}
        by_name[wheel] = names
    for wheel, names in by_name.items():
        meta = _metadata(wheel)
        dist = str(meta["Name"])
        package = ROOT / "packages" / dist
        missing = [f for f in METADATA_FIELDS if not meta.get(f)]
        if not meta.get_payload():
            missing.append("Description (the README)")
        if missing:
            problems.append(f"{wheel.name}: metadata lacks {', '.join(missing)}")
        if not any("/licenses/LICENSE" in n for n in names):
            problems.append(f"{wheel.name}: no license file")
        modules = {n for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
        if package.is_dir() and modules != _own_files(package):
            extra = sorted(modules - _own_files(package))
            problems.append(f"{wheel.name}: holds files that are not its own: {extra[:5]}")
        if dist != "torchx-specs" and modules & SHARED_INITS:
            problems.append(
                f"{wheel.name}: ships shared __init__.py {sorted(modules & SHARED_INITS)}"
            )
        for module in (m for m in modules if m.endswith(".py")):
            parents = [module.rsplit("/", i)[0] for i in range(1, module.count("/") + 1)]
            if not any(p in typed_dirs for p in parents):
                problems.append(f"{wheel.name}: {module} is not under a py.typed marker")
                break
    return problems


# --------------------------------------------------------------------------- rehearse


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def package_index(root: Path) -> Iterator[str]:
    """A pypiserver on 127.0.0.1 serving (and accepting uploads into) ``root``; yields its
    URL; stopped by pid when the block ends."""
    port = _free_port()
    log = open(root.parent / "pypiserver.log", "w")  # noqa: SIM115
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pypiserver",
            "run",
            "-i",
            "127.0.0.1",
            "-p",
            str(port),
            "-a",
            ".",
            "-P",
            ".",
            "--overwrite",
            str(root),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/simple/", timeout=2).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        f"pypiserver did not start: {(root.parent / 'pypiserver.log').read_text()}"
                    ) from None
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def upload(url: str, files: list[Path]) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "twine",
            "upload",
            "--non-interactive",
            "--disable-progress-bar",
            "--repository-url",
            f"{url}/",
            "-u",
            "rehearsal",
            "-p",
            "rehearsal",
            *map(str, files),
        ],
        check=True,
        capture_output=True,
    )


class Venv:
    """A fresh virtual environment installing from the rehearsal's index only."""

    def __init__(self, root: Path, name: str, index: str) -> None:
        self.path = root / name
        self.python = self.path / "bin" / "python"
        self.index = index
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_", "TORCHX"))
        }
        self.env["TORCHX_HOME"] = str(root / f"{name}-home")
        self.env["PATH"] = f"{self.path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        subprocess.run(
            [sys.executable, "-m", "uv", "venv", "-q", "--python", sys.executable, str(self.path)],
            check=True,
            env=self.env,
        )

    def pip(self, *args: str) -> subprocess.CompletedProcess[str]:
        index = ["--index-url", f"{self.index}/simple/"] if args[0] == "install" else []
        proc = subprocess.run(
            [sys.executable, "-m", "uv", "pip", *args, "--python", str(self.python), *index],
            capture_output=True, text=True, env=self.env, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise AssertionError(f"uv pip {' '.join(args)} failed:\n{proc.stderr}")
        return proc

    def install(self, *requirements: str) -> str:
        return self.pip("install", *requirements).stderr

    def installed(self) -> dict[str, str]:
        listed = json.loads(self.pip("list", "--format", "json").stdout)
        return {str(d["name"]).lower().replace("_", "-"): str(d["version"]) for d in listed}

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, env=self.env, cwd=self.path, check=False
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def schedulers(self) -> list[str]:
        out = self.run("torchx", "runopts", "--json").stdout
        return sorted(json.loads(out))


def _next_patch(version: str) -> str:
    major, minor, patch = (int(p) for p in version.split(".")[:3])
    return f"{major}.{minor}.{patch + 1}"


def _build_next(tmp: Path, version: str) -> list[Path]:
    """``torchx-specs`` and ``torchx-sched-slurm`` at the next patch release, built from a
    copy of the tree (the later releases the upgrade scenarios move to)."""
    nxt = _next_patch(version)
    copies = []
    for name in ("torchx-specs", "torchx-sched-slurm"):
        copy = tmp / "next" / name
        shutil.copytree(
            ROOT / "packages" / name, copy, ignore=shutil.ignore_patterns("__pycache__")
        )
        copies.append(copy)
    spec_version = copies[0] / "src" / "torchx" / "_version.py"
    spec_version.write_text(spec_version.read_text().replace(f'"{version}"', f'"{nxt}"'))
    slurm = copies[1] / "pyproject.toml"
    slurm.write_text(slurm.read_text().replace(f'version = "{version}"', f'version = "{nxt}"'))
    return build(tmp / "next-dist", copies)


Scenario = Callable[[Path, str], None]
SCENARIOS: list[tuple[str, Scenario]] = []


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS.append((fn.__doc__ or fn.__name__, fn))
    return fn


@scenario
def _one_backend(root: Path, index: str) -> None:
    """pip install torchx-sched-k8s: the contract, the image workspace and the k8s SDK only"""
    venv = Venv(root, "k8s", index)
    venv.install("torchx-sched-k8s")
    installed = venv.installed()
    own = {"torchx-specs", "torchx-workspace-docker", "torchx-sched-k8s"}
    assert own | {"kubernetes"} <= set(installed), installed
    assert "docker" not in installed, "the docker SDK comes only with the workspace extra"
    others = {n for n in installed if n.startswith("torchx")} - own
    assert not others, f"pulled in {others}"
    venv.run("python", "-c", "from torchx.schedulers.kubernetes_scheduler import create_scheduler")


@scenario
def _cli_and_slurm(root: Path, index: str) -> None:
    """pip install torchx-cli torchx-sched-slurm: runopts lists local_cwd and slurm, a dry
    run works; after pip uninstall torchx-sched-slurm, slurm is gone and nothing fails"""
    venv = Venv(root, "cli-slurm", index)
    venv.install("torchx-cli", "torchx-sched-slurm")
    assert venv.schedulers() == ["local_cwd", "slurm"], venv.schedulers()
    assert "starlette" not in venv.installed()  # the web stack comes with torchx-ui only
    dry = venv.run("torchx", "run", "--dryrun", "-s", "slurm", "utils.echo")
    assert "#SBATCH" in dry.stdout, dry.stdout
    venv.pip("uninstall", "torchx-sched-slurm")
    assert venv.schedulers() == ["local_cwd"], venv.schedulers()  # the cache noticed


@scenario
def _meta_package_and_extras(root: Path, index: str) -> None:
    """pip install torchx (every scheduler and tracker), then the extras users' Dockerfiles
    name (kubernetes, aws_batch, ray, kfp, gcp_batch, dev) without a warning"""
    venv = Venv(root, "full", index)
    venv.install("torchx")
    installed = venv.installed()
    # ours, from the local index: never the older `torchx` of the public registry
    assert installed["torchx"] == "0.8.0", installed
    assert venv.schedulers() == ALL_SCHEDULERS, venv.schedulers()
    plugins = venv.run("torchx", "plugins").stdout
    assert "mlflow" in plugins and "fsspec" in plugins, plugins
    for extra in ("kubernetes", "aws_batch", "ray", "kfp", "gcp_batch", "dev"):
        said = venv.install(f"torchx[{extra}]")
        assert "extra" not in said.lower() or "does not have" not in said, said
    installed = venv.installed()
    assert "docker" in installed  # kubernetes/aws_batch bring the workspace builder
    # the kfp extra adds the KFP adapter (kept out of the default set: kfp pins kubernetes)
    assert "torchx-pipelines-kfp" in installed and "torchx-sched-ray" in installed, installed


@scenario
def _dashboard(root: Path, index: str) -> None:
    """pip install torchx-ui, then `torchx ui`: the apps of local_cwd (a job run first),
    behind the token of the URL it prints; the CLI alone carries no web library"""
    import re
    import signal

    venv = Venv(root, "ui", index)
    venv.install("torchx-ui")
    installed = venv.installed()
    assert {"torchx-ui", "torchx-cli", "starlette", "uvicorn"} <= set(installed), installed
    assert not {n for n in installed if n.startswith("torchx-sched")}, installed
    venv.run("torchx", "run", "-s", "local_cwd", "utils.echo", "--msg", "hi")
    server = subprocess.Popen(
        ["torchx", "ui", "--no-browser", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=venv.env, cwd=venv.path,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        server.stdout.readline()
        url = server.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{48}", url), url
        base, token = url.split("/?token=")
        try:
            urllib.request.urlopen(f"{base}/api/apps", timeout=30)
            raise AssertionError("answered without the token")
        except urllib.error.HTTPError as e:
            assert e.code == 401, e
        request = urllib.request.Request(
            f"{base}/api/apps", headers={"Authorization": f"token {token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            apps = json.loads(answer.read())["apps"]
        assert [(a["name"], a["state"]) for a in apps] == [("echo", "SUCCEEDED")], apps
        for path, shows in (
            ("/", "<title>torchx ui: apps</title>"),
            ("/static/app.js", "followEvents"),
        ):
            request = urllib.request.Request(
                base + path, headers={"Authorization": f"token {token}"}
            )
            with urllib.request.urlopen(request, timeout=30) as answer:
                assert shows in answer.read().decode(), f"the wheel lacks {path}"
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)


@scenario
def _plain_old_pip_and_upstream_extra_names(root: Path, index: str) -> None:
    """pip 23.2 (what a fresh Python 3.11 venv ships) installs "torchx[aws_batch]" by
    upstream's extra name, without "does not provide the extra", and torchx runs"""
    venv = Venv(root, "old-pip", index)
    venv.install("pip==23.2.1")
    proc = venv.run(
        "python", "-m", "pip", "install", "-q", "--index-url", f"{index}/simple/",
        "torchx[aws_batch]",
    )  # fmt: skip
    said = proc.stdout + proc.stderr
    assert "does not provide the extra" not in said, said
    installed = venv.installed()
    assert {"torchx-sched-batch", "docker", "boto3"} <= set(installed), installed
    assert "aws_batch" in venv.schedulers(), venv.schedulers()


@scenario
def _upgrade_and_downgrade_alone(root: Path, index: str) -> None:
    """one backend upgraded while the rest stay, then the contract upgraded under old
    backends, then downgraded again"""
    venv = Venv(root, "skew", index)
    venv.install("torchx-cli==0.8.0", "torchx-sched-slurm==0.8.0", "torchx-specs==0.8.0")
    venv.install("--upgrade-package", "torchx-sched-slurm", "torchx-sched-slurm")
    got = venv.installed()
    assert (got["torchx-sched-slurm"], got["torchx-specs"]) == ("0.8.1", "0.8.0"), got
    assert venv.schedulers() == ["local_cwd", "slurm"]  # newest plugin, oldest contract
    venv.run("torchx", "run", "--dryrun", "-s", "slurm", "utils.echo")
    venv.install("torchx-sched-slurm==0.8.0", "torchx-specs==0.8.1")
    got = venv.installed()
    assert (got["torchx-sched-slurm"], got["torchx-specs"]) == ("0.8.0", "0.8.1"), got
    assert venv.schedulers() == ["local_cwd", "slurm"]
    venv.run("torchx", "run", "--dryrun", "-s", "slurm", "utils.echo")


@scenario
def _third_party_plugin(root: Path, index: str) -> None:
    """a third-party plugin installed by name shows in plugins/runopts/builtins and runs a
    job; one built earlier (frozen wheel) still loads on the newest torchx-specs"""
    for version, spec in (("0.1.0", "torchx-specs==0.8.0"), ("0.0.1", "torchx-specs==0.8.1")):
        venv = Venv(root, f"plugin-{version}", index)
        venv.install("torchx-cli", f"torchx-plugin-example=={version}", spec)
        assert "example_small" in venv.run("torchx", "plugins").stdout
        assert "example_local" in venv.schedulers()
        assert "example.hello" in venv.run("torchx", "builtins").stdout
        run = venv.run(
            "torchx", "run", "--wait", "-s", "example_local", "example.hello", "--msg", "hi"
        )
        assert "hi" in run.stderr and "SUCCEEDED" in run.stderr, run.stderr


def rehearse() -> int:
    import re

    version_file = ROOT / "packages" / "torchx-specs" / "src" / "torchx" / "_version.py"
    match = re.search(r'__version__ = "([^"]+)"', version_file.read_text())
    assert match is not None, version_file
    __version__ = match.group(1)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="torchx-release-") as tmp_name:
        tmp = Path(tmp_name)
        artifacts = build(tmp / "dist")
        build_s = time.monotonic() - started
        problems = check(tmp / "dist")
        if problems:
            print("\n".join(f"check: {p}" for p in problems))
            return 1
        extra = [
            *build(tmp / "example", [EXAMPLE]),
            *FROZEN.glob("*.whl"),
            *_build_next(tmp, __version__),
        ]
        index_dir = tmp / "index"
        index_dir.mkdir()
        failed = []
        with package_index(index_dir) as url:
            upload(url, [*artifacts, *extra])
            for title, fn in SCENARIOS:
                t0 = time.monotonic()
                try:
                    fn(tmp / "venvs", url)
                    print(f"ok    {time.monotonic() - t0:5.1f} s  {' '.join(title.split())}")
                except AssertionError as e:
                    failed.append(title)
                    print(f"FAIL  {time.monotonic() - t0:5.1f} s  {' '.join(title.split())}\n{e}")
    print(
        f"release rehearsal: {len(SCENARIOS) - len(failed)} passed, {len(failed)} failed"
        f" (build {build_s:.0f} s, total {time.monotonic() - started:.0f} s)"
    )
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="a wheel and an sdist of every distribution")
    b.add_argument("--out", type=Path, default=ROOT / "dist")
    c = sub.add_parser("check", help="twine check, check-wheel-contents and our own rules")
    c.add_argument("dir", type=Path)
    sub.add_parser("rehearse", help="build, check, publish to a local index, install by name")
    args = parser.parse_args(argv)
    if args.command == "build":
        started = time.monotonic()
        for path in build(args.out):
            print(path.relative_to(args.out.parent) if args.out.is_absolute() else path)
        print(f"built in {time.monotonic() - started:.0f} s")
        return 0
    if args.command == "check":
        problems = check(args.dir)
        print("\n".join(problems) or "all artifacts are publishable")
        return 1 if problems else 0
    return rehearse()


if __name__ == "__main__":
    sys.exit(main())
