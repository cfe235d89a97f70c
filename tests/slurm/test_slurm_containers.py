"""Replicas inside their role's image on the real cluster: ``-cfg container=oci``.

tools/slurm-up.sh gives the cluster an ``oci.conf`` (runc) and this host skopeo and
umoci; the image is built here from the Docker test image (tools/docker-up.sh) with a
file the host does not have, and unpacked into a cache per test.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import one_error_line, terminal_status
from torchx_testsupport.docker import IMAGE, REGISTRY, docker_with_test_image

from torchx.specs import AppDef, AppState, BindMount, Resource, Role, Workspace, macros

TORCHX = str(Path(sys.executable).parent / "torchx")
SMALL = Resource(cpu=1, gpu=0, memMB=256)
MARKER = "a file only the image has\n"
TEST_IMAGE = "torchx-test/slurm-oci:1"


@pytest.fixture(scope="module")
def image() -> str:
    """``TEST_IMAGE``: the Docker test image plus /opt/torchx/marker.txt."""
    client = docker_with_test_image("TORCHX_REQUIRE_DOCKER")
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, text in (
            ("Dockerfile", f"FROM {IMAGE}\nCOPY marker.txt /opt/torchx/marker.txt\n"),
            ("marker.txt", MARKER),
        ):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    client.images.build(fileobj=context, custom_context=True, tag=TEST_IMAGE, rm=True)
    assert not os.path.exists("/opt/torchx/marker.txt")  # the host has no such file
    return TEST_IMAGE


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "oci-cache"


def _log(runner: Any, handle: str, role: str, k: int = 0) -> str:
    return "".join(runner.log_lines(handle, role, k))


def _role(image: str, script: str, **kwargs: Any) -> Role:
    return Role(
        name=kwargs.pop("name", "train"),
        image=image,
        entrypoint="sh",
        args=["-c", script],
        resource=SMALL,
        **kwargs,
    )


def test_replicas_run_in_the_image_with_mounts_and_env(
    runner: Any, image: str, cache: Path, tmp_path: Path, workdir: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "d.txt").write_text("from a mount\n")
    script = (
        "cat /opt/torchx/marker.txt; cat /data/d.txt; echo FOO=$FOO; echo PATH=$PATH;"
        " echo attempt=$TORCHX_ATTEMPT; echo cwd=$(pwd);"
        " echo rank0=$SLURM_JOB_NODELIST_HET_GROUP_0;"
        " grep -q n1 /etc/hosts && echo nodes resolve; touch /data/x 2>/dev/null || echo data ro;"
        " touch /opt/x 2>/dev/null || echo image ro; echo out > written-from-$1"
    )
    role = _role(
        image,
        script,
        env={"FOO": "bar baz"},
        num_replicas=2,
        mounts=[BindMount(src_path=str(data), dst_path="/data", read_only=True)],
    )
    role.args += ["sh", macros.replica_id]  # $0 and $1 of the script
    cfg = {"container": "oci", "container_cache": str(cache)}
    handle = runner.run(AppDef("in-image", [role]), "slurm", cfg)
    status = terminal_status(runner, handle, 90)
    assert status.state == AppState.SUCCEEDED, status
    for k in (0, 1):
        lines = _log(runner, handle, "train", k).splitlines()
        assert lines[:4] == [
            MARKER.strip(),
            "from a mount",
            "FOO=bar baz",
            "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",  # the image's, not the host's
        ]
        assert "attempt=0" in lines and f"cwd={workdir}" in lines
        assert any(line.startswith("rank0=n") for line in lines), lines  # het job: node name
        assert {"nodes resolve", "data ro", "image ro"} <= set(lines)
        # the job's directory is mounted at its own path, writable
        assert (workdir / f"written-from-{k}").read_text() == "out\n"
    assert len(os.listdir(cache)) == 1  # one image, unpacked once


def test_every_replica_starts_in_the_image_whatever_the_bundle_path(
    runner: Any, image: str, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """srun (22.05 to today) frees the ``--container`` of a het component when a later
    component sets its own: the earlier replica then started from a garbage path
    ("Application launch failed"), depending on the path's length. Only the first
    component carries it now."""
    import tempfile

    app = AppDef("paths", [_role(image, "cat /opt/torchx/marker.txt", num_replicas=3)])
    cfg = {"container": "oci", "container_cache": str(cache)}
    base = tempfile.mkdtemp(prefix="torchx-oci-")
    try:
        for extra in range(0, 50, 10):  # bundle paths of 5 lengths, 10 bytes apart
            work = Path(base) / ("w" * (extra + 1))
            work.mkdir()
            monkeypatch.chdir(work)
            handle = runner.run(app, "slurm", cfg)
            status = terminal_status(runner, handle, 90)
            assert status.state == AppState.SUCCEEDED, (len(str(work)), status)
            assert [_log(runner, handle, "train", k) for k in range(3)] == [MARKER] * 3
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)


def test_the_second_run_reuses_the_unpacked_image(
    runner: Any, image: str, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = {"container": "oci", "container_cache": str(cache)}
    app = AppDef("twice", [_role(image, "cat /opt/torchx/marker.txt")])
    timings = []
    entries = []
    for _ in range(2):
        start = time.monotonic()
        handle = runner.run(app, "slurm", cfg)
        timings.append(time.monotonic() - start)
        (entry,) = os.listdir(cache)
        entries.append(os.stat(cache / entry).st_ino)
        assert terminal_status(runner, handle, 90).state == AppState.SUCCEEDED
        assert _log(runner, handle, "train") == MARKER
    assert entries[0] == entries[1]  # the same unpacked image, not made again
    with capsys.disabled():
        print(f"\ncontainer=oci submit: first {timings[0]:.2f} s, second {timings[1]:.2f} s")


def test_a_workspace_runs_inside_the_image(
    runner: Any, image: str, cache: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(
        "import os, sys\n"
        "print(open('/opt/torchx/marker.txt').read().strip(), '|', os.getcwd(), '|',"
        " sys.executable)\n"
    )
    job_dir = tmp_path / "job"
    role = Role(
        name="py",
        image=image,
        entrypoint="python3",
        args=["train.py"],
        resource=SMALL,
        workspace=Workspace.from_str(str(project)),
    )
    cfg = {"container": "oci", "container_cache": str(cache), "job_dir": str(job_dir)}
    handle = runner.run(AppDef("ws", [role]), "slurm", cfg)
    assert terminal_status(runner, handle, 90).state == AppState.SUCCEEDED
    assert _log(runner, handle, "py") == f"{MARKER.strip()} | {job_dir} | /usr/bin/python3\n"


def test_an_image_from_a_registry(runner: Any, image: str, cache: Path) -> None:
    client = docker_with_test_image("TORCHX_REQUIRE_DOCKER")
    remote = f"{REGISTRY}/torchx-test/slurm-oci-pushed:1"
    client.images.get(image).tag(remote)
    for line in client.images.push(remote, stream=True, decode=True):
        assert "error" not in line, line
    client.images.remove(remote)  # only the registry has it now
    cfg = {"container": "oci", "container_cache": str(cache)}
    handle = runner.run(
        AppDef("pulled", [_role(remote, "cat /opt/torchx/marker.txt")]), "slurm", cfg
    )
    assert terminal_status(runner, handle, 90).state == AppState.SUCCEEDED
    assert _log(runner, handle, "train") == MARKER


def _queue() -> set[str]:
    out = subprocess.run(
        ["squeue", "-h", "-o", "%i"], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


def test_a_missing_image_is_one_line_and_nothing_is_queued(
    slurm_cluster: None, cache: Path, workdir: Path
) -> None:
    before = _queue()
    proc = subprocess.run(
        [TORCHX, "run", "-s", "slurm", "-cfg", f"container=oci,container_cache={cache}",
         "utils.sh", "--image", "torchx-test/no-such-image:1", "--", "true"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    line = one_error_line(proc)
    assert line.startswith(
        "torchx: error: image 'torchx-test/no-such-image:1' was not found (the local Docker"
    )
    assert line.endswith("build or pull it, push it to its registry, or fix the role's image")
    assert _queue() <= before  # nothing was queued
    assert not (workdir / ".torchx-oci").exists() or not os.listdir(workdir / ".torchx-oci")
    assert not cache.exists() or not os.listdir(cache)


def test_a_replica_slurm_cannot_start_says_why(
    runner: Any, image: str, cache: Path, workdir: Path
) -> None:
    """A replica whose launch fails (here: its bundle removed while the job waited) is
    ``rejected`` with srun's reason, not "killed by SIGINT" (the step srun aborted)."""
    import shutil

    blocking = Role(
        name="block",
        image="/",
        entrypoint="sleep",
        args=["120"],
        num_replicas=4,
        resource=Resource(cpu=2, gpu=0, memMB=256),  # a whole node each
    )
    blocker = runner.run(AppDef("blocker", [blocking]), "slurm")
    try:
        cfg = {"container": "oci", "container_cache": str(cache)}
        handle = runner.run(AppDef("gone", [_role(image, "true")]), "slurm", cfg)
        shutil.rmtree(workdir / ".torchx-oci")
    finally:
        runner.cancel(blocker)
    status = terminal_status(runner, handle, 90)
    assert status.state == AppState.FAILED
    failure = status.failure
    assert failure is not None and failure.cause == "rejected", status
    assert failure.message.startswith("Slurm could not start it on n"), failure.message
    assert failure.message.endswith(": No such file or directory"), failure.message


