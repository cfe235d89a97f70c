"""OCI bundles for ``container=oci``: a role's image as a directory Slurm's ``srun
--container`` runs.

An image is unpacked once per content digest into ``<cache>/<digest>/`` (its ``rootfs``
and umoci's ``config.json``) with skopeo (copy into an OCI layout) and umoci (unpack).
Each role of a job then gets a small bundle of its own: a ``config.json`` that binds the
cached root filesystem at ``/`` (read-only), the job's directory at the same path as its
working directory, the role's mounts, and an empty ``rootfs`` (Slurm points the runtime's
root there; runc refuses a root that is a symlink). Everything a replica runs with besides
(its command, its environment) is Slurm's to add, per task.

The container shares the node's network, PIDs and IPC, as HPC container runtimes do:
the rendezvous of a multi-node job uses node names and ports as without containers, and
Slurm's signals reach the replica rather than a PID 1 that ignores them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

from torchx.specs.api import BindMount, DeviceMount, VolumeMount
from torchx.util.lazy_dataclass import dataclass

__all__ = [
    "ImageSource",
    "OciError",
    "RoleBundle",
    "cached_image",
    "default_cache",
    "make_bundles",
    "missing_tools",
    "missing_tools_message",
    "resolve_image",
    "write_bundle",
]

_TRANSPORTS = ("docker://", "docker-daemon:", "docker-archive:", "oci:", "oci-archive:", "dir:")
"""skopeo's transports a role's image may name explicitly."""
_TIMEOUT_S = 600.0
_HOST_FILES = ("/etc/hosts", "/etc/resolv.conf")
"""The node's name resolution, so node names (the rendezvous host) resolve inside."""


class OciError(ValueError):
    """An image cannot be found or turned into a bundle; the message says what to fix."""


def default_cache() -> str:
    """Where bundles are kept without ``container_cache``: beside the job records."""
    from torchx.util.home import torchx_home

    return os.path.join(torchx_home(), "slurm", "oci")


def missing_tools() -> list[str]:
    """The programs ``container=oci`` needs on the submitting host that are not on PATH."""
    return [tool for tool in ("skopeo", "umoci") if shutil.which(tool) is None]


def missing_tools_message(missing: Sequence[str]) -> str:
    return (
        f"container=oci needs {' and '.join(missing)} on this host to unpack the role's image"
        " into a bundle; install them (Debian/Ubuntu: apt install skopeo umoci)"
    )


@dataclass(frozen=True)
class ImageSource:
    """Where an image is read from (a skopeo reference) and its content digest."""

    image: str
    reference: str
    digest: str

    @property
    def key(self) -> str:
        """The cache entry's name: the digest, with ``:`` (not portable in paths) as ``-``."""
        return self.digest.replace(":", "-")


def _run(argv: Sequence[str]) -> tuple[int, str, str]:
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]} gave no answer within {_TIMEOUT_S:g} s"
    except FileNotFoundError:
        return 127, "", f"{argv[0]} is not installed"
    return proc.returncode, proc.stdout, proc.stderr


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def resolve_image(image: str) -> ImageSource:
    """The source and digest of ``image``, looked up without copying anything.

    A plain name (``repo/name:tag``) is taken from the local Docker daemon when it has it
    (as ``docker run`` would), else from its registry; a skopeo transport prefix
    (``docker://``, ``docker-daemon:``, ``oci:``, ``oci-archive:``, ...) picks the source.
    """
    if not image.strip():
        raise OciError("the role's image is empty; container=oci needs an image name")
    explicit = image.startswith(_TRANSPORTS)
    reasons = []
    if not explicit or image.startswith("docker-daemon:"):
        name = image.removeprefix("docker-daemon:")
        code, out, err = _run(["docker", "image", "inspect", "--format", "{{.Id}}", name])
        if code == 0 and out.strip().startswith("sha256:"):
            return ImageSource(image, f"docker-daemon:{name}", out.strip())
        reasons.append(f"the local Docker daemon: {_last_line(err)}")
    if not image.startswith("docker-daemon:"):
        reference = image if explicit else f"docker://{image}"
        code, out, err = _run(["skopeo", "inspect", "--format", "{{.Digest}}", reference])
        if code == 0 and out.strip().startswith("sha256:"):
            return ImageSource(image, reference, out.strip())
        reasons.append(f"{reference.split(':', 1)[0]}: {_last_line(err)}")
    raise OciError(
        f"image {image!r} was not found ({'; '.join(reasons)}); build or pull it, push it to"
        " its registry, or fix the role's image"
    )


def cached_image(source: ImageSource, cache: str) -> tuple[str, bool]:
    """The cache entry of ``source`` (unpacked now if missing) and whether it was made now.

    Made under a temporary name and renamed into place, so two submissions of one image
    never see half an entry (the second to finish keeps the first's).
    """
    entry = os.path.join(cache, source.key)
    if os.path.isfile(os.path.join(entry, "config.json")):
        return entry, False
    missing = missing_tools()
    if missing:
        raise OciError(missing_tools_message(missing))
    import tempfile

    os.makedirs(cache, mode=0o700, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".unpack-", dir=cache)
    try:
        layout = os.path.join(work, "layout")
        code, _, err = _run(["skopeo", "copy", "-q", source.reference, f"oci:{layout}:image"])
        if code != 0:
            raise OciError(f"skopeo could not copy {source.image!r}: {_last_line(err)}")
        bundle = os.path.join(work, "bundle")
        unpack = ["umoci", "unpack", *(["--rootless"] if os.geteuid() != 0 else [])]
        code, _, err = _run([*unpack, "--image", f"{layout}:image", bundle])
        if code != 0:
            raise OciError(f"umoci could not unpack {source.image!r}: {_last_line(err)}")
        for name in os.listdir(bundle):
            if name.endswith(".mtree"):  # umoci's record for repacking: not needed to run
                os.unlink(os.path.join(bundle, name))
        try:
            os.rename(bundle, entry)
        except OSError:
            if not os.path.isfile(os.path.join(entry, "config.json")):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return entry, True


