"""``slurm``: runs apps as heterogeneous Slurm batch jobs, through Slurm's own commands.

Each replica of each role is one het component (one node) of a single ``sbatch`` job; the
batch script starts every component with one ``srun`` and, when it fails and retries are
left, puts the job back in the queue with ``scontrol requeue``. Jobs run in the submitting
environment (virtualenv, working directory) on a shared filesystem: no containers.

* ``describe``/``status`` is one ``squeue -j`` call (text: 22.05's ``--json`` ignores
  ``-j`` and lists the whole cluster); ``squeue --json`` and ``scontrol show job`` if
  that fails, ``sacct`` once the job has left the controller's memory.
* Replica logs are ``slurm-<job id>-<role>-<replica>.{out,err}`` in the job's directory
  (``job_dir`` or the submit directory); where that was is recorded under
  ``$TORCHX_HOME/slurm/<job id>.json`` so ``torchx log`` works from any directory.
* Job names read ``<app>:<role>-<replica>`` in ``squeue``.

Handles look like ``slurm://<session>/<job id>``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from torchx.schedulers.api import (
    HELP_KEY,
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    StructuredOpts,
)
from torchx.schedulers.slurm_commands import (
    SlurmCommandError,
    SlurmNotFoundError,
    first_error_line,
    run,
)
from torchx.schedulers.slurm_parse import (
    SQUEUE_FORMAT,
    SlurmJob,
    leaders,
    parse_sacct_text,
    parse_scontrol_text,
    parse_squeue_json,
    parse_squeue_text,
    parse_time_limit,
    split_job_name,
)
from torchx.specs.api import (
    NONE,
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    Resource,
    Role,
    runopts,
)
from torchx.util.lazy_dataclass import dataclass, field
from torchx.workspace.dir_workspace import DirWorkspaceMixin

if TYPE_CHECKING:
    from datetime import datetime

    from torchx.specs import ReplicaStatus, RoleStatus

__all__ = [
    "SBATCH_GROUP_OPTIONS",
    "SBATCH_JOB_OPTIONS",
    "SLURM_JOB_DIRS",
    "SLURM_STATES",
    "Opts",
    "SlurmBatchRequest",
    "SlurmCommandError",
    "SlurmNotFoundError",
    "SlurmOpts",
    "SlurmReplicaRequest",
    "SlurmScheduler",
    "appstate_from_slurm_state",
    "create_scheduler",
    "get_appstate_from_job",
    "version",
]

SLURM_STATES: dict[str, AppState] = {
    "BOOT_FAIL": AppState.FAILED,
    "CANCELLED": AppState.CANCELLED,
    "COMPLETED": AppState.SUCCEEDED,
    "DEADLINE": AppState.FAILED,
    "FAILED": AppState.FAILED,
    "NODE_FAIL": AppState.FAILED,
    "OUT_OF_MEMORY": AppState.FAILED,
    "PENDING": AppState.PENDING,
    "PREEMPTED": AppState.FAILED,
    "RUNNING": AppState.RUNNING,
    "REQUEUED": AppState.PENDING,
    "RESIZING": AppState.PENDING,
    "REVOKED": AppState.FAILED,
    "SUSPENDED": AppState.PENDING,
    "TIMEOUT": AppState.FAILED,
}
"""Slurm job state -> TorchX app state; states not listed (``COMPLETING``, ...) are UNKNOWN."""

SBATCH_JOB_OPTIONS = ("account", "comment", "mail-user", "mail-type")
"""Run options passed once, on the ``sbatch`` command line (in this order)."""

SBATCH_GROUP_OPTIONS = ("partition", "time", "constraint", "qos")
"""Run options repeated on the ``#SBATCH`` line of every het component."""

SLURM_JOB_DIRS = ".torchxslurmjobdirs"
"""Upstream's per-directory ``<job id> = <job_dir>`` file; read (never written) for old jobs."""

SCRIPT_NAME = "torchx-sbatch.sh"
RANK0_ENV = "SLURM_JOB_NODELIST_HET_GROUP_0"
_JOB_ID = '"$SLURM_JOB_ID"'
_APP_ID_MARK = "\0app_id\0"  # stands for the job id until the script is written
_RECORDS = "slurm"
_STATUS_POLL_S = 1.0  # at most one squeue per second while following a log


def appstate_from_slurm_state(slurm_state: str) -> AppState:
    """The app state of a Slurm state string; UNKNOWN for one TorchX does not know."""
    return SLURM_STATES.get(slurm_state, AppState.UNKNOWN)


