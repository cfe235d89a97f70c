"""What ``torchx run -s ray`` submits: the run options, the Ray job (entrypoint, runtime
env, metadata) and the app spec the driver reads, built without contacting the cluster so
that a dry run needs neither a cluster nor Ray.

A sweep is one Ray job per element under one app id: element ``p`` of sweep ``ID`` is the
job ``ID-p``, a one-replica app run by the usual driver, its metadata naming the sweep
(``torchx.sweep``), its position and what the element is (index, values, the sweep's
size). ``max_parallel`` K is a gate in the cluster: a named actor with K permits that each
element's driver holds while its replica runs (the other drivers wait for one, printing
``waiting_turn``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
import tempfile
import zipfile
from pathlib import Path
from typing import IO, Any

from torchx.schedulers._ray.client import address_in_app_id
from torchx.schedulers.api import HELP_KEY, StructuredOpts
from torchx.schedulers.shared import labels
from torchx.specs.api import AppDef, Role, macros
from torchx.specs.replica_macros import ReplicaMacros
from torchx.util.log import get_logger
from torchx.util.startup.lazy_dataclass import dataclass, field
from torchx.workspace.api import LocalFileSystem, WorkspaceProgress, walk_workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs.sweep import AppArray

logger = get_logger(__name__)

DRIVER_PATH = ".torchx_ray/driver.py"
"""Where the driver lies inside the job's working dir (never in the user's directory)."""
KEEPER_PATH = ".torchx_ray/keeper.py"
"""Beside it, what the driver starts beside each replica's command (keeper.py)."""
ENV_JOB = "TORCHX_RAY_JOB"
RANK0_ENV = "TORCHX_RANK0_HOST"
META_APP = "torchx.app"
META_APP_ID = "torchx.app_id"
META_SESSION = "torchx.session"
META_ROLES = "torchx.roles"
META_CLUSTER = "torchx.ray_cluster"
STRATEGIES = ("SPREAD", "PACK", "STRICT_SPREAD", "STRICT_PACK")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


@dataclass
class Opts(StructuredOpts):
    """Run options of ``ray``."""

    dashboard_address: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "the cluster's dashboard (Jobs API), e.g. http://head:8265; default:"
            " $RAY_API_SERVER_ADDRESS, then $RAY_ADDRESS, then 127.0.0.1:8265"
        },
    )
    placement_strategy: str = field(
        default="SPREAD",
        metadata={
            HELP_KEY: "how the replicas' bundles are placed on nodes: SPREAD, PACK,"
            " STRICT_SPREAD or STRICT_PACK"
        },
    )
    placement_timeout_s: int = field(
        default=0,
        metadata={
            HELP_KEY: "fail the app when its resources are not free after this many seconds"
            " (0: wait, reporting PENDING and what it waits for)"
        },
    )
    python: str = field(
        default="python",
        metadata={HELP_KEY: "the interpreter that runs the TorchX driver in the cluster"},
    )
    pip: list[str] | None = field(
        default=None,
        metadata={HELP_KEY: "packages pip installs into the job's runtime env (pkg1,pkg2)"},
    )
    requirements: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "a requirements.txt whose packages go into the job's runtime env, read at"
            " submit; default: requirements.txt at the root of the workspace, if there is one"
        },
    )
    cluster_name: str | None = field(
        default=None,
        metadata={HELP_KEY: "the Ray cluster's name, recorded with the job (upstream's option)"},
    )
    cluster_config_file: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "not supported: upstream found the head through Ray's autoscaler; set"
            " dashboard_address instead"
        },
    )
    metadata: dict[str, str] | None = field(
        default=None, metadata={HELP_KEY: "extra job metadata (K:V,K2:V2) shown by Ray"}
    )
    working_dir: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "deprecated (upstream's old option): a directory to make the job's"
            " working dir; the same as the workspace (torchx run --workspace DIR)"
        },
    )


@dataclass
class RayActor:
    """One replica as upstream's dry run described it (its driver ran one actor each)."""

    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    num_cpus: int = 1
    num_gpus: int = 0
    min_replicas: int | None = None


