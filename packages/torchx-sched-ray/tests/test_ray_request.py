"""What a Ray job is made of, without a cluster: the dry run, the bundles, macros, the
address rules, the package, the option checks; and that none of it imports Ray."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from torchx.schedulers._ray.client import (
    RayApiError,
    RayJobsClient,
    address_in_app_id,
    origin_of,
    resolve_address,
    split_app_id,
)
from torchx.schedulers._ray.request import (
    DRIVER_PATH,
    ENV_JOB,
    KEEPER_PATH,
    build_package,
    read_requirements,
)
from torchx.schedulers.ray_scheduler import RayScheduler, create_scheduler
from torchx.specs import AppDef, Resource, Role, Workspace, macros


def _app() -> AppDef:
    trainer = Role(
        name="trainer",
        image="unused",
        entrypoint="python",
        args=["-m", "train", "--rank", macros.replica_id, "--job", macros.app_id],
        env={"MASTER": f"${{{macros.rank0_env}}}", "LR": "0.1"},
        num_replicas=2,
        resource=Resource(cpu=2, gpu=1, memMB=512, devices={"worker_node": 1}),
        max_retries=2,
    )
    ps = Role(
        name="ps", image="unused", entrypoint="echo", args=["ps"], resource=Resource(1, 0, -1)
    )
    return AppDef(name="my app!", roles=[trainer, ps], metadata={"team": "vision"})


@pytest.fixture(autouse=True)
def _no_ray_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "RAY_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_dry_run_shows_the_job_as_sent() -> None:
    info = create_scheduler("tests").submit_dryrun(_app(), {"placement_strategy": "PACK"})
    job = info.request
    assert job.submission_id.startswith("my-app-")
    assert job.entrypoint == f"exec python {DRIVER_PATH}"
    assert job.address == "http://127.0.0.1:8265"
    spec = job.spec
    assert spec["strategy"] == "PACK" and spec["app_id"] == job.submission_id
    trainer, ps = spec["roles"]
    assert trainer["resource"] == {
        "CPU": 2.0,
        "GPU": 1.0,
        "memory": 512.0 * 2**20,
        "worker_node": 1.0,
    }
    assert ps["resource"] == {"CPU": 1.0}
    assert trainer["max_retries"] == 2 and trainer["retry_policy"] == "APPLICATION"
    second = trainer["replicas"][1]
    assert second["argv"] == ["python", "-m", "train", "--rank", "1", "--job", job.submission_id]
    assert second["env"]["MASTER"] == "${TORCHX_RANK0_HOST}"
    assert second["env"]["LR"] == "0.1" and second["env"]["TORCHX_REPLICA_ID"] == "1"
    assert job.metadata["team"] == "vision"
    assert job.metadata["torchx.app_id"] == job.submission_id
    assert json.loads(job.metadata["torchx.roles"]) == {"trainer": 2, "ps": 1}
    shown = json.loads(str(job))
    assert shown["runtime_env"]["env_vars"][ENV_JOB]["roles"][0]["name"] == "trainer"
    assert shown["runtime_env"]["working_dir"].startswith("gcs://_ray_pkg_<hash>.zip")


def test_the_run_option_wins_over_ray_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "http://from-env:8265")
    assert resolve_address("http://head:8265") == (
        "http://head:8265",
        "run option dashboard_address",
    )
    assert resolve_address(None) == ("http://from-env:8265", "RAY_ADDRESS")
    monkeypatch.setenv("RAY_API_SERVER_ADDRESS", "api:9000")
    assert resolve_address(None) == ("http://api:9000", "RAY_API_SERVER_ADDRESS")


@pytest.mark.parametrize("value", ["ray://head:10001", "auto", "http://"])
def test_addresses_that_are_no_dashboard_are_refused(value: str) -> None:
    with pytest.raises(RayApiError, match=r"dashboard_address=http://HOST:8265|names no host"):
        resolve_address(value)


def test_an_unreachable_dashboard_is_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = RayJobsClient(f"http://127.0.0.1:{port}", "run option dashboard_address")
    with pytest.raises(RayApiError) as caught:
        client.version()
    assert str(caught.value) == (
        f"cannot reach the Ray dashboard at http://127.0.0.1:{port} (from run option"
        " dashboard_address: connection refused); start the cluster, or point -cfg"
        " dashboard_address=http://HOST:8265 (or RAY_API_SERVER_ADDRESS) at its dashboard"
    )


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"placement_strategy": "RANDOM"}, "unknown placement_strategy 'RANDOM'"),
        ({"placement_timeout_s": -1}, "placement_timeout_s must be"),
        ({"cluster_config_file": "cluster.yaml"}, "cluster_config_file is not supported"),
    ],
)
def test_bad_options_are_one_line(cfg: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        create_scheduler("tests").submit_dryrun(_app(), cfg)  # type: ignore[arg-type]


def test_requirements_are_read_at_submit_and_join_pip(tmp_path: Path) -> None:
    (tmp_path / "req.txt").write_text("numpy==2.*  # arrays\n")
    cfg = {"pip": ["tqdm"], "requirements": str(tmp_path / "req.txt")}
    job = create_scheduler("t").submit_dryrun(_app(), cfg).request  # type: ignore[arg-type]
    assert job.runtime_env == {"pip": ["tqdm"]} and job.requirements == str(tmp_path / "req.txt")
    (tmp_path / "req.txt").write_text("numpy==2.*  # arrays\n\n# comment\nrequests\n")
    body = job.body("gcs://pkg.zip", read_requirements(job.requirements))
    assert body["runtime_env"]["pip"] == ["tqdm", "numpy==2.*", "requests"]
    missing = {"requirements": "/no/such/requirements.txt"}
    job = create_scheduler("t").submit_dryrun(_app(), missing).request  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"requirements file .* cannot be read"):
        read_requirements(str(job.requirements))


def test_a_workspace_requirements_txt_is_the_default(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("requests\n")
    app = _app()
    for role in app.roles:
        role.image = str(tmp_path)
        role.workspace = Workspace.from_str(str(tmp_path))
    job = create_scheduler("t").submit_dryrun(app, {}).request
    assert job.requirements == str(tmp_path / "requirements.txt")
    assert job.working_dir == str(tmp_path)
    given = {"requirements": "other.txt"}
    assert create_scheduler("t").submit_dryrun(app, given).request.requirements == "other.txt"  # type: ignore[arg-type]


def test_the_request_reads_as_upstream_s_ray_job() -> None:
    """Libraries built on upstream's scheduler construct it with a client and read the
    dry-run request by upstream's field names."""

    class JobSubmissionClientLike:
        def get_address(self) -> str:
            return "http://head.example:8265"

    scheduler = RayScheduler(session_name="sdk", ray_client=JobSubmissionClientLike())
    cfg = {"cluster_name": "raytest"}
    job = scheduler.submit_dryrun(_app(), cfg).request  # type: ignore[arg-type]
    assert job.app_id == job.submission_id
    assert job.dashboard_address == "head.example:8265"
    assert job.cluster_name == "raytest" and job.metadata["torchx.ray_cluster"] == "raytest"
    assert job.cluster_config_file is None and job.requirements is None
    assert job.working_dir == ""
    assert [(a.name, a.num_cpus, a.num_gpus) for a in job.actors] == [
        ("trainer", 2, 1), ("trainer", 2, 1), ("ps", 1, 0),
    ]  # fmt: skip
    assert job.actors[1].command == ["python", "-m", "train", "--rank", "1", "--job", job.app_id]
    explicit = {"dashboard_address": "http://other:8265"}
    assert scheduler.submit_dryrun(_app(), explicit).request.dashboard_address == "other:8265"  # type: ignore[arg-type]
    assert isinstance(create_scheduler("x", ray_client=None), RayScheduler)


