"""The ``container`` run option without a cluster: the pyxis form line by line, the
``oci`` form's srun options and bundle configuration, and what is refused.

Jobs that really run in an OCI bundle on a real cluster are in tests/slurm.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from shlex import quote
from typing import Any

import pytest

from torchx.schedulers._slurm import containers, oci
from torchx.schedulers._slurm.request import _LOAD_ENV
from torchx.schedulers.slurm_scheduler import SlurmBatchRequest, SlurmScheduler, create_scheduler
from torchx.specs import AppDef, BindMount, DeviceMount, Resource, Role, VolumeMount


@pytest.fixture
def sched() -> SlurmScheduler:
    return create_scheduler("test")


def _role(**kwargs: object) -> Role:
    kwargs.setdefault("image", "nvcr.io/nvidia/pytorch:24.01-py3")
    kwargs.setdefault("entrypoint", "python")
    kwargs.setdefault("args", ["-c", "print(1)"])
    kwargs.setdefault("name", "trainer")
    return Role(**kwargs)  # type: ignore[arg-type]


def _srun_line(req: SlurmBatchRequest) -> str:
    return next(line for line in req.materialize().splitlines() if line.startswith("srun "))


class TestPyxis:
    def test_the_srun_line(self, sched: SlurmScheduler, tmp_path: Path) -> None:
        role = _role(
            env={"FOO": "a b"},
            mounts=[
                BindMount(src_path="/scratch/data", dst_path="/data", read_only=True),
                BindMount(src_path="/scratch/out", dst_path="/out"),
                DeviceMount(src_path="/dev/fuse", dst_path="/dev/fuse"),
            ],
        )
        job_dir = tmp_path / "job"
        cfg = {"container": "pyxis", "job_dir": str(job_dir)}
        req = sched.submit_dryrun(AppDef(name="app", roles=[role]), cfg).request
        line = _srun_line(req)
        logs = f'{job_dir}/slurm-"$SLURM_JOB_ID"-trainer-0'
        assert line == (
            f"srun --output={logs}.out --error={logs}.err --open-mode=append --wait=60"
            " --kill-on-bad-exit=1 --container-image='nvcr.io#nvidia/pytorch:24.01-py3'"
            f" --container-mounts={job_dir}:{job_dir},/scratch/data:/data:ro,"
            f"/scratch/out:/out,/dev/fuse:/dev/fuse --container-workdir={job_dir}"
            f" /bin/sh -c {quote(_LOAD_ENV)} torchx-env"
            f' {job_dir}/.torchx-env-"$SLURM_JOB_ID"/app_trainer-0'
            " python -c 'print(1)'"
        )
        assert not req.bundles  # enroot pulls the image on the nodes

    def test_every_replica_gets_the_options(self, sched: SlurmScheduler) -> None:
        role = _role(num_replicas=3, image="ubuntu:22.04")
        req = sched.submit_dryrun(AppDef("app", [role]), {"container": "pyxis"}).request
        for replica in req.replicas.values():
            assert replica.srun_opts["container-image"] == "ubuntu:22.04"
            assert replica.srun_opts["container-workdir"] == os.getcwd()

    @pytest.mark.parametrize(
        "image, uri",
        [
            ("ubuntu:22.04", "ubuntu:22.04"),
            ("pytorch/pytorch:2.4.0", "pytorch/pytorch:2.4.0"),
            ("nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io#nvidia/pytorch:24.01-py3"),
            ("localhost/img:1", "localhost#img:1"),
            ("registry:5000/team/img", "registry:5000#team/img"),
            ("/shared/images/pytorch.sqsh", "/shared/images/pytorch.sqsh"),
            ("dockerd://local-image:1", "dockerd://local-image:1"),
        ],
    )
    def test_image_names_become_enroot_uris(self, image: str, uri: str) -> None:
        assert containers.enroot_uri(image) == uri

    def test_a_separator_in_a_mount_path_is_refused(self, sched: SlurmScheduler) -> None:
        role = _role(mounts=[BindMount(src_path="/data/a,b", dst_path="/data")])
        with pytest.raises(ValueError, match="pyxis's --container-mounts cannot carry"):
            sched.submit_dryrun(AppDef("app", [role]), {"container": "pyxis"})


class TestOciRequest:
    def test_the_roles_share_one_bundle_beside_the_logs(
        self, sched: SlurmScheduler, tmp_path: Path
    ) -> None:
        roles = [_role(num_replicas=2), _role(name="ps")]
        roles[1].resource = Resource(cpu=1, gpu=1, memMB=256)
        cfg = {"container": "oci", "job_dir": str(tmp_path / "job")}
        req = sched.submit_dryrun(AppDef("my app", roles), cfg).request
        [bundle] = req.bundles
        assert bundle.image == roles[0].image and bundle.gpus  # one role asks for a GPU
        assert re.fullmatch(
            rf"{tmp_path}/job/\.torchx-oci/my_app-[0-9a-f]{{8}}/trainer", bundle.path
        )
        for replica in req.replicas.values():
            assert replica.srun_opts["container"] == bundle.path
            # the image's PATH wins: only TorchX's variables (and Slurm's) are exported
            assert (
                replica.srun_opts["export"] == "TORCHX_ATTEMPT,TORCHX_MAX_RETRIES,PYTHONUNBUFFERED"
            )
        assert req.container_cache == oci.default_cache()
        # srun 22.05+ frees the first component's --container when a later one sets it
        # again: only the first carries it, srun gives it to the others
        srun = req.materialize().split("\nsrun ", 1)[1].split("\nexitcode=")[0]
        assert srun.count(f"--container={bundle.path} ") == 1
        assert srun.startswith("--output=") and srun.count("--export=") == 3

    @pytest.mark.parametrize(
        "other",
        [
            {"image": "docker-daemon:ps:1"},
            {"mounts": [BindMount(src_path="/data", dst_path="/data")]},
        ],
    )
    def test_roles_of_other_images_or_mounts_are_refused(
        self, sched: SlurmScheduler, other: dict[str, Any]
    ) -> None:
        roles = [_role(), _role(name="ps", **other)]
        with pytest.raises(
            ValueError,
            match=r"^role 'ps' has another (image|mounts) than role"
            r" 'trainer'; with container=oci every role .* separate apps$",
        ):
            sched.submit_dryrun(AppDef("app", roles), {"container": "oci"})

    def test_the_image_root_macro_is_the_container_root(self, sched: SlurmScheduler) -> None:
        role = _role(entrypoint="ls", args=["${img_root}/opt"])
        for mode, expected in (("oci", "/opt"), ("pyxis", "/opt"), ("none", f"{role.image}/opt")):
            req = sched.submit_dryrun(AppDef("app", [role]), {"container": mode}).request
            assert req.replicas["trainer-0"].args == [expected]

    def test_the_entrypoint_is_not_looked_for_on_this_host(
        self, sched: SlurmScheduler, caplog: pytest.LogCaptureFixture
    ) -> None:
        role = _role(entrypoint="only-in-the-image")
        sched.submit_dryrun(AppDef("app", [role]), {"container": "oci"})
        assert "only-in-the-image" not in caplog.text
        sched.submit_dryrun(AppDef("app", [role]), {})
        assert "'only-in-the-image' of role 'trainer' is not on this host's PATH" in caplog.text

    def test_a_workspace_is_copied_to_the_job_dir_and_the_image_stays(
        self, sched: SlurmScheduler, tmp_path: Path
    ) -> None:
        role = _role()
        assert sched.planned_image(role, {"container": "oci", "job_dir": "/j"}) == role.image
        assert sched.planned_image(role, {"job_dir": "/j"}) == "/j"
        (tmp_path / "ws").mkdir()
        (tmp_path / "ws" / "train.py").write_text("print(1)\n")
        job_dir = tmp_path / "job"
        cfg = {"container": "oci", "job_dir": str(job_dir)}
        sched.build_workspace_and_update_role(role, str(tmp_path / "ws"), cfg)
        assert role.image == "nvcr.io/nvidia/pytorch:24.01-py3"
        assert (job_dir / "train.py").read_text() == "print(1)\n"


class TestRefused:
    def test_an_unknown_mode(self, sched: SlurmScheduler) -> None:
        with pytest.raises(ValueError, match="container='docker' is not a container mode; use one"):
            sched.submit_dryrun(AppDef("app", [_role()]), {"container": "docker"})

    @pytest.mark.parametrize("mode", ["oci", "pyxis"])
    def test_a_named_volume(self, sched: SlurmScheduler, mode: str) -> None:
        role = _role(mounts=[VolumeMount(src="my-pvc", dst_path="/data")])
        with pytest.raises(ValueError, match="volume 'my-pvc', which Slurm has no notion of"):
            sched.submit_dryrun(AppDef("app", [role]), {"container": mode})

    def test_a_relative_mount_path(self, sched: SlurmScheduler) -> None:
        role = _role(mounts=[BindMount(src_path="data", dst_path="/data")])
        with pytest.raises(ValueError, match="mount path 'data' of role 'trainer' is not absolute"):
            sched.submit_dryrun(AppDef("app", [role]), {"container": "oci"})


UMOCI_CONFIG = {
    "ociVersion": "1.0.0",
    "process": {
        "terminal": True,
        "user": {"uid": 0, "gid": 0},
        "args": ["/bin/sh"],
        "env": ["PATH=/opt/conda/bin:/usr/bin:/bin"],
        "cwd": "/workspace",
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
    },
    "root": {"path": "rootfs"},
    "hostname": "umoci-default",
    "mounts": [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm"},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs"},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup"},
    ],
    "linux": {
        "resources": {"devices": [{"allow": False, "access": "rwm"}]},
        "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
    },
}


class TestBundleConfig:
    def _config(self, **kwargs: object) -> dict[str, object]:
        bundle = oci.RoleBundle(
            role="trainer",
            image="img",
            path="/jobs/1/.torchx-oci/app-0/trainer",
            workdir="/jobs/1",
            mounts=kwargs.pop("mounts", []),  # type: ignore[arg-type]
            gpus=bool(kwargs.pop("gpus", False)),
        )
        return oci.bundle_config(
            json.loads(json.dumps(UMOCI_CONFIG)), "/cache/sha256-x/rootfs", bundle
        )

    def test_the_image_is_the_read_only_root_and_the_job_dir_the_cwd(self) -> None:
        config = self._config()
        mounts = config["mounts"]
        assert isinstance(mounts, list)
        assert mounts[0] == {
            "destination": "/",
            "type": "bind",
            "source": "/cache/sha256-x/rootfs",
            "options": ["rbind", "nosuid", "rw"],
        }
        assert config["root"] == {
            "path": "/jobs/1/.torchx-oci/app-0/trainer/rootfs",
            "readonly": True,
        }
        process = config["process"]
        assert isinstance(process, dict)
        assert process["cwd"] == "/jobs/1" and process["terminal"] is False
        assert "rlimits" not in process  # the job's limits apply, not umoci's 1024 files
        assert process["env"] == ["PATH=/opt/conda/bin:/usr/bin:/bin"]
        job_dir = next(m for m in mounts if m["destination"] == "/jobs/1")
        assert job_dir["source"] == "/jobs/1" and "rw" in job_dir["options"]

    def test_the_node_network_pids_and_name_are_shared(self) -> None:
        config = self._config()
        linux = config["linux"]
        assert isinstance(linux, dict)
        assert linux["namespaces"] == [{"type": "mount"}]
        assert "hostname" not in config
        destinations = [m["destination"] for m in config["mounts"]]  # type: ignore[union-attr]
        assert "/sys/fs/cgroup" not in destinations
        assert {"/etc/hosts", "/etc/resolv.conf"} & set(destinations)
        sys_mount = next(m for m in config["mounts"] if m["destination"] == "/sys")  # type: ignore[union-attr]
        assert sys_mount["source"] == "/sys" and "ro" in sys_mount["options"]

    def test_role_mounts_come_after_the_directories_above_them(self) -> None:
        config = self._config(
            mounts=[
                BindMount(src_path="/scratch/tmpdata", dst_path="/tmp/data", read_only=True),
                DeviceMount(src_path="/dev/fuse", dst_path="/dev/fuse", permissions="rw"),
            ]
        )
        mounts = config["mounts"]
        assert isinstance(mounts, list)
        order = [m["destination"] for m in mounts]
        assert order.index("/tmp") < order.index("/tmp/data")
        assert order.index("/dev") < order.index("/dev/fuse")
        data = next(m for m in mounts if m["destination"] == "/tmp/data")
        assert data["source"] == "/scratch/tmpdata" and "ro" in data["options"]

    def test_gpu_roles_ask_the_nvidia_hook_for_the_devices(self) -> None:
        process = self._config(gpus=True)["process"]
        assert isinstance(process, dict)
        assert process["env"][-1] == "NVIDIA_VISIBLE_DEVICES=all"

    def test_written_privately(self, tmp_path: Path) -> None:
        entry = tmp_path / "cache" / "sha256-x"
        entry.mkdir(parents=True)
        (entry / "config.json").write_text(json.dumps(UMOCI_CONFIG))
        bundle = oci.RoleBundle("r", "img", str(tmp_path / "b" / "r"), str(tmp_path), [])
        oci.write_bundle(bundle, str(entry))
        assert sorted(os.listdir(bundle.path)) == ["config.json", "rootfs"]
        assert os.stat(bundle.path).st_mode & 0o077 == 0
        assert os.stat(os.path.join(bundle.path, "config.json")).st_mode & 0o777 == 0o600
        assert os.listdir(os.path.join(bundle.path, "rootfs")) == []


def test_missing_tools_refuse_a_real_submission(
    sched: SlurmScheduler, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from torchx.util.support.host_checks import real_submit

    # sbatch is here (its absence is reported first), skopeo and umoci are not
    os.symlink("/bin/true", tmp_path / "sbatch")
    monkeypatch.setenv("PATH", str(tmp_path))
    with real_submit(), pytest.raises(ValueError, match="container=oci needs skopeo and umoci"):
        sched.submit_dryrun(AppDef("app", [_role()]), {"container": "oci"})


def test_resource_gpu_marks_the_bundle(sched: SlurmScheduler) -> None:
    role = _role(resource=Resource(cpu=1, gpu=2, memMB=1024))
    req = sched.submit_dryrun(AppDef("app", [role]), {"container": "oci"}).request
    assert req.bundles[0].gpus is True


class TestCacheTrust:
    """The OCI image cache runs what it holds on the nodes: only the user's own, unchanged
    unpacking of an image is reused (the third audit planted a hook in another's cache)."""

    SOURCE = oci.ImageSource("img:1", "docker-daemon:img:1", "sha256:" + "ab" * 32)

    def _entry(self, cache: Path, config: dict[str, object] | None = None) -> Path:
        """A cache entry as TorchX leaves it after unpacking (manifest included)."""
        import hashlib

        entry = cache / self.SOURCE.key
        (entry / "rootfs").mkdir(parents=True)
        text = json.dumps(config or UMOCI_CONFIG)
        (entry / "config.json").write_text(text)
        manifest = {
            "digest": self.SOURCE.digest,
            "config_sha256": hashlib.sha256(text.encode()).hexdigest(),
        }
        (entry / "torchx-entry.json").write_text(json.dumps(manifest))
        os.chmod(cache, 0o700)
        os.chmod(entry, 0o700)
        return entry

    def test_the_users_own_entry_is_reused(self, tmp_path: Path) -> None:
        entry = self._entry(tmp_path / "cache")
        assert oci.cached_image(self.SOURCE, str(tmp_path / "cache")) == (str(entry), False)

    def test_a_cache_writable_by_others_is_refused(self, tmp_path: Path) -> None:
        self._entry(tmp_path / "cache")
        os.chmod(tmp_path / "cache", 0o777)
        with pytest.raises(oci.OciError, match=r"is writable by others \(mode 777\);.*chmod go-w"):
            oci.cached_image(self.SOURCE, str(tmp_path / "cache"))

    def test_an_entry_of_another_user_is_refused(self, tmp_path: Path) -> None:
        if os.geteuid() != 0:
            pytest.skip("giving a file away needs root")
        entry = self._entry(tmp_path / "cache")
        os.chown(entry, 65534, 65534)
        with pytest.raises(oci.OciError, match=r"belongs to another user .uid 65534.; remove it"):
            oci.cached_image(self.SOURCE, str(tmp_path / "cache"))

    def test_a_changed_config_is_refused(self, tmp_path: Path) -> None:
        entry = self._entry(tmp_path / "cache")
        planted = {**UMOCI_CONFIG, "hooks": {"prestart": [{"path": "/tmp/evil"}]}}
        (entry / "config.json").write_text(json.dumps(planted))
        with pytest.raises(oci.OciError, match=r"config.json of entry .* changed since it was"):
            oci.cached_image(self.SOURCE, str(tmp_path / "cache"))

    def test_an_entry_torchx_did_not_unpack_is_refused(self, tmp_path: Path) -> None:
        entry = self._entry(tmp_path / "cache")
        (entry / "torchx-entry.json").unlink()
        with pytest.raises(oci.OciError, match=f"remove it .rm -rf {entry}."):
            oci.cached_image(self.SOURCE, str(tmp_path / "cache"))

    def test_hooks_of_the_image_config_never_reach_the_bundle(self) -> None:
        bundle = oci.RoleBundle("r", "img", "/jobs/1/.torchx-oci/a/r", "/jobs/1", [])
        image_config = {**UMOCI_CONFIG, "hooks": {"prestart": [{"path": "/tmp/evil"}]}}
        config = oci.bundle_config(json.loads(json.dumps(image_config)), "/c/rootfs", bundle)
        assert "hooks" not in config

    def test_the_bundles_directory_is_private_and_never_a_link(self, tmp_path: Path) -> None:
        root = oci.bundles_root(str(tmp_path))
        assert os.stat(root).st_mode & 0o777 == 0o700
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (tmp_path / "job").mkdir()
        os.symlink(elsewhere, tmp_path / "job" / ".torchx-oci")
        with pytest.raises(oci.OciError, match=r"is not a directory .a link..; remove it"):
            oci.bundles_root(str(tmp_path / "job"))


def test_a_pyxis_job_dir_with_a_separator_is_refused(sched: SlurmScheduler) -> None:
    with pytest.raises(ValueError, match="holds ':' or ',', which pyxis's --container-mounts"):
        sched.submit_dryrun(
            AppDef("app", [_role()]), {"container": "pyxis", "job_dir": "/scratch/a,/etc:/x"}
        )


@pytest.mark.parametrize("name", ["torchx-sbatch.sh", ".torchx-oci", ".torchx-env-42"])
def test_a_workspace_naming_torchxs_own_files_is_refused(
    sched: SlurmScheduler, tmp_path: Path, name: str
) -> None:
    """A link named like the batch script (or the bundles' directory) could replace it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "train.py").write_text("print(1)\n")
    os.symlink("/tmp/elsewhere", workspace / name)
    job_dir = tmp_path / "job"
    with pytest.raises(ValueError, match=f"holds '{re.escape(name)}', a name TorchX writes"):
        sched.build_workspace_and_update_role(_role(), str(workspace), {"job_dir": str(job_dir)})
    assert not job_dir.exists()  # nothing half-made is left