def get_appstate_from_job(job: Mapping[str, Any]) -> AppState:
    """The app state of one job entry of ``squeue --json`` (any Slurm version)."""
    from torchx.schedulers.slurm_parse import base_state

    return appstate_from_slurm_state(base_state(job.get("job_state", job.get("state"))))


_VERSION: list[tuple[int, int]] = []


def version() -> tuple[int, int]:
    """(major, minor) of the Slurm on this host (``sinfo --version``), asked once.

    Without a usable ``sinfo`` (e.g. a dry run off-cluster) assumes 24.05 and warns.
    """
    if _VERSION:
        return _VERSION[0]
    found = (24, 5)
    try:
        code, out, _ = run(["sinfo", "--version"])
        words = out.split()
        if code == 0 and len(words) >= 2:
            major, minor = words[1].split(".")[:2]
            found = (int(major), int(minor))
        else:
            raise ValueError(out)
    except (SlurmCommandError, ValueError, OSError):
        import warnings

        warnings.warn(
            "could not read the Slurm version with `sinfo --version`; assuming 24.05",
            RuntimeWarning,
            stacklevel=2,
        )
    _VERSION.append(found)
    return found


def _partition_memory() -> dict[str, int]:
    """``{partition: RealMemory MB}`` from ``sinfo`` (``"*"`` maps the default partition)."""
    try:
        code, out, _ = run(["sinfo", "--format", "%P,%m", "--noconvert", "--noheader"])
    except SlurmCommandError:
        return {}
    if code != 0:
        return {}
    memory: dict[str, int] = {}
    for line in out.splitlines():
        name, _, mem = line.strip().partition(",")
        digits = mem.rstrip("+M")
        if not name or not digits.isdigit():
            continue
        if name.endswith("*"):
            name = name[:-1]
            memory.setdefault("*", int(digits))
        memory[name] = min(memory.get(name, int(digits)), int(digits))
    return memory


# ---------------------------------------------------------------------------------------
# run options
# ---------------------------------------------------------------------------------------


@dataclass
class Opts(StructuredOpts):
    """Run options of ``slurm`` (help in field metadata: read on every ``torchx run``)."""

    account: str | None = field(
        default=None, metadata={HELP_KEY: "account to charge the job to (sbatch --account)"}
    )
    partition: str | None = field(
        default=None,
        metadata={HELP_KEY: "partition to run in (default: the cluster's default partition)"},
    )
    time: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "time limit per replica: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or"
            " D-HH:MM:SS"
        },
    )
    comment: str | None = field(
        default=None, metadata={HELP_KEY: "comment shown in squeue/sacct (sbatch --comment)"}
    )
    constraint: str | None = field(
        default=None, metadata={HELP_KEY: "node features required (sbatch --constraint)"}
    )
    mail_user: str | None = field(
        default=None,
        metadata={"cfg_key": "mail-user", HELP_KEY: "who to mail job events to"},
    )
    mail_type: str | None = field(
        default=None,
        metadata={
            "cfg_key": "mail-type",
            HELP_KEY: "which events to mail (e.g. END,FAIL; sbatch --mail-type)",
        },
    )
    job_dir: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "new directory to copy the workspace into and run the job from (must"
            " not exist); logs are written there"
        },
    )
    qos: str | None = field(default=None, metadata={HELP_KEY: "quality of service (sbatch --qos)"})
    list_days: int = field(
        default=3,
        metadata={HELP_KEY: "how many days back `torchx list` looks in Slurm's accounting"},
    )


SlurmOpts = Opts
"""Compat name of :class:`Opts`."""


# ---------------------------------------------------------------------------------------
# requests
# ---------------------------------------------------------------------------------------


def _shell_word(value: str) -> str:
    """``value`` quoted for bash; the job-id mark becomes ``"$SLURM_JOB_ID"``."""
    if _APP_ID_MARK not in value:
        return shlex.quote(value)
    return _JOB_ID.join(shlex.quote(part) if part else "" for part in value.split(_APP_ID_MARK))


def _safe_name(value: str) -> str:
    """``value`` with everything but letters, digits, ``_``, ``.`` and ``-`` made ``_``."""
    return "".join(c if (c.isalnum() and c.isascii()) or c in "_.-" else "_" for c in value)


def _check_option(key: str, value: str) -> str:
    if not value or any(c.isspace() or c in "\"'\\" for c in value):
        raise ValueError(
            f"run option {key}={value!r} is not a valid Slurm value: it must be non-empty"
            " without spaces or quotes"
        )
    return value