@dataclass
class RoleBundle:
    """The bundle one role runs in: where it goes, from which image, with what mounted."""

    role: str
    image: str
    path: str
    workdir: str
    mounts: list[BindMount | VolumeMount | DeviceMount]
    gpus: bool = False


def _bind(source: str, destination: str, read_only: bool) -> dict[str, Any]:
    options = ["rbind", "nosuid", "ro" if read_only else "rw"]
    return {"destination": destination, "type": "bind", "source": source, "options": options}


def bundle_config(image_config: dict[str, Any], rootfs: str, bundle: RoleBundle) -> dict[str, Any]:
    """The role's ``config.json``, from the one umoci wrote for the image."""
    config = dict(image_config)
    process = dict(config.get("process") or {})
    process["terminal"] = False
    process["cwd"] = bundle.workdir
    process.pop("rlimits", None)  # the job's own limits (Slurm propagates them) apply
    if bundle.gpus:
        # an NVIDIA hook (nvidia-container-runtime in oci.conf) mounts the driver and the
        # devices; Slurm's cgroup decides which the job may open
        process["env"] = [*process.get("env", []), "NVIDIA_VISIBLE_DEVICES=all"]
    config["process"] = process
    config["root"] = {"path": os.path.join(bundle.path, "rootfs"), "readonly": True}
    config.pop("hostname", None)  # the node's own: no UTS namespace
    linux = dict(config.get("linux") or {})
    # only the mount namespace (and the user namespace of a rootless unpack)
    linux["namespaces"] = [
        ns for ns in linux.get("namespaces", []) if ns.get("type") in ("mount", "user")
    ]
    # devices: the job's cgroup (Slurm's ConstrainDevices) limits them, not the container
    linux["resources"] = {"devices": [{"allow": True, "access": "rwm"}]}
    config["linux"] = linux

    standard = []
    for mount in config.get("mounts", []):
        if mount.get("destination") == "/sys/fs/cgroup":
            continue  # the node's cgroups are not the container's to see
        if mount.get("destination") == "/sys":  # sysfs needs a network namespace: the node's
            standard.append(_bind("/sys", "/sys", read_only=True))
        else:
            standard.append(mount)
    # the container's own /tmp (a tmpfs inside it; the image's root is read-only)
    scratch = {"type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]}
    extra = [{"destination": "/tmp", **scratch}]  # noqa: S108
    extra += [_bind(path, path, read_only=True) for path in _HOST_FILES if os.path.exists(path)]
    extra.append(_bind(bundle.workdir, bundle.workdir, read_only=False))
    for mount in bundle.mounts:
        if isinstance(mount, BindMount):
            extra.append(_bind(mount.src_path, mount.dst_path, mount.read_only))
        elif isinstance(mount, DeviceMount):
            extra.append(_bind(mount.src_path, mount.dst_path, "w" not in mount.permissions))
    # a mount over a directory must come after the mounts of the directories above it
    wanted = {m["destination"] for m in extra}
    mounts = [m for m in standard if m["destination"] not in wanted] + extra
    mounts.sort(key=lambda m: len(os.path.normpath(m["destination"]).split(os.sep)))
    # the image's files at "/" first: runc makes the other mount points inside it
    config["mounts"] = [_bind(rootfs, "/", read_only=False), *mounts]
    return config


def write_bundle(bundle: RoleBundle, entry: str) -> None:
    """Writes the role's bundle (``config.json`` and an empty ``rootfs``), privately."""
    with open(os.path.join(entry, "config.json")) as f:
        image_config = json.load(f)
    config = bundle_config(image_config, os.path.join(entry, "rootfs"), bundle)
    os.makedirs(os.path.join(bundle.path, "rootfs"), mode=0o700, exist_ok=True)
    os.chmod(bundle.path, 0o700)
    path = os.path.join(bundle.path, "config.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with open(fd, "w") as f:
        json.dump(config, f, indent=1)


def make_bundles(bundles: Sequence[RoleBundle], cache: str) -> None:
    """Writes every role's bundle, unpacking the images the cache lacks.

    Every image is looked up before any is unpacked, so a wrong name fails at once.
    """
    import time

    from torchx.util.log import get_logger

    sources = {}
    for bundle in bundles:
        if bundle.image not in sources:
            sources[bundle.image] = resolve_image(bundle.image)
    entries = {}
    for image, source in sources.items():
        start = time.monotonic()
        entries[image], made = cached_image(source, cache)
        if made:
            elapsed = time.monotonic() - start
            get_logger("torchx").info(
                "unpacked %s into %s in %.1f s", image, entries[image], elapsed
            )
        else:
            get_logger("torchx").info("reusing %s from %s", image, entries[image])
    for bundle in bundles:
        write_bundle(bundle, entries[bundle.image])