@dataclass
class RayJob:
    """A Ray job as ``schedule`` submits it; ``package_dir`` is the local directory whose
    files (plus the driver) become the job's working dir (None: the driver alone).

    ``requirements`` is a path, read at submit. Upstream's field names read the same:
    ``app_id``, ``dashboard_address``, ``working_dir``, ``cluster_name``,
    ``cluster_config_file``, ``requirements`` and ``actors``."""

    address: str
    address_origin: str
    submission_id: str
    entrypoint: str
    runtime_env: dict[str, Any]
    metadata: dict[str, str]
    spec: dict[str, Any]
    package_dir: str | None = None
    requirements: str | None = None
    cluster_name: str | None = None
    actors: list[RayActor] = field(default_factory=list)
    spec_on_entrypoint: bool = False
    """The driver's spec on the entrypoint's command line, not in the runtime env: the
    jobs of a sweep then share one runtime env, which each node sets up once (Ray unpacks
    a working dir again for every other runtime env that asks for it at the same moment,
    under the feet of a job already started in it)."""

    @property
    def app_id(self) -> str:
        """The Ray submission id (the app id printed at submit also carries the address)."""
        return self.submission_id

    @property
    def dashboard_address(self) -> str:
        """The dashboard the job goes to, ``host:port`` as upstream wrote it when it can be."""

        return address_in_app_id(self.address) or self.address

    @property
    def working_dir(self) -> str:
        """The local directory that becomes the job's working dir (``""``: none)."""
        return self.package_dir or ""

    @property
    def cluster_config_file(self) -> None:
        """Always None: jobs go to a running cluster's dashboard."""
        return None

    def body(self, package_uri: str, requirements: list[str] | None = None) -> dict[str, Any]:
        """The JSON body of ``POST /api/jobs/`` once the package is uploaded, with the lines
        of the requirements file read at submit."""
        runtime_env = dict(self.runtime_env)
        if requirements:
            runtime_env["pip"] = [*runtime_env.get("pip", []), *requirements]
        runtime_env["working_dir"] = package_uri
        spec = json.dumps(self.spec, separators=(",", ":"))
        entrypoint = self.entrypoint
        if self.spec_on_entrypoint:
            entrypoint = f"{ENV_JOB}={shlex.quote(spec)} {entrypoint}"
        else:
            env_vars = dict(runtime_env.get("env_vars") or {})
            env_vars[ENV_JOB] = spec
            runtime_env["env_vars"] = env_vars
        return {
            "submission_id": self.submission_id,
            "entrypoint": entrypoint,
            "runtime_env": runtime_env,
            "metadata": self.metadata,
        }

    def __str__(self) -> str:
        shown = self.body(f"gcs://_ray_pkg_<hash>.zip (uploaded at submit: {self.package_what()})")
        if self.spec_on_entrypoint:
            shown["entrypoint"] = self.entrypoint
            shown[ENV_JOB] = self.spec
        else:
            shown["runtime_env"]["env_vars"][ENV_JOB] = self.spec
        if self.requirements:
            shown["runtime_env"]["pip (read at submit)"] = self.requirements
        return json.dumps({"dashboard": self.address, **shown}, indent=2)

    def package_what(self) -> str:
        where = f"the files of {self.package_dir} and" if self.package_dir else ""
        return f"{where} the TorchX driver {DRIVER_PATH}".strip()


def bundle_of(role: Role) -> dict[str, float]:
    """The placement-group bundle of one replica: CPU, GPU, memory (bytes) and the role's
    ``devices`` as Ray custom resources; unset (non-positive) amounts are left out."""
    resource = role.resource
    bundle: dict[str, float] = {}
    if resource.cpu > 0:
        bundle["CPU"] = float(resource.cpu)
    if resource.gpu > 0:
        bundle["GPU"] = float(resource.gpu)
    if resource.memMB > 0:
        bundle["memory"] = float(int(resource.memMB) * 1024 * 1024)
    for name, count in (resource.devices or {}).items():
        if count > 0:
            bundle[name] = float(count)
    return bundle