@pytest.mark.parametrize(
    ("url", "in_id"),
    [
        ("http://127.0.0.1:8265", "127.0.0.1:8265"),
        ("https://ray.example.com:443", "https:ray.example.com:443"),
        ("http://[::1]:8265", "[::1]:8265"),
        ("http://proxy:80/ray", None),
        ("http://user:secret@head:8265", None),
        ("http://head", "head:80"),  # a host alone: its scheme's port
    ],
)
def test_app_ids_carry_the_dashboard_where_they_can(url: str, in_id: str | None) -> None:
    assert address_in_app_id(url) == in_id
    if in_id is not None:
        address, job = split_app_id(f"{in_id}-my-app-x1y2")
        assert (origin_of(address), job) == (origin_of(url), "my-app-x1y2")


def test_app_ids_without_an_address_keep_the_fallback() -> None:
    assert split_app_id("my-app-x1y2") == (None, "my-app-x1y2")
    assert split_app_id("echo-3") == (None, "echo-3")


def test_package_is_the_workspace_plus_the_driver_and_keeper(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "big.bin").write_bytes(b"x" * 10)
    (tmp_path / ".torchxignore").write_text("data\n")
    os.symlink("/etc/passwd", tmp_path / "link")
    name, data = build_package(str(tmp_path))
    again, same = build_package(str(tmp_path))
    assert (name, data) == (again, same), "an unchanged workspace must give the same package"
    assert name.startswith("_ray_pkg_") and name.endswith(".zip")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        # Ray unpacks a link as a regular file holding its text: links are left out
        assert names == {".torchxignore", "train.py", DRIVER_PATH, KEEPER_PATH}
    alone, _ = build_package(None)
    assert alone != name


