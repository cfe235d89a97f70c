"""``slurm``: runs apps as heterogeneous Slurm batch jobs, through Slurm's own commands.

Each replica of each role is one het component (one node) of a single ``sbatch`` job; the
batch script starts every component with one ``srun`` and, when it fails and retries are
left, puts the job back in the queue with ``scontrol requeue``. Jobs run in the submitting
environment (virtualenv, working directory) on a shared filesystem, or, with the
``container`` run option, inside the role's image (Slurm's ``oci.conf``, or pyxis).

* ``describe``/``status`` is one ``squeue -j`` call (text: 22.05's ``--json`` ignores
  ``-j`` and lists the whole cluster); ``squeue --json`` and ``scontrol show job`` if
  that fails, ``sacct`` once the job has left the controller's memory.
* Replica logs are ``slurm-<job id>-<role>-<replica>.{out,err}`` in the job's directory
  (``job_dir`` or the submit directory); where that was is recorded under
  ``$TORCHX_HOME/slurm/<job id>.record`` so ``torchx log`` works from any directory.
* Job names read ``<app>:<role>-<replica>`` in ``squeue``.

Handles look like ``slurm://<session>/<job id>``. This module is the entry point; its wing,
``torchx.schedulers._slurm``, holds the rest:

* ``request``: run options, het components, the batch script and a sweep's job arrays;
* ``status``: Slurm's rows to app status, waiting and timeline, attempts, a sweep's elements;
* ``failure``: Slurm's states and exit codes to root causes;
* ``logs``: the end of a job's log files (root cause, requeue reasons, progress);
* ``readiness``: ``torchx check``;
* ``commands``: running Slurm's programs, here or on the login node;
* ``parse``: their output, every version;
* ``validate``: what is checked before queueing;
* ``records``: what TorchX keeps of a job;
* ``keys``: idempotency keys in the job's comment;
* ``containers``: the ``container`` run option's srun options;
* ``oci``: bundles for ``container=oci``;
* ``workspaces``: the ``dir`` and ``docker`` workspaces of a job;
* ``ssh`` and ``remote``: the login node (``ssh`` run option);
* ``errors``: the base of the errors Slurm's commands raise.

A replica's two log files are followed as one stream by
``torchx.schedulers.shared.log_files.follow_files``.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from torchx.schedulers._slurm import commands, keys, oci, parse, readiness, records, remote, request
from torchx.schedulers._slurm import status as slurm_status
from torchx.schedulers._slurm.commands import SlurmCommandError, SlurmNotFoundError, version
from torchx.schedulers._slurm.failure import root_failure
from torchx.schedulers._slurm.logs import replica_log_tail
from torchx.schedulers._slurm.request import Opts, array_commands, build, safe_name, script_of
from torchx.schedulers._slurm.ssh import split_app_id
from torchx.schedulers._slurm.status import (
    SLURM_STATES,
    appstate_from_slurm_state,
    attempt_history,
    describe_array,
    get_appstate_from_job,
    is_array_name,
    last_interruption,
)
from torchx.schedulers._slurm.validate import check_job_dir
from torchx.schedulers._slurm.workspaces import (
    DOCKER,
    SCRIPT_NAME,
    SlurmDirWorkspace,
    docker_builder,
    docker_missing,
)
from torchx.schedulers._slurm.workspaces import via as _via
from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    LogQuery,
    Scheduler,
)
from torchx.schedulers.ids import ENV_REQUEST, ENV_REQUEST_HASH
from torchx.schedulers.shared import log_files
from torchx.specs.api import AppDef, AppDryRunInfo, AppState, CfgVal, runopts
from torchx.util.log import get_logger
from torchx.util.strings import escape_unprintable
from torchx.workspace.api import MultiWorkspaceMixin, WorkspaceMixin
from torchx.workspace.dir_workspace import job_dir_exists

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.request import (
        SBATCH_GROUP_OPTIONS,
        SBATCH_JOB_OPTIONS,
        Opts,
        SlurmBatchRequest,
        SlurmOpts,
        SlurmReplicaRequest,
    )
    from torchx.schedulers._slurm.ssh import SshTarget
    from torchx.schedulers.list_filter import ListFilter
    from torchx.util.readiness import ReadinessCheck

TORCHX_PLUGIN_API = 1
"""The torchx plugin contract this module was built against (torchx.util.plugin_api)."""

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


def __getattr__(name: str) -> object:
    # The batch request's names come from _slurm.request on first use: `torchx status`
    # does not build a request (bench_slurm measures it).
    if name.startswith("__"):  # importlib and inspect probe dunders: not request names
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    if name in request.__all__:
        return getattr(request, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


SLURM_JOB_DIRS = ".torchxslurmjobdirs"
"""Upstream's per-directory ``<job id> = <job_dir>`` file; read (never written) for old jobs."""