def app_spec(app: AppDef, app_id: str, opts: Opts) -> dict[str, Any]:
    """What the driver runs: each replica's argv and env with the macros applied."""
    roles = []
    for role in app.roles:
        templates = ReplicaMacros([role.entrypoint, *role.args], role.env)
        replicas = []
        for i in range(role.num_replicas):
            values = macros.Values(
                img_root=".", app_id=app_id, replica_id=str(i), rank0_env=RANK0_ENV
            )
            argv, env = templates.apply(values.to_dict())
            env = {**env, "TORCHX_REPLICA_ID": str(i), "TORCHX_ROLE_NAME": role.name}
            replicas.append({"id": i, "argv": argv, "env": env})
        roles.append(
            {
                "name": role.name,
                "resource": bundle_of(role),
                "max_retries": int(role.max_retries),
                "retry_policy": role.retry_policy.name,
                "replicas": replicas,
            }
        )
    return {
        "app_id": app_id,
        "strategy": opts.placement_strategy,
        "placement_timeout_s": opts.placement_timeout_s,
        "rank0_env": RANK0_ENV,
        "roles": roles,
    }


MAX_REQUIREMENTS_BYTES = 1 << 20


def _read_requirements(path: str) -> str:
    """The text of a requirements file: a regular file of at most 1 MiB, read without
    waiting on a FIFO or reading a device; anything else is one line naming the file."""

    def refuse(why: str) -> ValueError:
        return ValueError(f"requirements file {path!r} {why}; fix -cfg requirements=PATH")

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise refuse(f"cannot be read ({e.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise refuse("is not a regular file (a device, FIFO or directory)")
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_REQUIREMENTS_BYTES + 1)
    if len(data) > MAX_REQUIREMENTS_BYTES:
        raise refuse(f"is larger than {MAX_REQUIREMENTS_BYTES >> 20} MiB")
    return data.decode("utf-8", "replace")


def runtime_env(opts: Opts) -> dict[str, Any]:
    """The runtime env known at dry run: the ``pip`` option's packages (the requirements
    file joins them at submit)."""
    packages = list(opts.pip or [])
    return {"pip": packages} if packages else {}


def requirements_of(opts: Opts, package_dir: str | None) -> str | None:
    """The requirements file of the job: the option, else ``requirements.txt`` at the root
    of the workspace (as upstream)."""
    if opts.requirements:
        return os.path.expanduser(opts.requirements)  # `~` as a shell made it
    if package_dir and os.path.isfile(os.path.join(package_dir, "requirements.txt")):
        return os.path.join(package_dir, "requirements.txt")
    return None


def read_requirements(path: str) -> list[str]:
    """The requirement lines of a requirements file (comments and blanks left out)."""
    lines = (raw.partition("#")[0].strip() for raw in _read_requirements(path).splitlines())
    return [line for line in lines if line]


def actors_of(app: AppDef, app_id: str) -> list[RayActor]:
    """Upstream's description of the job: one actor per replica, macros applied."""
    actors = []
    for role in app.roles:
        for i in range(role.num_replicas):
            replica = macros.Values(
                img_root=role.image, app_id=app_id, replica_id=str(i), rank0_env=RANK0_ENV
            ).apply(role)
            actors.append(
                RayActor(
                    name=role.name,
                    command=[replica.entrypoint, *replica.args],
                    env=dict(replica.env),
                    num_cpus=max(1, int(role.resource.cpu)),
                    num_gpus=max(0, int(role.resource.gpu)),
                    min_replicas=role.min_replicas,
                )
            )
    return actors


def job_metadata(app: AppDef, app_id: str, session: str, opts: Opts) -> dict[str, str]:
    metadata = {str(k): str(v) for k, v in (app.metadata or {}).items()}
    metadata.update({str(k): str(v) for k, v in (opts.metadata or {}).items()})
    if opts.cluster_name:
        metadata[META_CLUSTER] = opts.cluster_name
    metadata.update(
        {
            META_APP: app.name,
            META_APP_ID: app_id,
            META_SESSION: session,
            META_ROLES: json.dumps(
                {r.name: r.num_replicas for r in app.roles}, separators=(",", ":")
            ),
        }
    )
    if app.roles:  # an idempotency key's request, told apart from another's on a rerun
        metadata.update(labels.request_labels(app.roles[0].env))
    return metadata


def check_options(opts: Opts) -> None:
    if opts.cluster_config_file:
        raise ValueError(
            "cluster_config_file is not supported (upstream asked Ray's autoscaler for the"
            " head node); give the head's dashboard instead: -cfg"
            " dashboard_address=HEAD:8265 (`ray get-head-ip CLUSTER_CONFIG` prints HEAD)"
        )
    if opts.placement_strategy not in STRATEGIES:
        raise ValueError(
            f"unknown placement_strategy {opts.placement_strategy!r}; use one of"
            f" {', '.join(STRATEGIES)}"
        )
    if opts.placement_timeout_s < 0:
        raise ValueError("placement_timeout_s must be 0 (wait) or a number of seconds")