def test_package_leaves_links_out_and_nothing_writable_by_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "run.sh").write_text("echo hi\n")
    (tmp_path / "run.sh").chmod(0o777)
    os.symlink("/etc/passwd", tmp_path / "passwd")
    os.symlink("run.sh", tmp_path / "again.sh")
    _, data = build_package(str(tmp_path))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert set(archive.namelist()) == {"run.sh", DRIVER_PATH, KEEPER_PATH}
        assert (archive.getinfo("run.sh").external_attr >> 16) & 0o777 == 0o755
    warned = " ".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert "left out 2 link(s)" in warned and "again.sh, passwd" in warned


def test_no_ray_import_on_the_submitting_side() -> None:
    code = (
        "import sys\n"
        "from torchx.schedulers.ray_scheduler import create_scheduler\n"
        "from torchx.specs import AppDef, Role\n"
        "s = create_scheduler('t')\n"
        "s.submit_dryrun(AppDef('a', [Role('r', 'i', entrypoint='echo')]), {})\n"
        "s.run_opts()\n"
        "assert 'ray' not in sys.modules, 'ray imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_workspace_over_the_size_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.workspace.api import WorkspaceTooLargeError

    (tmp_path / "big.bin").write_bytes(b"x" * (2 << 20))
    monkeypatch.setenv("TORCHX_WORKSPACE_MAX_MB", "1")
    with pytest.raises(WorkspaceTooLargeError, match="holds more than 1 MB"):
        build_package(str(tmp_path))


def test_the_interpreter_option_is_one_shell_word() -> None:
    cfg = {"python": "/opt/my env/bin/python; touch /tmp/pwned"}
    job = create_scheduler("t").submit_dryrun(_app(), cfg).request  # type: ignore[arg-type]
    assert job.entrypoint == f"exec '/opt/my env/bin/python; touch /tmp/pwned' {DRIVER_PATH}"


def test_working_dir_of_torchrecs_readme_expands_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """torchrec's Ray README passes ``working_dir=~/repos/torchrec/examples/ray``, which a
    shell expanded on upstream's command line; one that is no directory is dropped with a
    warning, as upstream dropped the option."""
    import logging

    monkeypatch.setenv("HOME", str(tmp_path))
    example = tmp_path / "repos" / "torchrec" / "examples" / "ray"
    example.mkdir(parents=True)
    (example / "requirements.txt").write_text("torchrec\n")
    cfg = {
        "working_dir": "~/repos/torchrec/examples/ray",
        "requirements": "~/repos/torchrec/examples/ray/requirements.txt",
    }
    job = create_scheduler("t").submit_dryrun(_app(), cfg).request  # type: ignore[arg-type]
    assert job.working_dir == str(example)
    assert job.requirements == str(example / "requirements.txt")
    with caplog.at_level(logging.WARNING):
        job = create_scheduler("t").submit_dryrun(_app(), {"working_dir": "~/nope"}).request  # type: ignore[arg-type]
    assert job.working_dir == ""
    assert "working_dir=~/nope is not a directory here, so it is not used" in caplog.text