_STATUS_POLL_S = 1.0  # at most one squeue per second while following a log


# ---------------------------------------------------------------------------------------
# records under $TORCHX_HOME
# ---------------------------------------------------------------------------------------


def _job_order(job_id: str) -> tuple[int, str]:
    """Sort key of a job id: numeric order, also for array jobs (``123_[1-5]``, ``123_4``)."""
    head = job_id.partition("_")[0]
    return (int(head) if head.isdigit() else -1, job_id)


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


def _job_id_of(code: int, out: str, err: str) -> str:
    """The job id ``sbatch --parsable`` printed; its error in one line if it refused."""
    if code != 0:
        raise SlurmCommandError(f"sbatch refused the job: {commands.first_error_line(err)}")
    job_id = out.strip().split(";")[0]
    if not (job_id.isascii() and job_id.isdigit()):
        raise SlurmCommandError(f"sbatch printed no job id: {out.strip()!r}")
    return job_id


_Rows = list[ListAppResponse]
"""Rows of a listing (``list`` is a method name inside the scheduler class)."""


def _split_app_id(app_id: str) -> tuple[str, SshTarget | None]:
    """(job id, login node) of an app id: ``1234``, or ``1234@login1`` for a job submitted
    over ssh."""
    via = None
    job_id = app_id
    if "@" in app_id:
        job_id, via = split_app_id(app_id)
    if not all(part.isascii() and part.isdigit() for part in job_id.split(",")):
        raise ValueError(
            f"{app_id!r} is not a Slurm job id: slurm handles end in the number sbatch"
            " printed (slurm://torchx/1234, or slurm://torchx/1234@login1 over ssh; a sweep"
            " split over several arrays: slurm://torchx/1234,1240)"
        )
    return job_id, via


def _app_id(job_id: str, via: SshTarget | None) -> str:
    return job_id if via is None else f"{job_id}@{via.spec}"


_USERS: dict[SshTarget | None, str] = {}


def _user(via: SshTarget | None) -> str:
    """The account jobs are submitted as: this process' user, or the login node's account
    (asked once per process)."""
    if via not in _USERS:
        if via is None:
            _USERS[via] = pwd.getpwuid(os.getuid()).pw_name
        else:
            code, out, err = commands.run_once(["id", "-un"], via=via)
            if code != 0 or not out.strip():
                raise SlurmCommandError(
                    f"`id -un` on {via.host} failed: {commands.first_error_line(err)}"
                )
            _USERS[via] = out.strip()
    return _USERS[via]


def _each_array(
    req: SlurmBatchRequest, sbatch: Callable[[list[str]], str], via: SshTarget | None = None
) -> str:
    """Submits the request with ``sbatch(cmd)``: once, or a sweep's arrays one by one (a
    later one names the first); their job ids, ``FIRST,SECOND``. A sweep is submitted whole
    or not at all."""
    if req.array is None:
        return sbatch(req.cmd)

    job_ids: list[str] = []
    try:
        for c in range(len(req.array.chunks())):
            job_ids.append(sbatch(array_commands(req, job_ids)[c]))
    except BaseException:
        if job_ids:
            commands.run_once(["scancel", *job_ids], via=via)
        raise
    return ",".join(job_ids)


