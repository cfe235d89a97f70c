"""The ``container`` run option: the ``srun`` options that run a role inside its image.

``none`` runs replicas on the node as they are (the image is a directory, upstream's
meaning). ``oci`` uses Slurm's own OCI support (``srun --container=<bundle>``, configured
by the cluster's ``oci.conf``): the bundles are made by :mod:`._slurm.oci` when the job is
submitted. ``pyxis`` uses NVIDIA's pyxis plugin (``--container-image`` and friends); enroot
pulls the image on the nodes.

In both, the job's directory is mounted at its own path and is the working directory, so
a ``job_dir`` workspace and relative paths work as without containers.
"""

from __future__ import annotations

import os

from torchx.settings import ENV_TORCHX_ATTEMPT
from torchx.specs.api import BindMount, DeviceMount, Role, VolumeMount

__all__ = ["MODES", "check_mode", "check_mounts", "enroot_uri", "oci_srun_opts", "pyxis_srun_opts"]

MODES = ("none", "oci", "pyxis")

OCI_EXPORTS = (ENV_TORCHX_ATTEMPT, "TORCHX_MAX_RETRIES", "PYTHONUNBUFFERED")
"""What the batch script exports into an OCI container besides Slurm's ``SLURM_*``
variables; the image's own environment (its ``PATH``) is not overridden by the submit
host's, and the role's ``env`` is read from its private file by the replica's
``/bin/sh``."""


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(
            f"container={mode!r} is not a container mode; use one of {', '.join(MODES)}"
            " (none: no container; oci: Slurm's oci.conf; pyxis: NVIDIA's pyxis plugin)"
        )
    return mode


def check_mounts(role: Role, mode: str) -> None:
    """Refuses what a Slurm container cannot mount: named volumes, and `:` or `,` in a
    pyxis path (its separators)."""
    for mount in role.mounts:
        if isinstance(mount, VolumeMount):
            raise ValueError(
                f"role {role.name!r} mounts volume {mount.src!r}, which Slurm has no notion"
                " of; mount its path with a bind mount (type=bind,src=...,dst=...)"
            )
        paths = (
            (mount.src_path, mount.dst_path) if isinstance(mount, BindMount | DeviceMount) else ()
        )
        for path in paths:
            if not os.path.isabs(path):
                raise ValueError(
                    f"mount path {path!r} of role {role.name!r} is not absolute; give the full path"
                )
            if mode == "pyxis" and any(c in path for c in ":,"):
                raise ValueError(
                    f"mount path {path!r} of role {role.name!r} holds ':' or ',', which"
                    " pyxis's --container-mounts cannot carry; rename or link the directory"
                )


def enroot_uri(image: str) -> str:
    """``image`` as enroot names it: ``registry#repo:tag`` for a registry other than
    Docker Hub's; a path (a squashfs file) or an enroot URI as given."""
    if image.startswith(("/", "./", "docker://", "dockerd://", "podman://")):
        return image
    first, slash, rest = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return f"{first}#{rest}"
    return image


def pyxis_srun_opts(role: Role, workdir: str, image_workdir: bool = False) -> dict[str, str]:
    """pyxis's options for one replica of ``role`` (the image pulled by enroot on the node);
    it starts in ``workdir``, or with ``image_workdir`` in the image's own (enroot's
    default)."""
    if any(c in workdir for c in ":,"):
        raise ValueError(
            f"the job's directory {workdir!r} holds ':' or ',', which pyxis's"
            " --container-mounts cannot carry; use a job_dir (or run from a directory)"
            " without them"
        )
    mounts = [f"{workdir}:{workdir}"]
    for mount in role.mounts:
        if isinstance(mount, BindMount):
            mounts.append(f"{mount.src_path}:{mount.dst_path}" + (":ro" if mount.read_only else ""))
        elif isinstance(mount, DeviceMount):
            mounts.append(f"{mount.src_path}:{mount.dst_path}")
    opts = {"container-image": enroot_uri(role.image), "container-mounts": ",".join(mounts)}
    if not image_workdir:
        opts["container-workdir"] = workdir
    return opts


def oci_srun_opts(bundle: str) -> dict[str, str]:
    """Slurm's options for one replica run in the OCI bundle at ``bundle``."""
    return {"container": bundle, "export": ",".join(OCI_EXPORTS)}