# -- workspace_type=docker: the workspace built into an image, which the replicas run in ---

WORKSPACE_DOCKERFILE = "ARG IMAGE\nFROM $IMAGE\nWORKDIR /workspace\nCOPY . .\n"


def _image_project(tmp_path: Path, note: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "Dockerfile.torchx").write_text(WORKSPACE_DOCKERFILE)
    (project / "note.txt").write_text(note)
    (project / "train.py").write_text(
        "import os\n"
        "print(open('/opt/torchx/marker.txt').read().strip(), '|', os.getcwd(), '|',"
        " open('note.txt').read())\n"
    )
    return project


def _image_role(image: str, project: Path) -> Role:
    return Role(
        name="py",
        image=image,
        entrypoint="python3",
        args=["train.py"],
        resource=SMALL,
        workspace=Workspace.from_str(str(project)),
    )


def test_a_workspace_built_into_an_image_runs_in_its_working_dir(
    runner: Any, image: str, cache: Path, tmp_path: Path, workdir: Path
) -> None:
    """``workspace_type=docker, container=oci``: built by this host's daemon, unpacked from
    it (no registry), started where the build put the code; nothing copied to the job dir."""
    note = f"built {time.time_ns()}"
    project = _image_project(tmp_path, note)
    cfg = {"workspace_type": "docker", "container": "oci", "container_cache": str(cache)}
    handle = runner.run(AppDef("img-ws", [_image_role(image, project)]), "slurm", cfg)
    assert terminal_status(runner, handle, 90).state == AppState.SUCCEEDED
    assert _log(runner, handle, "py") == f"{MARKER.strip()} | /workspace | {note}\n"
    assert not (workdir / "note.txt").exists()


