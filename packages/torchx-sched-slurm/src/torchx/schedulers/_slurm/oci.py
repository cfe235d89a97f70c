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

import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from torchx.specs.api import BindMount, DeviceMount, VolumeMount
from torchx.util.log import get_logger
from torchx.util.startup.lazy_dataclass import dataclass
from torchx.util.support.home import torchx_home

__all__ = [
    "ImageSource",
    "OciError",
    "RoleBundle",
    "bundles_root",
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

    return os.path.join(torchx_home(), "slurm", "oci")


def _private_problem(path: str, st: os.stat_result, what: str) -> str | None:
    """Why ``path`` cannot be trusted as ours (None when it can): another owner, or
    writable by others."""
    if st.st_uid != os.geteuid():
        return f"{what} {path} belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"{what} {path} is writable by others (mode {st.st_mode & 0o777:o})"
    return None


def _check_cache(cache: str) -> None:
    """The cache must be the user's own and writable by nobody else: an entry in it is run
    as the container's root filesystem."""

    st = os.stat(cache)
    problem = (
        f"container_cache {cache} is not a directory"
        if not stat.S_ISDIR(st.st_mode)
        else _private_problem(cache, st, "container_cache")
    )
    if problem:
        raise OciError(
            f"{problem}; an image unpacked there runs in your jobs, so use a directory of"
            f" your own that only you can write (chmod go-w {cache}, or -cfg"
            " container_cache=DIR)"
        )


_MANIFEST = "torchx-entry.json"
"""What TorchX recorded of a cache entry it unpacked: the image digest and the digest of
the ``config.json`` umoci wrote, checked before the entry is reused."""


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _entry_problem(entry: str, digest: str) -> str | None:
    """Why the existing cache ``entry`` cannot be reused (None when it can)."""

    for path, what in ((entry, "entry"), (os.path.join(entry, "rootfs"), "its rootfs")):
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            return f"{what} {path} is not a directory"
        problem = _private_problem(path, st, what)
        if problem:
            return problem
    for name in ("config.json", _MANIFEST):
        path = os.path.join(entry, name)
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return f"{path} is not a regular file"
        problem = _private_problem(path, st, "its file")
        if problem:
            return problem
    try:
        with open(os.path.join(entry, _MANIFEST)) as f:
            manifest = json.load(f)
    except ValueError:
        return f"{_MANIFEST} of entry {entry} is not TorchX's"
    if not isinstance(manifest, dict) or manifest.get("digest") != digest:
        return f"entry {entry} was not unpacked from {digest}"
    if manifest.get("config_sha256") != _sha256(os.path.join(entry, "config.json")):
        return f"the config.json of entry {entry} changed since it was unpacked"
    return None


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
    os.makedirs(cache, mode=0o700, exist_ok=True)
    _check_cache(cache)
    entry = os.path.join(cache, source.key)
    if os.path.lexists(entry):
        return _reused(entry, source), False
    missing = missing_tools()
    if missing:
        raise OciError(missing_tools_message(missing))

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
        os.chmod(bundle, 0o700)
        os.chmod(os.path.join(bundle, "rootfs"), 0o755 & ~0o022)
        manifest = {
            "digest": source.digest,
            "config_sha256": _sha256(os.path.join(bundle, "config.json")),
        }
        fd = os.open(os.path.join(bundle, _MANIFEST), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with open(fd, "w") as f:
            json.dump(manifest, f)
        try:
            os.rename(bundle, entry)
        except OSError:
            if not os.path.lexists(entry):
                raise
            return _reused(entry, source), False  # made meanwhile by another submission
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return entry, True


def _reused(entry: str, source: ImageSource) -> str:
    """``entry``, once it is checked to be the user's own unpacking of ``source``."""
    try:
        problem = _entry_problem(entry, source.digest)
    except OSError as e:
        problem = f"entry {entry} cannot be read ({e.strerror})"
    if problem:
        raise OciError(
            f"the cached image {source.image!r} cannot be trusted: {problem}; remove it"
            f" (rm -rf {entry}) so that TorchX unpacks the image again"
        )
    return entry


@dataclass
class RoleBundle:
    """The bundle one role runs in: where it goes, from which image, with what mounted."""

    role: str
    image: str
    path: str
    workdir: str
    mounts: list[BindMount | VolumeMount | DeviceMount]
    gpus: bool = False
    image_workdir: bool = False
    """Start in the image's working directory, not ``workdir`` (a ``docker`` workspace)."""


def _bind(source: str, destination: str, read_only: bool) -> dict[str, Any]:
    options = ["rbind", "nosuid", "ro" if read_only else "rw"]
    return {"destination": destination, "type": "bind", "source": source, "options": options}


def bundle_config(image_config: dict[str, Any], rootfs: str, bundle: RoleBundle) -> dict[str, Any]:
    """The role's ``config.json``, from the one umoci wrote for the image."""
    config = dict(image_config)
    config.pop("hooks", None)  # programs run on the node, outside the container: never taken
    process = dict(config.get("process") or {})
    process["terminal"] = False
    if not bundle.image_workdir or not process.get("cwd"):
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


BUNDLES_DIR = ".torchx-oci"


def bundles_root(workdir: str) -> str:
    """``WORKDIR/.torchx-oci``, made private, and refused unless it is a directory of the
    user's own (never a link out of the job's directory)."""

    root = os.path.join(workdir, BUNDLES_DIR)
    if not os.path.lexists(root):
        os.mkdir(root, 0o700)
    st = os.lstat(root)
    problem = None if stat.S_ISDIR(st.st_mode) else f"{root} is not a directory (a link?)"
    problem = problem or _private_problem(root, st, "the bundles' directory")
    if problem:
        raise OciError(f"{problem}; remove it so that TorchX makes its own")
    return root


def write_bundle(bundle: RoleBundle, entry: str) -> None:
    """Writes the role's bundle (``config.json`` and an empty ``rootfs``), privately."""
    with open(os.path.join(entry, "config.json")) as f:
        image_config = json.load(f)
    config = bundle_config(image_config, os.path.join(entry, "rootfs"), bundle)
    os.makedirs(bundle.path, mode=0o700)  # a new name inside the private bundles_root
    os.mkdir(os.path.join(bundle.path, "rootfs"), 0o700)
    path = os.path.join(bundle.path, "config.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with open(fd, "w") as f:
        json.dump(config, f, indent=1)


def make_bundles(bundles: Sequence[RoleBundle], cache: str) -> None:
    """Writes every role's bundle, unpacking the images the cache lacks.

    Every image is looked up before any is unpacked, so a wrong name fails at once.
    """

    for workdir in {bundle.workdir for bundle in bundles}:
        bundles_root(workdir)
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