@dataclass
class SlurmReplicaRequest:
    """One het component: the ``#SBATCH`` options and the ``srun`` command of a replica."""

    name: str
    entrypoint: str
    args: list[str]
    srun_opts: dict[str, str]
    sbatch_opts: dict[str, str | None]
    env: dict[str, str]

    @classmethod
    def from_role(
        cls,
        name: str,
        role: Role,
        cfg: Mapping[str, CfgVal],
        nomem: bool,
        log_dir: str = "",
    ) -> SlurmReplicaRequest:
        """The request of replica ``name`` (``<role>-<i>``) of an already-substituted role."""
        sbatch_opts = _group_opts(Opts.from_cfg(cfg), role.resource, nomem)
        return cls(
            name=name,
            entrypoint=role.entrypoint,
            args=list(role.args),
            srun_opts=_srun_opts(log_dir, name),
            sbatch_opts=sbatch_opts,
            env=dict(role.env),
        )

    def materialize(self) -> tuple[list[str], list[str]]:
        """(``#SBATCH`` arguments, ``srun`` arguments) of this component, shell-quoted."""
        sbatch_args = [f"--job-name={self.name}"]
        for key, value in self.sbatch_opts.items():
            sbatch_args.append(f"--{key}" if value is None else f"--{key}={value}")
        srun_args = [
            f"--{key}={_shell_word(value)}" if value else f"--{key}"
            for key, value in self.srun_opts.items()
        ]
        # `env` sets the replica's variables byte for byte (any name, any value). srun
        # splits its arguments at every ":" (het components), so a command holding a ":"
        # word runs under `bash -c`, quoted twice, and srun never sees its words.
        words = ["env", "--", *(f"{k}={v}" for k, v in self.env.items())]
        words += [self.entrypoint, *self.args]
        if ":" in words:
            # the job id mark becomes "$SLURM_JOB_ID" in the outer quoting: the batch
            # script splices the job id's digits into the inner text
            inner = " ".join(shlex.quote(word) for word in ["exec", *words])
            srun_args += ["/bin/bash", "-c", _shell_word(inner)]
        else:
            srun_args += [_shell_word(word) for word in words]
        return sbatch_args, srun_args


def _group_opts(opts: Opts, resource: Resource, nomem: bool) -> dict[str, str | None]:
    """The ``#SBATCH`` options of one het component (in upstream's order)."""
    group: dict[str, str | None] = {"requeue": None}
    for key in SBATCH_GROUP_OPTIONS:
        value = opts.get(key)
        if value is not None:
            group[key] = str(value)
    _resource_opts(group, resource, nomem)
    return group


def _resource_opts(opts: dict[str, str | None], resource: Resource, nomem: bool) -> None:
    opts.setdefault("ntasks-per-node", "1")
    if resource.cpu > 0:
        opts.setdefault("cpus-per-task", str(int(resource.cpu)))
    if resource.memMB > 0 and not nomem:
        opts.setdefault("mem", str(int(resource.memMB)))
    if resource.gpu > 0:
        if version() >= (24, 11):
            opts.setdefault("gpus-per-node", str(resource.gpu))
        else:
            opts.setdefault("gpus-per-task", str(resource.gpu))
            opts.setdefault("ntasks", "1")


def _srun_opts(log_dir: str, name: str) -> dict[str, str]:
    # srun expands %-patterns in file names: double any % of the directory
    prefix = f"{log_dir.replace('%', '%%')}/" if log_dir else ""
    base = f"{prefix}slurm-{_APP_ID_MARK}-{name}"
    return {
        "output": f"{base}.out",
        "error": f"{base}.err",
        "open-mode": "append",  # a requeued job adds to its logs instead of erasing them
        "wait": "60",
        "kill-on-bad-exit": "1",
    }


@dataclass
class SlurmBatchRequest:
    """The ``sbatch`` command and the het components of one app.

    ``log_dir`` is where the replicas' logs go (the job's directory), ``app_name`` and
    ``roles`` (role name -> replica count) are recorded for ``describe`` and ``log``.
    """

    cmd: list[str]
    replicas: dict[str, SlurmReplicaRequest]
    job_dir: str | None
    max_retries: int = 0
    log_dir: str = ""
    app_name: str = ""
    roles: dict[str, int] = field(default_factory=dict)

    def materialize(self) -> str:
        """The batch script."""
        from torchx.version import __version__

        lines = [
            "#!/bin/bash",
            "#",
            f"# Generated by TorchX {__version__}",
            f"# Run with: {shlex.join(self.cmd)}",
            "#",
        ]
        groups: list[list[str]] = []
        for i, replica in enumerate(self.replicas.values()):
            sbatch_args, srun_args = replica.materialize()
            if i == 0:
                batch_log = f"{self.log_dir.replace('%', '%%')}/" if self.log_dir else ""
                sbatch_args.append(f"--output={batch_log}slurm-%j.out")
            else:
                lines.append("#SBATCH hetjob")
            lines.append("#SBATCH " + " ".join(sbatch_args))
            groups.append(srun_args)
        lines += [
            "set -e",
            "",
            "export PYTHONUNBUFFERED=1",
            "export SLURM_UNBUFFEREDIO=1",
            f"export TORCHX_MAX_RETRIES={int(self.max_retries)}",
            "",
            "set +e",
            "srun " + " :\\\n    ".join(" ".join(group) for group in groups),
            "exitcode=$?",
            "set -e",
            "",
            'echo "job exited with code $exitcode"',
            "if [ $exitcode -ne 0 ]; then",
            '    if [ "$TORCHX_MAX_RETRIES" -gt "${SLURM_RESTART_COUNT:-0}" ]; then',
            '        scontrol requeue "$SLURM_JOB_ID"',
            "    fi",
            "    exit $exitcode",
            "fi",
            "",
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"{shlex.join(self.cmd)} $SBATCH_SCRIPT\n"
            "#----------------\n# SBATCH_SCRIPT\n#----------------\n" + self.materialize()
        )


