"""The two workspace builders of ``slurm``, picked with ``-cfg workspace_type=``.

``dir`` (the default) copies the workspace into ``job_dir``, which the job runs from (in
a container the job dir is mounted and the image stays the role's); over ssh the copy is
staged here and sent to the login node at submission. ``docker`` builds the workspace
into a patched image with the local Docker daemon (``torchx-workspace-docker``, installed
with ``torchx-sched-slurm[workspace]``) and runs every replica in it: ``container=oci``
unpacks it from this host's daemon (or, with ``image_repo``, from the registry it was
pushed to), ``pyxis`` (what ``container=none`` becomes) pulls it from ``image_repo``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from typing import Any

from torchx.schedulers._slurm.ssh import SshTarget
from torchx.schedulers._slurm.validate import check_job_dir
from torchx.specs.api import CfgVal, Role
from torchx.util.log import get_logger
from torchx.workspace.api import WorkspaceMixin
from torchx.workspace.dir_workspace import DirWorkspaceMixin

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.ssh import SshTarget

__all__ = [
    "DOCKER",
    "RESERVED_NAMES",
    "SCRIPT_NAME",
    "SlurmDirWorkspace",
    "docker_builder",
    "home_expanded",
    "in_container",
    "remote_job_dir",
    "via",
]

DOCKER = "docker"
SCRIPT_NAME = "torchx-sbatch.sh"
RESERVED_NAMES = (SCRIPT_NAME, ".torchx-oci", ".torchx-owner", ".torchx-env-")
"""Names TorchX writes into a job's directory (the last a prefix: ``.torchx-env-<job id>``):
a workspace entry of one of these names (a link, say) could stand in for TorchX's own
file, so such a workspace is refused."""


def via(cfg: Mapping[str, CfgVal] | None) -> SshTarget | None:
    """The login node the ``ssh`` run option names, if any."""
    value = (cfg or {}).get("ssh")
    if not value:
        return None

    return SshTarget.parse(str(value))


def in_container(cfg: Mapping[str, CfgVal]) -> bool:
    return str(cfg.get("container") or "none") != "none"


def home_expanded(cfg: Mapping[str, CfgVal]) -> Mapping[str, CfgVal]:
    """``cfg`` with a local ``job_dir``'s ``~`` expanded, as a shell would have done on
    upstream's command line (over ssh ``~`` is the login node's home: see
    :func:`remote_job_dir`)."""
    job_dir = cfg.get("job_dir")
    if isinstance(job_dir, str) and job_dir.startswith("~"):
        return {**cfg, "job_dir": os.path.expanduser(job_dir)}
    return cfg


def remote_job_dir(job_dir: str) -> str:
    """``job_dir`` as the login node's commands take it: ``~/x`` is ``x`` (they start in
    the home there)."""
    return job_dir[2:] if job_dir.startswith("~/") else job_dir


def _refuse_reserved(copy: str, workspace: object) -> None:
    """Refuses a workspace whose copy holds a name TorchX writes into the job's directory."""
    taken = [
        name
        for name in sorted(os.listdir(copy))
        if name in RESERVED_NAMES or name.startswith(RESERVED_NAMES[-1])
    ]
    if taken:
        raise ValueError(
            f"workspace {str(workspace)!r} holds {taken[0]!r}, a name TorchX writes into the job's"
            " directory; rename it, or leave it out with a line in .torchxignore"
        )


def docker_builder() -> WorkspaceMixin[Any] | None:
    """The image builder, when ``torchx-workspace-docker`` is installed."""
    try:
        from torchx.workspace.docker_workspace import DockerWorkspaceMixin
    except ImportError:
        return None
    return DockerWorkspaceMixin()


def docker_missing() -> ValueError:
    return ValueError(
        f"workspace_type={DOCKER} needs torchx-workspace-docker and the docker SDK, not"
        " installed here; pip install 'torchx-sched-slurm[workspace]'"
    )


class SlurmDirWorkspace(DirWorkspaceMixin):
    """``dir``: the workspace copied into ``job_dir`` (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.staged: dict[str, str] = {}
        """remote job dir -> the local copy of its workspace (ssh), sent at submission"""

    def planned_image(self, role: Role, cfg: Mapping[str, CfgVal]) -> str:
        """In a container the image stays the role's (the job dir is mounted into it);
        over ssh the job dir is the login node's."""
        job_dir = cfg.get("job_dir")
        if in_container(cfg):
            return role.image
        if via(cfg) is not None and isinstance(job_dir, str):
            return remote_job_dir(job_dir)
        return super().planned_image(role, home_expanded(cfg))

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Copies the workspace into ``job_dir``; in a container the image stays. Over ssh
        the copy is made here, in a private temp dir, and sent to ``job_dir`` on the
        login node when the job is submitted."""
        image = role.image
        job_dir = cfg.get("job_dir")
        if isinstance(job_dir, str):
            check_job_dir(job_dir)
        if via(cfg) is not None and isinstance(job_dir, str):
            job_dir = remote_job_dir(job_dir)
            if job_dir not in self.staged:
                staged = os.path.join(tempfile.mkdtemp(prefix="torchx-slurm-ws-"), "ws")
                try:
                    super().build_workspace_and_update_role(role, workspace, {"job_dir": staged})
                    _refuse_reserved(staged, role.workspace or workspace)
                except BaseException:
                    shutil.rmtree(os.path.dirname(staged), ignore_errors=True)
                    raise
                self.staged[job_dir] = staged
            role.image = job_dir
        elif via(cfg) is not None:
            get_logger(__name__).debug(
                "the workspace %s stays here: a job submitted over ssh without job_dir runs"
                " in your home on the login node (-cfg job_dir=DIR sends the workspace there)",
                role.workspace or workspace,
            )
        else:
            cfg = home_expanded(cfg)
            job_dir = cfg.get("job_dir")
            super().build_workspace_and_update_role(role, workspace, cfg)
            if isinstance(job_dir, str):
                try:
                    _refuse_reserved(job_dir, role.workspace or workspace)
                except ValueError:
                    self.created_job_dirs().pop(os.path.abspath(job_dir), None)
                    shutil.rmtree(job_dir, ignore_errors=True)
                    raise
        if in_container(cfg):
            role.image = image

    def built_message(self, role: Role, old_image: str) -> str:
        if role.image == old_image:  # a container's image: the copy is the job dir
            return f"Copied workspace {role.workspace} of role `{role.name}` into the job dir"
        return super().built_message(role, old_image)

    def drop_staged(self) -> None:
        """Removes the local copies of workspaces staged for a submission over ssh."""
        for staged in self.staged.values():
            shutil.rmtree(os.path.dirname(staged), ignore_errors=True)
        self.staged.clear()