def _registry_tags(name: str) -> set[str]:
    """The tags the local registry holds for repository ``name`` (none before a push)."""
    import json
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{REGISTRY}/v2/{name}/tags/list", timeout=10) as r:
            return set(json.load(r).get("tags") or [])
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return set()
        raise


def test_with_image_repo_the_built_image_is_pushed_before_the_job(
    runner: Any, image: str, cache: Path, tmp_path: Path
) -> None:
    note = f"pushed {time.time_ns()}"
    project = _image_project(tmp_path, note)
    repo = f"{REGISTRY}/torchx-test/slurm-workspace"
    cfg = {
        "workspace_type": "docker",
        "container": "oci",
        "container_cache": str(cache),
        "image_repo": repo,
        "quiet": True,
    }
    info = runner.dryrun(
        AppDef("pushed-ws", [_image_role(image, project)]), "slurm", cfg, build_workspaces=True
    )
    ((local, (pushed_repo, tag)),) = info.request.images_to_push[1].items()
    assert info.request.images_to_push[0] == "docker" and pushed_repo == repo
    assert local == f"sha256:{tag}"
    assert tag not in _registry_tags("torchx-test/slurm-workspace")  # a new build (the note)
    handle = runner.schedule(info)
    assert tag in _registry_tags("torchx-test/slurm-workspace")
    assert terminal_status(runner, handle, 90).state == AppState.SUCCEEDED
    assert _log(runner, handle, "py") == f"{MARKER.strip()} | /workspace | {note}\n"


def test_an_image_workspace_on_pyxis_is_pushed_to_image_repo(
    slurm_cluster: None, tmp_path: Path, workdir: Path
) -> None:
    """``container=none`` with ``workspace_type=docker`` is pyxis (the image must run in a
    container): the dry run pushes to image_repo and starts in the image's working dir."""
    project = _image_project(tmp_path, "x")
    argv = [TORCHX, "run", "--dryrun", "-s", "slurm", "--workspace", str(project)]
    component = ["utils.sh", "--image", IMAGE, "--", "python3", "train.py"]
    proc = subprocess.run(
        [*argv, "-cfg", f"workspace_type=docker,image_repo={REGISTRY}/team/trainer", *component],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert f"--container-image='{REGISTRY}#team/trainer:<workspace {project}" in proc.stdout
    assert "--container-workdir" not in proc.stdout
    missing = subprocess.run(
        [*argv, "-cfg", "workspace_type=docker", *component],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert "set the `image_repo` run option" in one_error_line(missing, alone=False)


def test_workspace_type_is_a_run_option_and_a_wrong_one_is_one_line(
    slurm_cluster: None, workdir: Path
) -> None:
    opts = subprocess.run(
        [TORCHX, "runopts", "slurm"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "workspace_type" in opts and "image_repo" in opts
    proc = subprocess.run(
        [TORCHX, "run", "--dryrun", "-s", "slurm", "-cfg", "workspace_type=podman",
         "utils.sh", "--", "true"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert one_error_line(proc) == (
        "torchx: error: workspace_type='podman' is not a workspace builder of this scheduler;"
        " use one of dir, docker"
    )