def _check_owner(app_id: str, job_id: str, via: SshTarget | None) -> None:
    """Refuses to act on another user's job (an operator's ``scancel`` would obey)."""
    code, out, _ = commands.run_once(["squeue", "-h", "-j", job_id, "-o", "%u"], via=via)
    owners = {line.strip() for line in out.splitlines() if line.strip()} if code == 0 else set()
    me = _user(via)
    if owners and me not in owners:
        raise ValueError(
            f"job {app_id} belongs to {escape_unprintable(', '.join(sorted(owners)))}, not"
            f" to {me}; torchx acts only on your own jobs (use scancel for others')"
        )


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
        now = time.monotonic()
        if self._last is None or now - self._last[0] >= self._interval:
            self._last = (now, self._scheduler.describe(app_id))
        return self._last[1]


def _kept_request(req: SlurmBatchRequest) -> dict[str, str]:
    """The request an app of an idempotency key was made from, as its env says it."""

    env = next(iter(req.replicas.values())).env if req.replicas else {}
    kept = {"request_hash": env.get(ENV_REQUEST_HASH, "")}
    kept["request"] = env.get(ENV_REQUEST, "") if kept["request_hash"] else ""
    return kept


class SlurmScheduler(MultiWorkspaceMixin, Scheduler["Opts"]):
    """Submits apps with ``sbatch`` and follows them with ``squeue``/``sacct``.

    The workspace (``job_dir`` run option) is copied into a new directory that the job
    runs from; without it the job runs in the submit directory. ``workspace_type=docker``
    builds it into an image instead (:mod:`torchx.schedulers._slurm.workspaces`).
    """

    log_time_bounds = False  # the .out/.err files keep no time per line
    supports_arrays = True  # a sweep is a job array (_slurm.status)

    def __init__(self, session_name: str) -> None:
        super().__init__("slurm", session_name)
        self._partition_memory: dict[SshTarget | None, dict[str, int]] = {}
        self._dir_workspace = SlurmDirWorkspace()
        self._builders: dict[str, WorkspaceMixin[Any]] | None = None

    def check_ready(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ReadinessCheck]:
        """Slurm's commands here, the controller, the partitions, the accounting and the
        container support (``-cfg container=`` makes the mode asked for a requirement)."""

        partition = (cfg or {}).get("partition")
        container = str((cfg or {}).get("container") or "none")
        return readiness.checks(str(partition) if partition else None, container, _via(cfg))

    def workspace_builders(self) -> Mapping[str, WorkspaceMixin[Any]]:
        """``dir`` (the default), and ``docker`` where torchx-workspace-docker is installed
        (made on first use: ``torchx status`` never needs it)."""
        if self._builders is None:
            builders: dict[str, WorkspaceMixin[Any]] = {"dir": self._dir_workspace}
            image = docker_builder()
            if image is not None:
                builders[DOCKER] = image
            self._builders = builders
        return self._builders

    def workspace_builder(self, cfg: Mapping[str, CfgVal]) -> tuple[str, WorkspaceMixin[Any]]:
        if cfg.get(self.WORKSPACE_TYPE_OPT) == DOCKER and DOCKER not in self.workspace_builders():
            raise docker_missing()
        return super().workspace_builder(cfg)

    def created_job_dirs(self) -> dict[str, object]:
        """Job dirs the ``dir`` builder made for this scheduler object (see
        :meth:`DirWorkspaceMixin.created_job_dirs`)."""
        return self._dir_workspace.created_job_dirs()

    def _run_opts(self) -> runopts:
        return Opts.as_runopts()

    # -- dry run ----------------------------------------------------------------------------

    def _pre_build_validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Refuses a malformed or existing ``job_dir`` before any workspace is copied."""
        job_dir = cfg.get("job_dir")
        if isinstance(job_dir, str):
            check_job_dir(job_dir)
        if isinstance(job_dir, str) and os.path.exists(job_dir) and _via(cfg) is None:
            raise job_dir_exists(job_dir)  # over ssh, the login node refuses it

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Roles need no resource: Slurm's defaults apply."""

    def _nomem(self, partition: str | None, via: SshTarget | None) -> bool:
        """Whether to leave ``--mem`` out: partitions reporting <= 1000 MB (ParallelCluster)."""
        if via not in self._partition_memory:
            self._partition_memory[via] = commands.partition_memory(via)
        mem = self._partition_memory[via].get(partition or "*")
        return mem is not None and mem <= 1000

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[SlurmBatchRequest]:
        try:
            return self._request(app, cfg)
        except BaseException:
            self._drop_staged()  # a refused submission leaves no copy of the workspace
            raise

    def _drop_staged(self) -> None:
        self._dir_workspace.drop_staged()

    def _request(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[SlurmBatchRequest]:
        return build(
            app,
            cfg,
            image_built=self.workspace_builder(cfg)[0] == DOCKER,
            push_images=lambda: self.dryrun_push_images(app, cfg),
            partition_has_no_mem=self._nomem,
        )

    # -- submit -----------------------------------------------------------------------------

    def schedule(self, dryrun_info: AppDryRunInfo[SlurmBatchRequest]) -> str:
        """Submits the batch script; on any failure the job dir this scheduler made
        (workspace copy included) is removed and nothing is recorded."""

        req = dryrun_info.request
        if req.images_to_push is not None:
            self.push_images(req.images_to_push)  # before anything is made: nothing to undo
        if req.via is not None:
            return self._schedule_remote(req)
        created = self.created_job_dirs()
        job_dir = os.path.abspath(req.job_dir) if req.job_dir is not None else None
        ours = job_dir is not None and job_dir in created
        try:
            if shutil.which(req.cmd[0]) is None:
                raise SlurmNotFoundError(req.cmd[0])
            if job_dir is not None and not ours:
                os.makedirs(os.path.dirname(job_dir), exist_ok=True)
                try:
                    os.mkdir(job_dir, 0o700)
                except FileExistsError:
                    raise job_dir_exists(job_dir) from None
                ours = True
            if req.bundles:
                oci.make_bundles(req.bundles, req.container_cache or oci.default_cache())
            job_id = self._sbatch(req)
        except BaseException:
            if job_dir is not None and ours:
                shutil.rmtree(job_dir, ignore_errors=True)
            for path in {os.path.dirname(bundle.path) for bundle in req.bundles}:
                shutil.rmtree(path, ignore_errors=True)
            raise
        finally:
            if job_dir is not None:
                created.pop(job_dir, None)
        self._write_record(job_id, req)
        return job_id

    def _sbatch(self, req: SlurmBatchRequest) -> str:
        return _each_array(req, lambda cmd: self._sbatch_one(req, cmd))

    def _sbatch_one(self, req: SlurmBatchRequest, cmd: list[str]) -> str:
        script = script_of(req).encode("utf-8", "surrogateescape")
        argv = list(cmd)
        # the script and the logs (written by Slurm with the umask sbatch passes on) are
        # private, as TORCHX_HOME is; a team exports SLURM_UMASK (e.g. 0027) to share them
        env = os.environ if "SLURM_UMASK" in os.environ else {**os.environ, "SLURM_UMASK": "0077"}
        if req.job_dir is not None:
            argv.append(f"--chdir={req.job_dir}")
            path = os.path.join(req.job_dir, SCRIPT_NAME)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with open(fd, "wb") as f:
                f.write(script)
            code, out, err = commands.run_through_outages(
                [*argv, path], "Slurm (sbatch)", env=env, resend=False
            )
        else:
            # sbatch reads the script from stdin when no file is given
            code, out, err = commands.run_through_outages(
                argv, "Slurm (sbatch)", stdin=script, env=env, resend=False
            )
        return _job_id_of(code, out, err)

    def _schedule_remote(self, req: SlurmBatchRequest) -> str:
        """Submits through the login node: the job dir is made there (refused if it exists),
        the workspace copied into it with the batch script, then ``sbatch``. On any failure
        the job dir made there is removed; the local copy of the workspace always is."""

        via = req.via
        assert via is not None
        staged = (
            self._dir_workspace.staged.pop(req.job_dir, None) if req.job_dir is not None else None
        )
        token = secrets.token_hex(16)

        script = script_of(req).encode("utf-8", "surrogateescape")
        env = {"SLURM_UMASK": os.environ.get("SLURM_UMASK", "0077")}
        made = None
        try:
            stdin: bytes | None = None
            if req.job_dir is not None:
                made = remote.make_job_dir(via, req.job_dir, token)
                remote.send_files(via, made, staged, {SCRIPT_NAME: script})
                after = [f"--chdir={made}", f"{made}/{SCRIPT_NAME}"]
                log_dir = made
            else:
                log_dir = remote.home(via)  # sbatch runs there: the job and its logs do too
                after, stdin = [], script

            def sbatch(cmd: list[str]) -> str:
                return _job_id_of(
                    *commands.run_through_outages(
                        [*cmd, *after], "Slurm (sbatch)", stdin=stdin, env=env, resend=False,
                        via=via,
                    )
                )  # fmt: skip

            job_id = _each_array(req, sbatch, via)
        except BaseException:
            if made is not None:
                remote.remove_dir(via, made, token)
            raise
        finally:
            if staged is not None:  # the private temp dir holding the copy
                shutil.rmtree(os.path.dirname(staged), ignore_errors=True)
        app_id = _app_id(job_id, via)
        self._write_record(app_id, req, log_dir=log_dir, job_dir=made)
        return app_id

    def _write_record(
        self,
        job_id: str,
        req: SlurmBatchRequest,
        log_dir: str | None = None,
        job_dir: str | None = None,
    ) -> None:
        record = records.JobRecord(
            job_id,
            session=self.session_name,
            app_name=req.app_name,
            log_dir=req.log_dir if log_dir is None else log_dir,
            job_dir=req.job_dir if job_dir is None and req.via is None else job_dir,
            roles=list(req.roles.items()),
            array=req.array.to_record() if req.array is not None else "",
            **_kept_request(req),
        )
        try:
            records.write_record(record)
        except OSError as e:
            get_logger(__name__).warning(
                "job %s is queued but its record could not be written (%s); `torchx log`"
                " works only from %s",
                job_id,
                e,
                req.log_dir,
            )

    # -- status -----------------------------------------------------------------------------

    def _query(self, job_id: str, via: SshTarget | None = None) -> list[parse.SlurmJob]:
        """The job's components, from one ``squeue`` call in the usual case.

        ``squeue -t all -j`` in text form: Slurm 22.05 ignores ``-j`` with ``--json`` and
        prints every job in the cluster. If this Slurm rejects the format, ``--json`` and
        then ``scontrol`` are asked; a job the controller no longer holds (``Invalid job
        id``) is looked up in accounting.
        """
        code, out, err = commands.run_through_outages(
            ["squeue", "-h", "-t", "all", "-j", job_id, "-O", parse.SQUEUE_FORMAT], via=via
        )
        if code == 0:
            rows = parse.parse_squeue_text(out, leader=job_id)
            return rows or self._sacct(job_id, via)
        if "invalid job id" not in err.lower():
            code, out, _ = commands.run_once(["squeue", "--json", "-j", job_id], via=via)
            if code == 0 and out.lstrip().startswith("{"):
                rows = parse.parse_squeue_json(out, leader=job_id)
                if rows:
                    return rows
            code, out, _ = commands.run_once(["scontrol", "show", "job", "-o", job_id], via=via)
            if code == 0:
                rows = parse.parse_scontrol_text(out, leader=job_id)
                if rows:
                    return rows
        return self._sacct(job_id, via)

    def _sacct(self, job_id: str, via: SshTarget | None = None) -> list[parse.SlurmJob]:
        try:
            # not in the queue: the accounting knows, and is waited for if it cannot be asked
            code, out, _ = commands.run_through_outages(
                [
                    "sacct",
                    "--parsable2",
                    "--allocations",
                    "--format=JobID,JobName%256,State,ExitCode,NodeList,Reason,WorkDir,Submit,Eligible,Start,End",
                    "-j",
                    job_id,
                ],
                "Slurm's accounting (slurmdbd)",
                via=via,
            )
        except SlurmNotFoundError:
            return []
        return parse.parse_sacct_text(out, leader=job_id) if code == 0 else []

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        job_id, via = _split_app_id(app_id)
        record = records.read_record(app_id)
        if "," in job_id or (record is not None and record.array):
            return self._describe_array(app_id, job_id, record, via)
        rows = self._query(job_id, via)
        maybe_sweep = rows and any("-array-" in row.name for row in rows)  # a sweep's name?
        if maybe_sweep and any(is_array_name(row.name) for row in rows):
            return self._describe_array(app_id, job_id, record, via)
        if not rows:
            return None
        interruption = None
        if any(row.restarts for row in rows) and slurm_status.app_state(rows) == AppState.PENDING:
            # requeued: one more query, only while it waits to start again

            restarts = max(row.restarts for row in rows)
            log_dir = record.log_dir if record else None
            interruption = last_interruption(job_id, log_dir, via, restarts)
        response = slurm_status.describe_rows(job_id, rows, record, interruption)
        response.app_id = app_id
        if any(row.restarts for row in rows):  # requeued: one more query, for its attempts
            response.attempts = attempt_history(job_id, record.log_dir if record else None, via)
        if response.state == AppState.FAILED:  # why: one more sacct, the failed logs' tails
            response.failure = root_failure(job_id, rows, record, via)
        if via is not None and record is not None and record.log_dir:
            response.ui_url = f"sftp://{via.spec}{record.log_dir}"  # on the cluster, not here
        if response.roles_statuses:
            role = response.roles_statuses[0].role
            log_dir = (record.log_dir if record is not None else "") or rows[0].workdir

            def progress_tail() -> str:  # one read (a tail over ssh), when status asks

                return replica_log_tail(job_id, log_dir, role, 0, via)

            response.progress_tail = progress_tail
        return response

    @staticmethod
    def _describe_array(
        app_id: str, job_id: str, record: records.JobRecord | None, via: SshTarget | None
    ) -> DescribeAppResponse | None:
        """A sweep: its arrays' tasks are its elements (:mod:`torchx.schedulers._slurm.status`)."""

        response = describe_array(app_id, job_id.split(","), record, via)
        if response is not None and via is not None and record is not None and record.log_dir:
            response.ui_url = f"sftp://{via.spec}{record.log_dir}"
        return response

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """Jobs of the last ``list_days`` days (accounting) and every job in the queue.

        The queue (``squeue``) is fresher: accounting lags a few seconds behind, and some
        clusters have none. A bounded window keeps ``sacct`` cheap for the database.
        """

        days = Opts.from_cfg(cfg or {}).list_days
        return self._list(time.time() - days * 86400, _via(cfg))

    def find_by_idempotency_key(
        self, key: str, cfg: Mapping[str, CfgVal] | None = None
    ) -> str | None:
        """The job whose comment carries the key (see ``_slurm.keys``): in the queue, or in
        accounting for the last ``list_days`` days."""

        via = _via(cfg)
        since = time.time() - Opts.from_cfg(cfg or {}).list_days * 86400
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))
        job_id = keys.find_job(key, start, _user(via), via)
        return _app_id(job_id, via) if job_id else None

    def list_filtered(self, cfg: Mapping[str, CfgVal] | None, list_filter: ListFilter) -> _Rows:
        """``--since`` becomes the accounting window (instead of ``list_days``)."""

        since = list_filter.since
        if since is None:
            since = time.time() - Opts.from_cfg(cfg or {}).list_days * 86400
        return list_filter.apply(self._list(since, _via(cfg)))

    def _list(self, since: float, via: SshTarget | None = None) -> _Rows:
        """``sacct`` (accounting since ``since``) and ``squeue`` (the queue) in their text
        forms, run side by side, with only the fields a listing needs."""

        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))
        accounting: list[tuple[int, str, str]] = []

        def query_accounting() -> None:
            try:
                accounting.append(
                    commands.run_once(
                        [
                            "sacct",
                            "--parsable2",
                            "--allocations",
                            "--format=JobID,JobName%256,State,Submit",
                            f"--starttime={start}",
                            f"--user={_user(via)}",
                        ],
                        via=via,
                    )
                )
            except SlurmNotFoundError:
                accounting.append((1, "", ""))

        beside = threading.Thread(target=query_accounting, daemon=True)
        beside.start()
        try:
            code, out, err = commands.run_through_outages(
                ["squeue", "-h", "--me", "-t", "all", "-O", parse.SQUEUE_LIST_FORMAT], via=via
            )
        finally:
            beside.join()
        groups: dict[str, list[parse.SlurmJob]] = {}
        acct_code, acct_out, _ = accounting[0] if accounting else (1, "", "")
        if acct_code == 0:
            groups = parse.leaders(parse.parse_sacct_text(acct_out))
        if code == 0:
            groups.update(parse.leaders(parse.parse_squeue_list(out, since)))
        elif not groups:
            raise SlurmCommandError(f"squeue failed: {commands.first_error_line(err)}")
        result = []
        for leader in sorted(groups, key=_job_order):
            group = groups[leader]
            parsed = parse.split_job_name(group[0].name)
            state = slurm_status.app_state(group)
            reason = next((r.reason for r in group if r.reason), "")
            waiting = slurm_status.reason_words(reason) if state == AppState.PENDING else ""
            result.append(
                ListAppResponse(
                    app_id=_app_id(leader, via),
                    state=state,
                    name=(parsed[0] or parsed[1]) if parsed else group[0].name,
                    waiting=waiting or ("queued" if state == AppState.PENDING else ""),
                    submitted=min((r.submit for r in group if r.submit), default=None),
                )
            )
        return result

    # -- cancel / delete ----------------------------------------------------------------------

    def _cancel_existing(self, app_id: str) -> None:
        job_id, via = _split_app_id(app_id)
        _check_owner(app_id, job_id, via)
        code, _, err = commands.run_through_outages(["scancel", *job_id.split(",")], via=via)
        if code != 0:
            raise SlurmCommandError(f"scancel {app_id} failed: {commands.first_error_line(err)}")

    def _delete_existing(self, app_id: str) -> None:
        """Cancels the job. Slurm has no deletion: it keeps the job's accounting and log
        files, so TorchX keeps its record too and status, list and log stay consistent."""
        self._cancel_existing(app_id)

    # -- logs --------------------------------------------------------------------------------

    def _log_lines(self, query: LogQuery) -> Iterable[str]:
        """Lines of replica ``k``: ``slurm-<id>-<role>-<k>.out`` and ``.err``.

        The stream picks one file; ``combined`` reads both (each file's lines in order, the
        two interleaved as they are written), followed until the job ends. Times are not
        kept per line (``log_time_bounds`` is off).
        """
        job_id, via = _split_app_id(query.app_id)
        first_id = job_id.split(",")[0]  # a sweep's logs are named by its first array
        suffixes = {"stdout": ["out"], "stderr": ["err"], "combined": ["out", "err"]}[query.stream]
        log_dir = self._log_dir(query.app_id, query.role_name, query.k)
        # the log path's helpers: not on `torchx status`'s path (bench_slurm)

        role = safe_name(query.role_name)
        if via is not None:  # the logs are on the cluster
            if log_dir == ".":  # submitted elsewhere: the job's directory, from Slurm
                rows = self._query(job_id, via)
                log_dir = rows[0].workdir if rows and rows[0].workdir else "."
            base = os.path.join(log_dir, f"slurm-{first_id}-{role}-{query.k}")
            return remote.follow_logs(
                via, _ThrottledWatcher(self), query.app_id,
                [f"{base}.{s}" for s in suffixes], query.follow,
            )  # fmt: skip
        base = os.path.join(log_dir, f"slurm-{first_id}-{role}-{query.k}")
        return log_files.follow_files(
            _ThrottledWatcher(self), query.app_id, [f"{base}.{s}" for s in suffixes], query.follow
        )

    @staticmethod
    def _log_dir(app_id: str, role_name: str, k: int) -> str:
        """Where the job's logs are: its record, upstream's job-dirs file, or here."""
        record = records.read_record(app_id)
        if record is None:
            return "." if "@" in app_id else _upstream_job_dirs().get(app_id, ".")
        roles = dict(record.roles)
        if role_name not in roles:
            raise ValueError(
                f"job {app_id} has no role {role_name!r}; its roles are: {', '.join(roles)}"
            )
        if not 0 <= k < roles[role_name]:
            raise ValueError(
                f"role {role_name!r} of job {app_id} has replicas 0..{roles[role_name] - 1};"
                f" there is no replica {k}"
            )
        return record.log_dir or "."


def create_scheduler(session_name: str, **kwargs: Any) -> SlurmScheduler:
    """Entry point of ``slurm``; other ``kwargs`` (``TORCHX_*`` env vars) are ignored."""
    del kwargs
    return SlurmScheduler(session_name=session_name)