# ---------------------------------------------------------------------------------------
# checks made before anything is queued
# ---------------------------------------------------------------------------------------

_PYTHONS = ("python", "python3")
_PYTHON_OPTS_WITH_VALUE = frozenset({"-W", "-X", "-Q"})
_TORCHRUN_FLAGS = frozenset(
    {
        "--standalone",
        "--no-python",
        "--no_python",
        "--run-path",
        "--run_path",
        "--module",
        "-m",
        "--virtual-local-rank",
        "--virtual_local_rank",
    }
)


def _is_python(program: str) -> bool:
    name = os.path.basename(program)
    return name in _PYTHONS or (name.startswith("python3.") and name[8:].isdigit())


def _script_of(program: str, args: list[str]) -> str | None:
    """The script file a ``python``/``torchrun`` command runs, if it names one."""
    name = os.path.basename(program)
    if name in ("bash", "sh") and len(args) >= 2 and args[0] == "-c":
        try:
            words = shlex.split(args[1])
        except ValueError:
            return None
        return _script_of(words[0], words[1:]) if words else None
    if _is_python(program):
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in ("-m", "-c", "-"):
                return None
            if arg in _PYTHON_OPTS_WITH_VALUE:
                i += 2
                continue
            if arg.startswith("-"):
                i += 1
                continue
            return arg
        return None
    if name == "torchrun":
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in ("-m", "--module", "--no-python", "--no_python"):
                return None
            if arg.startswith("-"):
                i += 1 if ("=" in arg or arg in _TORCHRUN_FLAGS) else 2
                continue
            return arg
    return None


def _check_role_files(role: Role, workdir: str) -> None:
    """Reports a missing entrypoint or script now rather than when the job starts."""
    import shutil

    entrypoint = role.entrypoint
    if "$" not in entrypoint:
        if "/" in entrypoint:
            path = os.path.join(workdir, entrypoint)
            if not os.path.exists(path):
                raise FileNotFoundError(
                    f"entrypoint {entrypoint!r} of role {role.name!r} does not exist (looked in"
                    f" {workdir}); fix the path before the job is queued"
                )
        elif shutil.which(entrypoint, path=role.env.get("PATH", os.environ.get("PATH"))) is None:
            raise FileNotFoundError(
                f"entrypoint {entrypoint!r} of role {role.name!r} is not on this host's PATH;"
                " install it, activate its environment or give its full path"
            )
    script = _script_of(entrypoint, role.args)
    checkable = script and "$" not in script and script.endswith(".py")
    if checkable and not os.path.exists(os.path.join(workdir, str(script))):
        raise FileNotFoundError(
            f"script {script!r} of role {role.name!r} does not exist (looked in {workdir});"
            " fix --script before the job is queued"
        )


def _check_time(value: str | None) -> None:
    if value is not None and parse_time_limit(value) is None:
        raise ValueError(
            f"run option time={value!r} is not a Slurm time limit; use minutes, MM:SS,"
            " HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (e.g. time=1:30:00)"
        )


# ---------------------------------------------------------------------------------------
# records under $TORCHX_HOME
# ---------------------------------------------------------------------------------------


def _records_dir() -> str:
    home = os.environ.get("TORCHX_HOME") or os.path.join(os.path.expanduser("~"), ".torchx")
    return os.path.join(home, _RECORDS)


def _record_path(job_id: str) -> str:
    return os.path.join(_records_dir(), f"{job_id}.json")