def pack_package(package_dir: str | None, out: IO[bytes]) -> str:
    """Writes the zip of the job's working dir to ``out`` (read back from its start) and
    returns its gcs name: the workspace files (what ``.torchxignore`` leaves in) plus the
    driver. Links are left out with a warning (Ray
    unpacks a link as a regular file holding its text); no file is writable by others
    there; a file is read only up to the size limit, even one that grows meanwhile. The
    zip is deterministic, so an unchanged workspace is uploaded once."""

    progress = WorkspaceProgress(package_dir or "(none)", "packing")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        if package_dir:
            fs = LocalFileSystem()
            entries = []
            links: list[str] = []
            for directory, _, files in walk_workspace(fs, package_dir):
                for name, info in files.items():
                    rel = os.path.relpath(os.path.join(directory, name), package_dir)
                    if rel == DRIVER_PATH or info["type"] == "other":
                        continue
                    if info["type"] == "link":
                        links.append(rel)
                        continue
                    entries.append((rel, info))
            if links:
                logger.warning(
                    "workspace %s: left out %d link(s), which a Ray working dir cannot hold: %s",
                    package_dir,
                    len(links),
                    ", ".join(sorted(links)[:5]) + (" ..." if len(links) > 5 else ""),
                )
            for rel, info in sorted(entries):
                member = zipfile.ZipInfo(rel, _ZIP_TIME)
                member.external_attr = (info["mode"] & 0o755 | 0o100000) << 16
                member.compress_type = zipfile.ZIP_DEFLATED
                progress.add_file(rel)
                progress.reserve(int(info["size"]), rel)  # refused before it is read
                with open(info["name"], "rb") as f, archive.open(member, "w") as zipped:
                    while chunk := f.read(1 << 20):
                        progress.add_bytes(len(chunk), rel)  # a growing file stops here
                        zipped.write(chunk)
        for path in (DRIVER_PATH, KEEPER_PATH):
            ours = zipfile.ZipInfo(path, _ZIP_TIME)
            ours.external_attr = 0o100644 << 16
            ours.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(ours, (Path(__file__).parent / Path(path).name).read_bytes())
    progress.done()
    out.seek(0)
    digest = hashlib.sha256()
    while chunk := out.read(1 << 20):
        digest.update(chunk)
    out.seek(0)
    return f"_ray_pkg_{digest.hexdigest()[:32]}.zip"


def package_file() -> IO[bytes]:
    """Where a package is built: a private temporary file (removed when closed), so a big
    workspace is never held in memory."""

    return tempfile.TemporaryFile(prefix="torchx_ray_pkg_")


def build_package(package_dir: str | None) -> tuple[str, bytes]:
    """``(gcs name, zip bytes)`` of the job's working dir (see :func:`pack_package`)."""
    with package_file() as out:
        name = pack_package(package_dir, out)
        return name, out.read()


META_SWEEP = "torchx.sweep"
"""An element job's metadata: the id of its sweep."""


META_ELEMENT = "torchx.sweep_element"
"""An element job's metadata: ``{"position", "index", "values", "size"}`` (JSON)."""


@dataclass
class RaySweep:
    """The jobs of a sweep, as ``schedule`` submits them (one package for all)."""

    sweep_id: str
    jobs: list[RayJob] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(job) for job in self.jobs)


def gate(array: AppArray, sweep_id: str) -> dict[str, Any] | None:
    """What the drivers of a sweep limited to ``max_parallel`` share (None: no limit)."""
    size = len(array.elements)
    if array.max_parallel is None or array.max_parallel >= size:
        return None
    return {"name": f"{sweep_id}/gate", "permits": array.max_parallel, "total": size}


def element_metadata(array: AppArray, sweep_id: str, position: int) -> dict[str, str]:
    element = array.elements[position]
    record = {
        "position": position,
        "index": element.index,
        "values": dict(element.values),
        "size": array.size_of(),
    }
    return {META_SWEEP: sweep_id, META_ELEMENT: json.dumps(record, separators=(",", ":"))}