def _read_record(job_id: str) -> dict[str, Any] | None:
    import json

    try:
        with open(_record_path(job_id), "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _upstream_job_dirs(directory: str = ".") -> dict[str, str]:
    """``{job id: job_dir}`` from upstream's ``.torchxslurmjobdirs`` in ``directory``."""
    try:
        with open(os.path.join(directory, SLURM_JOB_DIRS)) as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    dirs = {}
    for line in lines:
        key, eq, value = line.partition(" = ")
        if eq:
            dirs[key.strip()] = value.strip()
    return dirs


def _valid_job_id(app_id: str) -> str:
    if not app_id.isdigit():
        raise ValueError(
            f"{app_id!r} is not a Slurm job id: slurm handles end in the number sbatch"
            " printed (slurm://torchx/1234)"
        )
    return app_id


# ---------------------------------------------------------------------------------------
# the scheduler
# ---------------------------------------------------------------------------------------


class _ThrottledWatcher:
    """``describe`` at most once per ``interval`` seconds (log followers poll often)."""

    def __init__(self, scheduler: SlurmScheduler, interval: float = _STATUS_POLL_S) -> None:
        self._scheduler = scheduler
        self._interval = interval
        self._last: tuple[float, DescribeAppResponse | None] | None = None

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        import time

        now = time.monotonic()
        if self._last is None or now - self._last[0] >= self._interval:
            self._last = (now, self._scheduler.describe(app_id))
        return self._last[1]

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        import time

        time.sleep(timeout)


class SlurmScheduler(DirWorkspaceMixin, Scheduler[Opts]):
    """Submits apps with ``sbatch`` and follows them with ``squeue``/``sacct``.

    The workspace (``job_dir`` run option) is copied into a new directory that the job
    runs from; without it the job runs in the submit directory.
    """

    def __init__(self, session_name: str) -> None:
        super().__init__("slurm", session_name)
        self._partition_memory: dict[str, int] | None = None

    def _run_opts(self) -> runopts:
        return Opts.as_runopts()

    # -- dry run ----------------------------------------------------------------------------

    def _pre_build_validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Refuses an existing ``job_dir`` before any workspace is copied."""
        job_dir = cfg.get("job_dir")
        if isinstance(job_dir, str) and os.path.exists(job_dir):
            raise FileExistsError(
                f"job_dir {job_dir!r} already exists; pass a new directory (each job gets its own)"
            )

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Roles need no resource: Slurm's defaults apply."""

    def _nomem(self, partition: str | None) -> bool:
        """Whether to leave ``--mem`` out: partitions reporting <= 1000 MB (ParallelCluster)."""
        if self._partition_memory is None:
            self._partition_memory = _partition_memory()
        mem = self._partition_memory.get(partition or "*")
        return mem is not None and mem <= 1000

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[SlurmBatchRequest]:
        opts = Opts.from_cfg(cfg)
        _check_time(opts.time)
        for key in SBATCH_GROUP_OPTIONS:
            value = opts.get(key)
            if value is not None:
                _check_option(key, str(value))
        job_dir = os.path.abspath(os.path.expanduser(opts.job_dir)) if opts.job_dir else None
        workdir = job_dir or os.getcwd()
        needs_memory = any(role.resource.memMB > 0 for role in app.roles)
        nomem = self._nomem(opts.partition) if needs_memory else False

        cmd = ["sbatch", "--parsable"]
        for key in SBATCH_JOB_OPTIONS:
            value = opts.get(key)
            if value is not None:
                cmd.append(f"--{key}={value}")

        app_label = _safe_name(app.name) or "app"
        replicas: dict[str, SlurmReplicaRequest] = {}
        roles: dict[str, int] = {}
        for role in app.roles:
            if job_dir is None or os.path.isdir(job_dir):
                _check_role_files(role, workdir)
            roles[role.name] = role.num_replicas
            role_label = _safe_name(role.name) or "role"
            if "=" in role.entrypoint:
                raise ValueError(
                    f"entrypoint {role.entrypoint!r} of role {role.name!r} contains '=';"
                    " give the program's path without '=' (arguments go in Role.args)"
                )
            template = _RoleTemplate(role, _group_opts(opts, role.resource, nomem), workdir)
            img_root = role.image
            for i in range(role.num_replicas):
                name = f"{role_label}-{i}"
                values = {
                    "img_root": img_root,
                    "app_id": _APP_ID_MARK,
                    "replica_id": str(i),
                    "rank0_env": RANK0_ENV,
                }
                replicas[name] = template.for_replica(name, f"{app_label}:{name}", values)
        request = SlurmBatchRequest(
            cmd=cmd,
            replicas=replicas,
            job_dir=job_dir,
            max_retries=min(role.max_retries for role in app.roles),
            log_dir=workdir,
            app_name=app.name,
            roles=roles,
        )
        return AppDryRunInfo(request, repr)

    # -- submit -----------------------------------------------------------------------------

    def schedule(self, dryrun_info: AppDryRunInfo[SlurmBatchRequest]) -> str:
        """Submits the batch script; on any failure the job dir this scheduler made
        (workspace copy included) is removed and nothing is recorded."""
        import shutil

        req = dryrun_info.request
        created = self.created_job_dirs()
        job_dir = os.path.abspath(req.job_dir) if req.job_dir is not None else None
        ours = job_dir is not None and job_dir in created
        try:
            if shutil.which(req.cmd[0]) is None:
                raise SlurmNotFoundError(req.cmd[0])
            if job_dir is not None and not ours:
                try:
                    os.makedirs(job_dir)
                except FileExistsError:
                    raise FileExistsError(
                        f"job_dir {req.job_dir!r} already exists; pass a new directory (each"
                        " job gets its own)"
                    ) from None
                ours = True
            job_id = self._sbatch(req)
        except BaseException:
            if job_dir is not None and ours:
                shutil.rmtree(job_dir, ignore_errors=True)
            raise
        finally:
            if job_dir is not None:
                created.pop(job_dir, None)
        self._write_record(job_id, req)
        return job_id

    def _sbatch(self, req: SlurmBatchRequest) -> str:
        script = req.materialize().encode("utf-8", "surrogateescape")
        argv = list(req.cmd)
        if req.job_dir is not None:
            argv.append(f"--chdir={req.job_dir}")
            path = os.path.join(req.job_dir, SCRIPT_NAME)
            with open(path, "wb") as f:
                f.write(script)
            code, out, err = run([*argv, path])
        else:
            # sbatch reads the script from stdin when no file is given
            code, out, err = run(argv, stdin=script)
        if code != 0:
            raise SlurmCommandError(f"sbatch refused the job: {first_error_line(err)}")
        job_id = out.strip().split(";")[0]
        if not job_id.isdigit():
            raise SlurmCommandError(f"sbatch printed no job id: {out.strip()!r}")
        return job_id

    def _write_record(self, job_id: str, req: SlurmBatchRequest) -> None:
        import json

        from torchx.util.atomic import write_private

        doc = {
            "job_id": job_id,
            "session": self.session_name,
            "app_name": req.app_name,
            "log_dir": req.log_dir,
            "job_dir": req.job_dir,
            "roles": [[name, count] for name, count in req.roles.items()],
        }
        try:
            write_private(_record_path(job_id), json.dumps(doc).encode())
        except OSError as e:
            from torchx.util.log import get_logger

            get_logger(__name__).warning(
                "job %s is queued but its record could not be written (%s); `torchx log`"
                " works only from %s",
                job_id,
                e,
                req.log_dir,
            )

    # -- status -----------------------------------------------------------------------------

    def _query(self, job_id: str) -> list[SlurmJob]:
        """The job's components, from one ``squeue`` call in the usual case.

        ``squeue -t all -j`` in text form: Slurm 22.05 ignores ``-j`` with ``--json`` and
        prints every job in the cluster. If this Slurm rejects the format, ``--json`` and
        then ``scontrol`` are asked; a job the controller no longer holds (``Invalid job
        id``) is looked up in accounting.
        """
        code, out, err = run(["squeue", "-h", "-t", "all", "-j", job_id, "-O", SQUEUE_FORMAT])
        if code == 0:
            rows = parse_squeue_text(out, leader=job_id)
            return rows or self._sacct(job_id)
        if "invalid job id" not in err.lower():
            code, out, _ = run(["squeue", "--json", "-j", job_id])
            if code == 0 and out.lstrip().startswith("{"):
                rows = parse_squeue_json(out, leader=job_id)
                if rows:
                    return rows
            code, out, _ = run(["scontrol", "show", "job", "-o", job_id])
            if code == 0:
                rows = parse_scontrol_text(out, leader=job_id)
                if rows:
                    return rows
        return self._sacct(job_id)

    def _sacct(self, job_id: str) -> list[SlurmJob]:
        try:
            code, out, _ = run(
                [
                    "sacct",
                    "--parsable2",
                    "--allocations",
                    "--format=JobID,JobName%256,State,ExitCode,NodeList,Reason,WorkDir",
                    "-j",
                    job_id,
                ]
            )
        except SlurmNotFoundError:
            return []
        return parse_sacct_text(out, leader=job_id) if code == 0 else []

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        job_id = _valid_job_id(app_id)
        rows = self._query(job_id)
        if not rows:
            return None
        return _describe(job_id, rows, _read_record(job_id))

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """Jobs of the last ``list_days`` days (accounting) and every job in the queue.

        The queue (``squeue``) is fresher: accounting lags a few seconds behind, and some
        clusters have none. A bounded window keeps ``sacct`` cheap for the database.
        """
        import time

        days = Opts.from_cfg(cfg or {}).list_days
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - days * 86400))
        groups: dict[str, list[SlurmJob]] = {}
        try:
            code, out, _ = run(
                [
                    "sacct",
                    "--parsable2",
                    "--allocations",
                    "--format=JobID,JobName%256,State",
                    f"--starttime={since}",
                ]
            )
        except SlurmNotFoundError:
            code = 1
        if code == 0:
            groups = leaders(parse_sacct_text(out))
        code, out, err = run(["squeue", "--json"])
        if code == 0:
            groups.update(leaders(parse_squeue_json(out)))
        elif not groups:
            raise SlurmCommandError(f"squeue failed: {first_error_line(err)}")
        result = []
        for leader in sorted(groups, key=int):
            group = groups[leader]
            parsed = split_job_name(group[0].name)
            result.append(
                ListAppResponse(
                    app_id=leader,
                    state=_app_state(group),
                    name=(parsed[0] or parsed[1]) if parsed else group[0].name,
                )
            )
        return result

    # -- cancel / delete ----------------------------------------------------------------------

    def _cancel_existing(self, app_id: str) -> None:
        code, _, err = run(["scancel", _valid_job_id(app_id)])
        if code != 0:
            raise SlurmCommandError(f"scancel {app_id} failed: {first_error_line(err)}")

    def _delete_existing(self, app_id: str) -> None:
        """Cancels the job and forgets its record (Slurm keeps its accounting)."""
        self._cancel_existing(app_id)
        try:  # noqa: SIM105 (contextlib is not otherwise imported)
            os.unlink(_record_path(app_id))
        except OSError:
            pass

    # -- logs --------------------------------------------------------------------------------

    def log_iter(  # noqa: PLR0917 (positional order is the public API)
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        """Lines of replica ``k``: ``slurm-<id>-<role>-<k>.out`` and ``.err``.

        ``streams`` picks one file; by default both are read (each file's lines in order,
        the two interleaved as they are written). ``since``/``until`` are not supported
        (a warning says so). With ``should_tail`` the lines are followed until the job
        ends.
        """
        from torchx.schedulers.slurm_logs import follow_files

        job_id = _valid_job_id(app_id)
        if since or until:
            import warnings

            warnings.warn(
                "slurm does not support since/until for logs; they are ignored and all log"
                " lines are returned",
                stacklevel=2,
            )
        stream = "combined" if streams is None else str(getattr(streams, "value", streams))
        suffixes = {"stdout": ["out"], "stderr": ["err"], "combined": ["out", "err"]}.get(stream)
        if suffixes is None:
            raise ValueError(f"unknown log stream {stream!r}; use stdout, stderr or combined")
        log_dir = self._log_dir(job_id, role_name, k)
        base = os.path.join(log_dir, f"slurm-{job_id}-{_safe_name(role_name)}-{k}")
        lines = follow_files(
            _ThrottledWatcher(self), job_id, [f"{base}.{s}" for s in suffixes], should_tail
        )
        if regex:
            import re

            return filter(re.compile(regex).search, lines)
        return lines

    @staticmethod
    def _log_dir(job_id: str, role_name: str, k: int) -> str:
        """Where the job's logs are: its record, upstream's job-dirs file, or here."""
        record = _read_record(job_id)
        if record is None:
            return _upstream_job_dirs().get(job_id, ".")
        roles = {str(name): int(count) for name, count in record.get("roles", [])}
        if role_name not in roles:
            raise ValueError(
                f"job {job_id} has no role {role_name!r}; its roles are: {', '.join(roles)}"
            )
        if not 0 <= k < roles[role_name]:
            raise ValueError(
                f"role {role_name!r} of job {job_id} has replicas 0..{roles[role_name] - 1};"
                f" there is no replica {k}"
            )
        return str(record.get("log_dir") or ".")


class _RoleTemplate:
    """What all replicas of a role share; :meth:`for_replica` fills in the macros.

    Only arguments and env values holding a ``$`` are substituted per replica, so a
    10,000-replica role costs little more than 10,000 small objects.
    """

    __slots__ = ("args", "entrypoint", "env", "log_dir", "sbatch_opts", "templated")

    def __init__(self, role: Role, sbatch_opts: dict[str, str | None], log_dir: str) -> None:
        self.entrypoint = role.entrypoint
        self.args = list(role.args)
        self.env = dict(role.env)
        self.sbatch_opts = sbatch_opts
        self.log_dir = log_dir
        self.templated = any("$" in a for a in self.args) or any(
            "$" in v for v in self.env.values()
        )

    def for_replica(self, name: str, job_name: str, values: dict[str, str]) -> SlurmReplicaRequest:
        args = self.args
        env = self.env
        if self.templated:
            from string import Template

            args = [Template(a).safe_substitute(values) if "$" in a else a for a in args]
            env = {
                k: Template(v).safe_substitute(values) if "$" in v else v for k, v in env.items()
            }
        return SlurmReplicaRequest(
            name=job_name,
            entrypoint=self.entrypoint,
            args=args,
            srun_opts=_srun_opts(self.log_dir, name),
            sbatch_opts=dict(self.sbatch_opts),
            env=env,
        )


# ---------------------------------------------------------------------------------------
# describe
# ---------------------------------------------------------------------------------------

_STATE_ORDER = (
    AppState.FAILED,
    AppState.CANCELLED,
    AppState.RUNNING,
    AppState.PENDING,
    AppState.UNKNOWN,
    AppState.SUCCEEDED,
)


def _app_state(rows: list[SlurmJob]) -> AppState:
    """One state for the components of a job (they normally agree).

    Disagreeing components: any still pending or running decides (RUNNING over PENDING),
    else a failure, else a cancellation.
    """
    states = {appstate_from_slurm_state(r.state) for r in rows}
    if len(states) == 1:
        return states.pop()
    if AppState.RUNNING in states:
        return AppState.RUNNING
    if AppState.PENDING in states:
        return AppState.PENDING
    for state in _STATE_ORDER:
        if state in states:
            return state
    return AppState.UNKNOWN


def _message(state: AppState, rows: list[SlurmJob]) -> str:
    """Why the job is where it is: the pending reason, or how it ended."""
    leader = rows[0]
    reasons = [r.reason for r in rows if r.reason]
    if state == AppState.PENDING:
        return f"pending: {reasons[0]}" if reasons else "pending"
    if state == AppState.FAILED:
        codes = [r for r in rows if r.exit_code or r.signal]
        detail = leader.state.lower() if leader.state else "failed"
        if codes:
            first = codes[0]
            detail += (
                f", exit code {first.exit_code}" if first.exit_code else f", signal {first.signal}"
            )
        if reasons:
            detail += f" ({reasons[0]})"
        return detail
    if state == AppState.UNKNOWN and leader.state:
        return f"slurm state {leader.state}"
    return NONE


def _describe(
    job_id: str, rows: list[SlurmJob], record: dict[str, Any] | None
) -> DescribeAppResponse:
    from torchx.specs import ReplicaStatus, RoleStatus

    names: list[tuple[str, int]] = []
    if record is not None:
        for name, count in record.get("roles", []):
            names += [(str(name), i) for i in range(int(count))]
    state = _app_state(rows)
    role_replicas: dict[str, list[ReplicaStatus]] = {}
    role_info: dict[str, SlurmJob] = {}
    for row in rows:
        if row.het_offset < len(names):
            role, replica = names[row.het_offset]
        else:
            parsed = split_job_name(row.name)
            if parsed is None:
                role, replica = row.name or "job", row.het_offset
            else:
                role, replica = parsed[1], parsed[2]
        role_replicas.setdefault(role, []).append(
            ReplicaStatus(
                id=replica,
                state=appstate_from_slurm_state(row.state),
                role=role,
                hostname=row.hosts[0] if row.hosts else "",
            )
        )
        role_info.setdefault(role, row)
    roles_statuses: list[RoleStatus] = []
    roles: list[Role] = []
    for role, replicas in role_replicas.items():
        replicas.sort(key=lambda r: r.id)
        roles_statuses.append(RoleStatus(role, replicas))
        row = role_info[role]
        resource = Resource(cpu=row.cpus or -1, gpu=-1, memMB=row.mem_mb or -1)
        roles.append(
            Role(
                name=role,
                image=row.workdir,
                entrypoint=row.command,
                num_replicas=len(replicas),
                resource=resource,
            )
        )
    log_dir = record.get("log_dir") if record is not None else None
    return DescribeAppResponse(
        app_id=job_id,
        state=state,
        num_restarts=max(r.restarts for r in rows),
        msg=_message(state, rows),
        ui_url=f"file://{log_dir}" if log_dir else None,
        roles_statuses=roles_statuses,
        roles=roles,
    )


def create_scheduler(session_name: str, **kwargs: Any) -> SlurmScheduler:
    """Entry point of ``slurm``; other ``kwargs`` (``TORCHX_*`` env vars) are ignored."""
    del kwargs
    return SlurmScheduler(session_name=session_name)
