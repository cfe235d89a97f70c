"""``local_cwd``: runs each replica of an app as a process on this host, durably.

Apps outlive the process that launched them. ``schedule()`` writes the app's request and
state under ``$TORCHX_HOME/local_cwd/<app_id>/`` and hands the app to a per-app supervisor
process (see :mod:`torchx.schedulers._local.supervisor`, started by
:mod:`torchx.schedulers._local.launcher`) that starts, logs, reaps and
retries the replicas. Every other operation (``describe``, ``log_iter``, ``cancel``,
``delete``, ``list``, ``wait_for_change``) reads or signals that state, so it works from
any process: ``torchx status`` in another terminal, a notebook restarted mid-run, ...

Handles look like ``local_cwd://<session>/<app_id>``; the backend name passed to
``Role.pre_proc`` is ``"local"`` (as upstream). Logs are written to
``<log_dir>/<session>/<app_id>/<role>/<replica_id>/{stdout,stderr,combined}.log`` when the
``log_dir`` run option is set, else to ``<state dir>/<role>/<replica_id>/``.

This module is the entry point; its wing, ``torchx.schedulers._local``, holds the rest:

* ``request``: run options and every replica ready to be started;
* ``status``: the supervisor's files to attempts, timeline and a sweep's elements;
* ``failure``: exit statuses, log tails and torchelastic's error files to root causes;
* ``logs``: the app's log files (the progress tail too);
* ``readiness``: ``torchx check``;
* ``records``: the files an app keeps under ``$TORCHX_HOME/local_cwd`` and the process
  helpers both sides use;
* ``launcher`` and ``supervisor``: how an app's supervisor is started, and what it does
  (local_cwd calls no SDK and no command: it starts the processes itself);
* ``gpus``: the host's GPUs split among replicas;
* ``popen``: what the scheduler needs of a started process.
"""

from __future__ import annotations

import abc
import fcntl
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping

from torchx.schedulers._local import records as st
from torchx.schedulers._local.failure import (
    ENV_TORCHELASTIC_ERROR_FILE,
    read_error_file,
    root_failure,
)
from torchx.schedulers._local.logs import create_log_files, progress_tail
from torchx.schedulers._local.request import (
    LocalOpts,
    Opts,
    PopenRequest,
    ReplicaParam,
    format_request,
)
from torchx.schedulers._local.status import array_status, attempts_of, timeline_of
from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    LogQuery,
    Scheduler,
)
from torchx.schedulers.ids import make_unique
from torchx.schedulers.shared import log_files as _log_files
from torchx.schedulers.shared.log_files import LogIterator
from torchx.specs.api import (
    NONE,
    AppDef,
    AppDryRunInfo,
    AppState,
    BindMount,
    CfgVal,
    Resource,
    RetryPolicy,
    Role,
    macros,
    runopts,
)
from torchx.specs.replica_macros import ReplicaMacros
from torchx.specs.sweep import AppArray
from torchx.util.log import get_logger
from torchx.util.startup.lazy_dataclass import shallow_copy
from torchx.util.strings import check_file_name
from torchx.util.support.host_checks import host_problem
from torchx.util.support.programs import find_program, script_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Any

    from torchx.schedulers._local.launcher import Handover
    from torchx.schedulers._local.popen import PopenProtocol
    from torchx.schedulers._local.supervisor import run_local_job
    from torchx.util.readiness import ReadinessCheck

TORCHX_PLUGIN_API = 1
"""The torchx plugin contract this module was built against (torchx.util.plugin_api)."""

__all__ = [
    "COMBINED_LOG",
    "ENV_CUDA_VISIBLE_DEVICES",
    "STDERR_LOG",
    "STDOUT_LOG",
    "AppId",
    "AppName",
    "CWDImageProvider",
    "ImageProvider",
    "LocalDirectoryImageProvider",
    "LocalOpts",
    "LocalScheduler",
    "LogIterator",
    "Opts",
    "PopenProtocol",
    "PopenRequest",
    "ReplicaParam",
    "RoleName",
    "SignalException",
    "create_scheduler",
    "run_local_job",
]

log = get_logger(__name__)

SCHEDULER_NAME = "local_cwd"
STDOUT_LOG = st.STDOUT_LOG
"""File name of a replica's stdout under its log directory."""
STDERR_LOG = st.STDERR_LOG
"""File name of a replica's stderr under its log directory."""
COMBINED_LOG = st.COMBINED_LOG
"""File name of a replica's stdout and stderr interleaved."""
ENV_CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
"""Set per replica when GPUs are split among replicas (auto_set_cuda_visible_devices)."""
AppId = str
AppName = str
RoleName = str


def __getattr__(name: str) -> object:
    # PopenProtocol is a typing.Protocol, made only for code that asks for it;
    # run_local_job is the supervisor's own (its module is not on the dry-run path).
    if name == "PopenProtocol":
        from torchx.schedulers._local.popen import PopenProtocol

        return PopenProtocol
    if name == "run_local_job":
        from torchx.schedulers._local.supervisor import run_local_job

        return run_local_job
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


RANK0_ENV = "TORCHX_RANK0_HOST"
ENV_PET_LOG_DIR = "PET_LOG_DIR"

_DELETE_WAIT_S = 30.0
_POLL_S = 0.01
_STALE_TMP_DIR_S = 3600.0
_MAX_DONE_FDS = 64
"""Ready pipes kept open by one scheduler; waits on older apps use the pidfd instead."""


class SignalException(Exception):
    """Compat: a termination signal turned into an exception (``sigval`` is the signal).

    The durable scheduler installs no signal handlers (apps outlive the launcher), but code
    that caught this exception keeps importing it from here.
    """

    def __init__(self, msg: str, sigval: signal.Signals) -> None:
        super().__init__(msg)
        self.sigval = sigval


# ---------------------------------------------------------------------------------------------
# image providers


class ImageProvider(abc.ABC):
    """Maps a role's image to a directory on this host (the ``img_root`` macro).

    ``fetch`` is called once per role; ``get_replica_param`` once per replica (override it
    only if replicas need more than the default argv/env/cwd).
    """

    def fetch_role(self, role: Role) -> str:
        """Like ``fetch(role.image)`` but may also adjust the role. Default: ``fetch``."""
        return self.fetch(role.image)

    @abc.abstractmethod
    def fetch(self, image: str) -> str:
        """Makes ``image`` available locally; returns its root directory (or "")."""

    def get_replica_param(
        self,
        img_root: str,
        role: Role,
        stdout: str | None = None,
        stderr: str | None = None,
        combined: str | None = None,
    ) -> ReplicaParam:
        """The start parameters of one replica of ``role`` (macros already applied)."""
        return ReplicaParam(
            [self.get_entrypoint(img_root, role), *role.args],
            role.env,
            stdout,
            stderr,
            combined,
            self.get_cwd(role.image),
        )

    def get_cwd(self, image: str) -> str | None:
        """Working directory of the replicas (None: the supervisor's)."""
        return None

    def get_entrypoint(self, img_root: str, role: Role) -> str:
        """Program to run: by default ``role.entrypoint`` inside ``img_root``."""
        return os.path.join(img_root, role.entrypoint)


class CWDImageProvider(ImageProvider):
    """Ignores the image: replicas run in the launcher's working directory."""

    def __init__(self, cfg: Mapping[str, CfgVal] | None = None) -> None:
        del cfg

    def fetch(self, image: str) -> str:
        return os.getcwd()

    def get_cwd(self, image: str) -> str | None:
        return os.getcwd()

    def get_entrypoint(self, img_root: str, role: Role) -> str:
        return role.entrypoint


class LocalDirectoryImageProvider(ImageProvider):
    """The image is an existing local directory; replicas run inside it."""

    def __init__(self, cfg: Mapping[str, CfgVal] | None = None) -> None:
        del cfg

    @staticmethod
    def _missing(image: str) -> ValueError | None:
        if os.path.isdir(image):
            return None
        return ValueError(
            f"invalid image {image!r}: with LocalDirectoryImageProvider the image must"
            " be an existing local directory"
        )

    def fetch(self, image: str) -> str:
        """``image``, an existing directory; a missing one is a ``ValueError`` (upstream's)."""
        problem = self._missing(image)
        if problem is not None:
            raise problem
        return image

    def fetch_role(self, role: Role) -> str:
        """As :meth:`fetch`, except that a dry run only warns: its plan may be meant for a
        host that has the directory."""
        host_problem(self._missing(role.image))
        return role.image

    def get_cwd(self, image: str) -> str | None:
        return image

    def get_entrypoint(self, img_root: str, role: Role) -> str:
        return role.entrypoint


# ---------------------------------------------------------------------------------------------
# helpers


def _join_path(*parts: str | None) -> str:
    """PATH pieces joined with ``os.pathsep``; empty pieces and stray separators dropped."""
    return os.pathsep.join(p.strip(os.pathsep) for p in parts if p and p.strip(os.pathsep))


def _host_path() -> str:
    """This process's PATH, led by the bin directory of its venv when it runs in one.

    ``.venv/bin/torchx`` run without activating the venv must still give its jobs the
    venv's ``python``, ``torchrun`` and ``torchx``, not whatever PATH finds first.
    """
    path = os.environ.get("PATH", "")
    if sys.prefix == sys.base_prefix or not sys.executable:
        return path
    venv_bin = os.path.dirname(sys.executable)
    rest = [p for p in path.split(os.pathsep) if p and os.path.normpath(p) != venv_bin]
    return _join_path(venv_bin, *rest)


_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_PLAIN_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-+/")
# builtins and keywords of POSIX sh and bash: not programs looked up on PATH
# fmt: off
_SHELL_WORDS = frozenset({
    ".", ":", "[", "[[", "alias", "bg", "break", "builtin", "case", "cd", "command", "continue",
    "declare", "do", "done", "echo", "elif", "else", "enable", "esac", "eval", "exec", "exit",
    "export", "false", "fc", "fg", "fi", "for", "function", "getopts", "hash", "if", "jobs",
    "kill", "let", "local", "popd", "printf", "pushd", "pwd", "read", "readonly", "return",
    "select", "set", "shift", "shopt", "source", "test", "then", "time", "times", "trap",
    "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "until", "wait", "while",
})
# fmt: on
# programs whose absence has a known remedy
_INSTALL_HINTS = {"torchrun": "install torch into this environment (`pip install torch`)"}


def _shell_command_program(argv: list[str]) -> str | None:
    """The program that ``sh -c "PROGRAM ..."`` starts (``dist.ddp``'s torchrun), if plain.

    ``exec PROGRAM`` (``utils.sh``) and ``PROGRAM() {...}; PROGRAM`` (``dist.ddp``'s
    torchrun, defined to wrap the program of its name) name PROGRAM too. None when the
    command starts with anything else the shell itself interprets (a builtin, a keyword,
    an assignment, quoting or expansion): only a plain program name is checked.
    """
    if len(argv) < 3 or os.path.basename(argv[0]) not in _SHELLS or argv[1] != "-c":
        return None
    words = argv[2].split(None, 2)
    if words and words[0] == "exec":
        words = words[1:]
    word = words[0] if words else ""
    if word.endswith("()"):
        word = word[:-2]
    if not word or not set(word) <= _PLAIN_WORD or word.startswith("-"):
        return None
    return None if word in _SHELL_WORDS else word


def _check_log_dir(given: str, path: str) -> None:
    """Fails unless ``path`` is, or can be created as, a directory."""
    existing = path
    while not os.path.lexists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        what = "is not a directory" if existing == path else f"is under {existing}, a file"
        raise ValueError(
            f"log_dir {given!r} {what}; set log_dir to a directory (it is created if missing)"
        )


def _check_roles(app: AppDef) -> None:
    """Warns about what local_cwd ignores; a missing bind-mount source is a host problem.

    Negative resource values mean "unset", as everywhere in TorchX (``memMB=-1``).
    """

    check_file_name("app name", app.name)
    for role in app.roles:
        check_file_name(f"role name (app {app.name!r})", role.name)
        host_problem(_mount_problem(role))
        if role.mounts:
            log.warning(
                "local_cwd ignores the mounts of role %s: its processes see this host's"
                " files at their own paths",
                role.name,
            )


def _mount_problem(role: Role) -> ValueError | None:
    """The error for a bind mount whose source is missing on this host, if any."""

    for mount in role.mounts:
        if isinstance(mount, BindMount) and not os.path.exists(mount.src_path):
            return ValueError(
                f"bind mount source {mount.src_path!r} of role {role.name!r} does not"
                " exist; create it or fix the mount's source path"
            )
    return None


def _program_problem(
    role_name: str, argv: list[str], env: Mapping[str, str], cwd: str | None
) -> ValueError | None:
    """Why the replica's program (or the one its ``sh -c`` command starts) cannot start."""
    path = env.get("PATH", os.environ.get("PATH", ""))
    where = cwd or os.getcwd()
    program = argv[0]
    if find_program(program, path, where) is None:
        return ValueError(
            f"entrypoint {program!r} of role {role_name!r} was not found: it is neither an"
            f" executable on the replica's PATH nor a path relative to its working directory"
            f" {where}; fix Role.entrypoint, install the program or give its absolute path"
        )
    started = _shell_command_program(argv)
    if started is not None and find_program(started, path, where) is None:
        hint = _INSTALL_HINTS.get(started, "install it or put its directory on PATH")
        return ValueError(
            f"{started} not found: role {role_name!r} runs `{argv[0]} -c '{started} ...'` but"
            f" {started!r} is not on the replica's PATH; {hint}"
        )
    script = script_of(program, argv[1:])
    if script and "$" not in script and not os.path.isfile(os.path.join(where, script)):
        return ValueError(
            f"script {script!r} of role {role_name!r} does not exist (looked in {where}); fix"
            " the path (--script is relative to the directory torchx runs in)"
        )
    return None


def _jsonable(value: Any) -> Any:
    """``value`` if it survives a JSON round trip, else its ``str`` (for free-form metadata)."""

    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


def _role_spec(role: Role) -> dict[str, Any]:
    res = role.resource
    return {
        "name": role.name,
        "image": role.image,
        "min_replicas": role.min_replicas,
        "entrypoint": role.entrypoint,
        "args": list(role.args),
        "env": dict(role.env),
        "num_replicas": role.num_replicas,
        "max_retries": role.max_retries,
        "retry_policy": RetryPolicy(role.retry_policy).value,
        "resource": {
            "cpu": res.cpu,
            "gpu": res.gpu,
            "memMB": res.memMB,
            "capabilities": _jsonable(dict(res.capabilities)),
            "devices": dict(res.devices),
        },
        "port_map": dict(role.port_map),
        "metadata": _jsonable(dict(role.metadata)),
    }


def _role_from_spec(spec: Mapping[str, Any]) -> Role:
    res = spec["resource"]
    capabilities = res.get("capabilities")
    metadata = spec.get("metadata")
    return Role(
        name=spec["name"],
        image=spec["image"],
        min_replicas=spec.get("min_replicas"),
        entrypoint=spec["entrypoint"],
        args=list(spec["args"]),
        env=dict(spec["env"]),
        num_replicas=spec["num_replicas"],
        max_retries=spec["max_retries"],
        retry_policy=RetryPolicy(spec["retry_policy"]),
        resource=Resource(
            cpu=res["cpu"],
            gpu=res["gpu"],
            memMB=res["memMB"],
            capabilities=capabilities if isinstance(capabilities, dict) else {},
            devices=dict(res.get("devices") or {}),
        ),
        port_map=dict(spec.get("port_map") or {}),
        metadata=metadata if isinstance(metadata, dict) else {},
    )


# ---------------------------------------------------------------------------------------------
# the scheduler


class LocalScheduler(Scheduler[Opts]):
    """Runs apps as local processes that survive the launching process.

    ``cache_size`` bounds how many finished apps are kept in ``$TORCHX_HOME/local_cwd``: when
    a new app is scheduled and more than that many exist, the oldest finished ones are
    deleted (with their logs when the logs live in the state directory).
    ``extra_paths`` are put in front of every replica's PATH.
    """

    has_event_source = True  # wait_for_change: the supervisor's ready pipe or pidfd
    supports_arrays = True  # a sweep's elements are its role's replicas, K at a time
    log_time_bounds = False  # log files keep no time per line

    def __init__(
        self,
        session_name: str,
        image_provider_class: Callable[[Mapping[str, CfgVal]], ImageProvider] = CWDImageProvider,
        cache_size: int = 100,
        extra_paths: list[str] | None = None,
    ) -> None:
        super().__init__("local", session_name)
        if cache_size <= 0:
            raise ValueError(
                f"cache_size must be a positive number of finished apps to keep, got {cache_size}"
            )
        self._image_provider_class = image_provider_class
        self._cache_size = cache_size
        self._extra_paths = list(extra_paths or [])
        self._requests: dict[str, dict[str, Any]] = {}  # request.json never changes
        # app id -> read end of the ready pipe of a supervisor this scheduler forked: it
        # reaches end-of-file once the app's final state is written (see wait_for_change)
        self._done_fds: dict[str, int] = {}
        # apps handed over by schedule() whose supervisor may not own them yet (_settle)
        self._handovers: dict[str, tuple[Handover, str | None]] = {}
        self._settling = threading.Lock()  # log threads look at apps too

    # -- options ---------------------------------------------------------------------------

    def check_ready(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ReadinessCheck]:
        """Where app state goes, and the interpreter and torchrun jobs would get."""
        from torchx.schedulers._local import readiness  # only `torchx check` needs shutil & co.

        return readiness.checks()

    def _run_opts(self) -> runopts:
        return Opts.as_runopts()

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Roles need no resource on this host (a process is a process)."""

    # -- dry run ---------------------------------------------------------------------------

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[PopenRequest]:
        return AppDryRunInfo(self._to_popen_request(app, cfg), format_request)

    def _app_log_dir(self, app_id: str, opts: Opts) -> str:
        if opts.log_dir:
            base = os.path.abspath(os.path.expanduser(opts.log_dir))
            _check_log_dir(opts.log_dir, base)
            return os.path.join(base, self.session_name, app_id)
        return os.path.abspath(st.app_state_dir(app_id))

    def _to_popen_request(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> PopenRequest:
        _check_roles(app)
        opts = Opts.from_cfg(cfg)
        app_id = make_unique(app.name)
        app_log_dir = self._app_log_dir(app_id, opts)
        provider = self._image_provider_class(cfg)
        plain_provider = type(provider).get_replica_param is ImageProvider.get_replica_param
        cuda_plan = self._cuda_plan(app, opts)
        host_path = _host_path()

        role_params: dict[str, list[ReplicaParam]] = {}
        role_log_dirs: dict[str, list[str]] = {}
        for role_idx, role in enumerate(app.roles):
            img_root = provider.fetch_role(role)
            cwd = provider.get_cwd(role.image)
            path = _join_path(*self._extra_paths, role.env.get("PATH"), host_path)
            if cwd:
                path = _join_path(cwd, path) if opts.prepend_cwd else _join_path(path, cwd)
            values = macros.Values(
                img_root=img_root, app_id=app_id, replica_id="0", rank0_env=RANK0_ENV
            )
            mapping = values.to_dict()
            set_error_file = ENV_TORCHELASTIC_ERROR_FILE not in role.env
            role_dir = os.path.join(app_log_dir, role.name)
            role_cuda = cuda_plan[role_idx] if cuda_plan is not None else None
            entrypoint = provider.get_entrypoint(img_root, role)
            params: list[ReplicaParam] = []
            log_dirs: list[str] = []
            for replica_id, replica_role in _replica_roles(app, role):
                if replica_id == 0 or replica_role is not role:  # a sweep's element: its own
                    role_env = {**replica_role.env, "PATH": path}
                    subst = ReplicaMacros(replica_role.args, role_env)
                    shared = None if subst.per_replica else subst.apply(mapping)
                    role_env[RANK0_ENV] = "localhost"
                    if ENV_PET_LOG_DIR not in role.env:
                        role_env[ENV_PET_LOG_DIR] = os.path.join(
                            app_log_dir, "torchelastic", role.name
                        )
                rid = str(replica_id)
                replica_dir = f"{role_dir}{os.sep}{rid}"
                stdout = f"{replica_dir}{os.sep}{st.STDOUT_LOG}"
                stderr = f"{replica_dir}{os.sep}{st.STDERR_LOG}"
                combined = f"{replica_dir}{os.sep}{st.COMBINED_LOG}"
                if plain_provider:
                    if shared is None:
                        mapping["replica_id"] = rid
                        role_args, role_env_values = subst.apply(mapping)
                    else:
                        role_args, role_env_values = shared
                    param = ReplicaParam(
                        [entrypoint, *role_args],
                        {**role_env, **role_env_values},
                        stdout,
                        stderr,
                        combined,
                        cwd,
                    )
                else:
                    substituted = macros.Values(
                        img_root=img_root, app_id=app_id, replica_id=rid, rank0_env=RANK0_ENV
                    ).apply(
                        _with_env(
                            replica_role,
                            {k: role_env[k] for k in replica_role.env} | {"PATH": path},
                        )
                    )
                    substituted.env = {**role_env, **substituted.env}
                    param = provider.get_replica_param(
                        img_root, substituted, stdout, stderr, combined
                    )
                if set_error_file:
                    param.env[ENV_TORCHELASTIC_ERROR_FILE] = f"{replica_dir}{os.sep}{st.ERROR_FILE}"
                if role_cuda is not None and role_cuda[replica_id] is not None:
                    param.env[ENV_CUDA_VISIBLE_DEVICES] = str(role_cuda[replica_id])
                params.append(param)
                log_dirs.append(replica_dir)
            if params:
                first = params[0]
                host_problem(_program_problem(role.name, first.args, first.env, first.cwd))
            role_params[role.name] = params
            role_log_dirs[role.name] = log_dirs
        return PopenRequest(app_id, app_log_dir, role_params, role_log_dirs)

    def _cuda_plan(self, app: AppDef, opts: Opts) -> list[list[str | None]] | None:
        counts = [len(rr) for rr in (_replica_roles(app, r) for r in app.roles)]
        gpu_replicas = sum(n for n, r in zip(counts, app.roles, strict=True) if r.resource.gpu > 0)
        requested = sum(
            n * r.resource.gpu for n, r in zip(counts, app.roles, strict=True) if r.resource.gpu > 0
        )
        if requested <= 0:
            return None
        from torchx.schedulers._local import gpus as local_gpus  # only apps asking for GPUs pay

        if not opts.auto_set_cuda_visible_devices:
            if gpu_replicas > 1:
                log.warning(local_gpus.UNSET_WARNING)
            return None
        count = local_gpus.cuda_device_count()
        plan = local_gpus.allocate_cuda_devices(
            [(n, r.resource.gpu) for n, r in zip(counts, app.roles, strict=True)], count
        )
        if plan is None:
            log.warning(local_gpus.not_enough_warning(count, requested))
        return plan

    # -- schedule --------------------------------------------------------------------------

    def schedule(self, dryrun_info: AppDryRunInfo[PopenRequest]) -> str:
        from torchx.schedulers._local import (
            launcher as local_launcher,
        )  # not on the dry-run path

        request = dryrun_info.request
        app = dryrun_info._app
        app_id = request.app_id
        state_dir = os.path.abspath(st.app_state_dir(app_id))
        root = os.path.dirname(state_dir)
        try:
            st.ensure_private_dir(root)
        except OSError as e:
            raise ValueError(
                f"cannot create the local_cwd state directory {root}: {e.strerror};"
                " point TORCHX_HOME at a writable directory"
            ) from e
        if os.path.lexists(state_dir):
            raise ValueError(
                f"app id {app_id!r} is already used in {root}; dry-run the app again to get"
                " a new id"
            )
        self._evict_finished(root)
        self._settle_all(raise_failure=False)
        self._close_done_fds(only_ended=True)

        method = local_launcher.start_method()  # a bad setting fails before anything exists
        # app ids are unique, so a pid-suffixed name cannot collide (no tempfile import,
        # which with shutil costs ~3 ms of every `torchx run`)
        tmp_dir: str | None = os.path.join(root, f".{app_id}.{os.getpid()}.tmp")
        assert tmp_dir is not None
        os.mkdir(tmp_dir, st.DIR_MODE)
        created_log_dir: str | None = None
        lock_fd = -1
        handover: local_launcher.Handover | None = None
        try:
            lock_fd = st.open_lock(tmp_dir)
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            # a forked supervisor starts here and gets ready while the app is checked,
            # described and written below
            handover = local_launcher.Handover(method, state_dir, tmp_dir, lock_fd=lock_fd)
            self._check_programs(request)
            for role in app.roles if app is not None else ():
                problem = _mount_problem(role)
                if problem is not None:
                    raise problem
            doc = self._request_document(request, app)
            # only a log dir this call creates is removed again on failure
            if not _is_within(request.log_dir, state_dir) and not os.path.lexists(request.log_dir):
                created_log_dir = request.log_dir
            state = st.new_state([len(r["replicas"]) for r in doc["roles"]])
            # a forked supervisor opens a log file only to write to it, so the (empty) files
            # can be created after "go", while it starts the replicas
            later = handover.method == "fork"
            log_files = self._create_logs(doc, state_dir, tmp_dir, dryrun_info._cfg, later)
            # nobody sees tmp_dir before the rename: no need for atomic writes yet
            st.write_json_atomic(os.path.join(tmp_dir, st.REQUEST_FILE), doc, atomic=False)
            st.write_json_atomic(os.path.join(tmp_dir, st.STATE_FILE), state, atomic=False)
            os.rename(tmp_dir, state_dir)  # the app appears complete, already locked
            tmp_dir = None
            handover.go(doc, state)
            create_log_files(log_files)
        except BaseException:
            import shutil

            shutil.rmtree(tmp_dir or state_dir, ignore_errors=True)
            if created_log_dir:
                shutil.rmtree(created_log_dir, ignore_errors=True)
            if handover is not None:  # after the removal: a waiting supervisor finds no app
                handover.abort()
            raise
        finally:
            if lock_fd >= 0:
                os.close(lock_fd)
        self._requests[app_id] = doc
        # The supervisor starts the replicas while the caller goes on (a command sets up
        # its log streaming meanwhile); the first look at the app waits until it owns it,
        # and so does this process's exit (then any process sees the app RUNNING).
        self._handovers[app_id] = (handover, created_log_dir)
        _settle_at_exit(self)
        return app_id

    def _settle(self, app_id: str) -> None:
        """Waits until the supervisor of an app ``schedule`` just handed over owns it and
        has started its replicas (so the app is RUNNING, or failed to start: then it is
        removed and the supervisor's error raised, as ``schedule`` would have)."""
        if app_id not in self._handovers:
            return
        with self._settling:  # another thread looking at the app waits for the same end
            pending = self._handovers.get(app_id)
            if pending is None:
                return  # settled while this thread waited for the lock
            handover, created_log_dir = pending
            if handover.launcher_pid != os.getpid():  # a forked copy of the launcher
                del self._handovers[app_id]
                return
            try:
                done_fd = handover.wait()
            except BaseException:
                import shutil

                shutil.rmtree(handover.state_dir, ignore_errors=True)
                if created_log_dir:
                    shutil.rmtree(created_log_dir, ignore_errors=True)
                raise
            else:
                if done_fd >= 0:
                    self._done_fds[app_id] = done_fd
            finally:  # only now: until here, other threads wait for the lock
                del self._handovers[app_id]
                if not self._handovers:
                    _unsettled.discard(self)

    def _settle_all(self, *, raise_failure: bool) -> None:
        """Settles the apps handed over that nobody has looked at (a launcher of many apps:
        their supervisors are long ready, and each holds a descriptor until then). One that
        failed to start is gone; its failure is raised (``close``) or logged (the next
        ``schedule``, the launcher's exit)."""
        for app_id in list(self._handovers):
            try:
                self._settle(app_id)
            except Exception as e:
                if raise_failure:
                    raise
                log.warning("local_cwd app %s did not start: %s", app_id, e)

    def _check_programs(self, request: PopenRequest) -> None:
        """Checks the entrypoints before launching (the dry run only warned, and the request
        may have been edited since)."""
        seen: set[tuple[str, str | None, str | None]] = set()
        for role_name, params in request.role_params.items():
            for p in params:
                key = (" ".join(p.args[:3]), p.env.get("PATH"), p.cwd)
                if key not in seen:
                    seen.add(key)
                    if not p.args:
                        raise ValueError(f"role {role_name!r} has a replica with an empty argv")
                    problem = _program_problem(role_name, p.args, p.env, p.cwd)
                    if problem is not None:
                        raise problem

    def _request_document(self, request: PopenRequest, app: AppDef | None) -> dict[str, Any]:
        roles_by_name = {r.name: r for r in app.roles} if app is not None else {}
        roles: list[dict[str, Any]] = []
        for role_name, params in request.role_params.items():
            role = roles_by_name.get(role_name)
            log_dirs = request.role_log_dirs.get(role_name, [])
            replicas = []
            for i, p in enumerate(params):
                replica_dir = (
                    log_dirs[i]
                    if i < len(log_dirs)
                    else os.path.join(request.log_dir, role_name, str(i))
                )
                replicas.append(
                    {
                        "args": list(p.args),
                        "env": dict(p.env),
                        "cwd": p.cwd,
                        "log_dir": replica_dir,
                        "stdout": p.stdout or os.path.join(replica_dir, st.STDOUT_LOG),
                        "stderr": p.stderr or os.path.join(replica_dir, st.STDERR_LOG),
                        "combined": p.combined or os.path.join(replica_dir, st.COMBINED_LOG),
                    }
                )
            roles.append(
                {
                    "name": role_name,
                    "max_retries": role.max_retries if role is not None else 0,
                    "retry_policy": (
                        RetryPolicy(role.retry_policy).value
                        if role is not None
                        else RetryPolicy.APPLICATION.value
                    ),
                    "spec": _role_spec(role) if role is not None else None,
                    "replicas": replicas,
                }
            )
        doc: dict[str, Any] = {
            "version": 1,
            "scheduler": SCHEDULER_NAME,
            "app_id": request.app_id,
            "app_name": app.name if app is not None else request.app_id,
            "session": self.session_name,
            "log_dir": request.log_dir,
            "metadata": {str(k): str(v) for k, v in (app.metadata if app else {}).items()},
            "created": time.time(),
            "roles": roles,
        }

        if isinstance(app, AppArray):
            doc["array"] = {
                "max_parallel": app.max_parallel,
                "size": app.size,
                "indices": app.indices(),
                "values": app.values(),
            }
        return doc

    def _create_logs(
        self,
        doc: dict[str, Any],
        state_dir: str,
        tmp_dir: str,
        cfg: Mapping[str, CfgVal],
        files_later: bool = False,
    ) -> list[str]:
        """Creates every replica's log dir and (empty) log files before anything runs.

        Paths inside the state dir are created in the not-yet-renamed temporary dir. An
        unusable ``log_dir`` becomes a ValueError that names it. With ``files_later`` the
        files are not created but returned (final paths), for :func:`create_log_files`.
        """
        later: list[str] = []

        def local(path: str) -> str:
            if _is_within(path, state_dir):
                return tmp_dir + path[len(state_dir) :]
            return path

        made: set[str] = set()

        def ensure_dir(path: str) -> None:
            # one mkdir per directory in the common case (parent made already), no stats
            if path in made:
                return
            try:
                os.mkdir(path, st.DIR_MODE)
            except FileExistsError:
                if not os.path.isdir(path):
                    raise
            except FileNotFoundError:
                st.ensure_private_dir(path)
            made.add(path)

        try:
            st.ensure_private_dir(local(doc["log_dir"]))
            for role in doc["roles"]:
                for replica in role["replicas"]:
                    replica_dir = local(replica["log_dir"])
                    ensure_dir(replica_dir)
                    for key in ("stdout", "stderr", "combined"):
                        path = local(replica[key])
                        if os.path.dirname(path) != replica_dir:
                            ensure_dir(os.path.dirname(path))
                        if files_later:
                            later.append(replica[key])
                        else:
                            st.create_private_file(path)
        except OSError as e:
            log_dir = cfg.get("log_dir") if cfg else None
            if log_dir:
                raise ValueError(
                    f"cannot write the logs of app {doc['app_id']} under log_dir {log_dir!r}:"
                    f" {e.strerror} ({e.filename}); set log_dir to a writable directory"
                ) from e
            raise ValueError(
                f"cannot write the logs of app {doc['app_id']}: {e.strerror} ({e.filename});"
                " set the log_dir run option or TORCHX_HOME to a writable directory"
            ) from e
        return later

    def _evict_finished(self, root: str) -> None:
        """Keeps at most ``cache_size`` apps: deletes the oldest finished ones beyond that."""
        try:
            names = os.listdir(root)
        except OSError:
            return
        now = time.time()
        apps = []
        for name in names:
            path = os.path.join(root, name)
            if name.startswith("."):
                # a temporary dir left by a launcher that died inside schedule()
                try:
                    stale = now - os.stat(path).st_mtime > _STALE_TMP_DIR_S
                except OSError:
                    stale = False
                if stale:
                    import shutil

                    shutil.rmtree(path, ignore_errors=True)
                continue
            apps.append(name)
        # evict in batches (down to cache_size - 1) so that scheduling does not read every
        # app's state each time once the cache is full
        if len(apps) < self._cache_size + max(10, self._cache_size // 10):
            return
        excess = len(apps) + 1 - self._cache_size
        finished: list[tuple[float, str]] = []
        for name in apps:
            state = st.read_json(os.path.join(root, name, st.STATE_FILE))
            if isinstance(state, dict) and state.get("state") in st.TERMINAL_STATES:
                finished.append((float(state.get("ended") or state.get("updated") or 0), name))
        import shutil

        for _, name in sorted(finished)[:excess]:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            self._requests.pop(name, None)

    # -- reading state ---------------------------------------------------------------------

    def describe_native(self, app_id: str) -> AppDryRunInfo[PopenRequest] | None:
        """The request the app was started from, read back from its record under
        ``TORCHX_HOME`` (every replica's command, env, working dir and log files), in the
        form :meth:`submit_dryrun` gives; None for an app that is not (any more) there."""
        found = self._load(app_id)
        if found is None:
            return None
        _, doc, _ = found
        role_params: dict[str, list[ReplicaParam]] = {}
        role_log_dirs: dict[str, list[str]] = {}
        for role in doc.get("roles", []):
            replicas = role.get("replicas", [])
            role_params[role["name"]] = [
                ReplicaParam(
                    args=list(r["args"]),
                    env=dict(r["env"]),
                    stdout=r.get("stdout"),
                    stderr=r.get("stderr"),
                    combined=r.get("combined"),
                    cwd=r.get("cwd"),
                )
                for r in replicas
            ]
            role_log_dirs[role["name"]] = [str(r["log_dir"]) for r in replicas]
        request = PopenRequest(app_id, str(doc["log_dir"]), role_params, role_log_dirs)
        return AppDryRunInfo(request, format_request)

    def _load(self, app_id: str) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
        """(state dir, request, current state) of a known app, recovering orphaned apps."""
        self._settle(app_id)
        try:
            state_dir = st.app_state_dir(app_id)
        except ValueError:
            return None
        request = self._requests.get(app_id)
        if request is None:
            request = st.read_json(os.path.join(state_dir, st.REQUEST_FILE))
            if not isinstance(request, dict):
                return None
            self._requests[app_id] = request
        state = st.read_json(os.path.join(state_dir, st.STATE_FILE))
        if not isinstance(state, dict):
            self._requests.pop(app_id, None)
            return None
        if state["state"] not in st.TERMINAL_STATES and not st.is_owned(state_dir):
            cancelled = os.path.exists(os.path.join(state_dir, st.CANCEL_FILE))
            recovered = st.recover_orphaned(state_dir, cancelled=cancelled)
            if recovered is None:
                recovered = st.read_json(os.path.join(state_dir, st.STATE_FILE))
            if isinstance(recovered, dict):
                state = recovered
        return state_dir, request, state

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        # a status read: not on `torchx run --dryrun`'s path (bench_cli)
        from torchx.specs.status import ReplicaStatus, RoleStatus

        loaded = self._load(app_id)
        if loaded is None:
            return None
        _, request, state = loaded
        if app_id in self._done_fds and state["state"] in st.TERMINAL_STATES:
            self._close_done_fd(app_id)  # nothing left to wait for
        roles_statuses: list[RoleStatus] = []
        roles: list[Role] = []
        earliest: tuple[float, str] | None = None
        for role_doc, replicas in zip(request["roles"], state["roles"], strict=True):
            statuses = []
            for i, (params, rec) in enumerate(zip(role_doc["replicas"], replicas, strict=True)):
                error_file = params["env"].get(ENV_TORCHELASTIC_ERROR_FILE)
                error_msg = NONE
                if error_file:
                    try:
                        mtime = os.stat(error_file).st_mtime
                    except OSError:
                        mtime = None
                    if mtime is not None:
                        text = read_error_file(error_file)
                        if text is not None:
                            error_msg = text
                            if earliest is None or mtime < earliest[0]:
                                earliest = (mtime, text)
                statuses.append(
                    ReplicaStatus(
                        id=i,
                        state=AppState[rec["state"]],
                        role=role_doc["name"],
                        hostname="localhost",
                        structured_error_msg=error_msg,
                    )
                )
            roles_statuses.append(RoleStatus(role_doc["name"], statuses))
            spec = role_doc.get("spec")
            if spec is not None:
                roles.append(_role_from_spec(spec))
            else:
                roles.append(
                    Role(name=role_doc["name"], image="", num_replicas=len(role_doc["replicas"]))
                )
        app_state = AppState[state["state"]]
        return DescribeAppResponse(
            app_id=app_id,
            state=app_state,
            num_restarts=int(state.get("num_restarts", 0)),
            msg=state.get("msg") or NONE,
            structured_error_msg=earliest[1] if earliest else NONE,
            ui_url=f"file://{request['log_dir']}",
            metadata=dict(request.get("metadata") or {}),
            roles_statuses=roles_statuses,
            roles=roles,
            failure=root_failure(request, state) if app_state == AppState.FAILED else None,
            timeline=timeline_of(request, state, app_state),
            attempts=attempts_of(state),
            progress_tail=progress_tail(request),
            array=array_status(request, roles_statuses),
        )

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """Every app in ``$TORCHX_HOME/local_cwd`` (any session, any launcher), oldest first."""
        try:
            names = [n for n in os.listdir(st.apps_root()) if not n.startswith(".")]
        except OSError:
            return []
        rows: list[tuple[float, ListAppResponse]] = []
        for name in names:
            loaded = self._load(name)
            if loaded is None:
                continue
            _, request, state = loaded
            handle = f"{SCHEDULER_NAME}://{request.get('session', self.session_name)}/{name}"
            rows.append(
                (
                    float(request.get("created") or 0),
                    ListAppResponse(
                        app_id=name,
                        state=AppState[state["state"]],
                        app_handle=handle,
                        name=str(request.get("app_name", "")),
                        submitted=float(request.get("created") or 0) or None,
                    ),
                )
            )
        rows.sort(key=lambda row: row[0])
        return [row for _, row in rows]

    # -- waiting ---------------------------------------------------------------------------

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        """Returns when the app's supervisor is done or after ``timeout`` seconds.

        For an app this scheduler forked the supervisor of, "done" is the end-of-file of
        its ready pipe, which the supervisor closes right after writing the final state
        (no need to wait for its exit); for any other app it is the supervisor's exit
        (pidfd), or, without pidfd support, a change of the state file (polled every 10 ms).
        Either way a caller polling ``describe`` sees a terminal state right after.
        """
        self._settle(app_id)
        done_fd = self._done_fds.get(app_id)
        if done_fd is not None:
            import select

            poller = select.poll()
            poller.register(done_fd, select.POLLIN)
            if poller.poll(max(0.0, timeout) * 1000.0):
                self._close_done_fd(app_id)
            return
        deadline = time.monotonic() + max(0.0, timeout)
        try:
            state_dir = st.app_state_dir(app_id)
        except ValueError:
            return
        state = st.read_json(os.path.join(state_dir, st.STATE_FILE))
        if not isinstance(state, dict) or state.get("state") in st.TERMINAL_STATES:
            return
        sup = state.get("supervisor") or {}
        pid, ticks = sup.get("pid"), sup.get("start_ticks")
        if pid and st.same_process(pid, ticks) and self._wait_pidfd(pid, ticks, timeout):
            return
        if pid and not st.same_process(pid, ticks):
            return  # supervisor gone: the next describe records what happened
        self._poll_for_change(state_dir, deadline)

    def _close_done_fd(self, app_id: str) -> None:
        fd = self._done_fds.pop(app_id, None)
        if fd is not None:
            os.close(fd)

    def _close_done_fds(self, only_ended: bool = False) -> None:
        """Closes the ready pipes of ended apps (``only_ended``; also the oldest beyond
        ``_MAX_DONE_FDS``) or of all apps, and reaps the supervisors that have exited."""
        if self._done_fds:
            ended: set[int] = set()
            if only_ended:
                import select

                poller = select.poll()
                for fd in self._done_fds.values():
                    poller.register(fd, select.POLLIN)
                ended = {fd for fd, _ in poller.poll(0)}
            excess = len(self._done_fds) - _MAX_DONE_FDS
            for app_id, fd in list(self._done_fds.items()):
                if not only_ended or fd in ended or excess > 0:
                    excess -= 1
                    self._close_done_fd(app_id)
        launcher = sys.modules.get("torchx.schedulers._local.launcher")
        if launcher is not None:  # only a process that launched has launchers to reap
            launcher.reap_exited()

    @staticmethod
    def _wait_pidfd(pid: int, ticks: int | None, timeout: float) -> bool:
        """Waits on a pidfd of the supervisor; False if pidfds are not available here."""
        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is None:
            return False
        try:
            fd = pidfd_open(pid)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        try:
            if not st.same_process(pid, ticks):  # the pid was reused before we opened it
                return True
            import select

            poller = select.poll()
            poller.register(fd, select.POLLIN)
            poller.poll(max(0.0, timeout) * 1000.0)
        finally:
            os.close(fd)
        return True

    @staticmethod
    def _poll_for_change(state_dir: str, deadline: float) -> None:
        path = os.path.join(state_dir, st.STATE_FILE)

        def stamp() -> int:
            try:
                return os.stat(path).st_mtime_ns
            except OSError:
                return -1

        before = stamp()
        while time.monotonic() < deadline:
            time.sleep(min(_POLL_S, max(0.0, deadline - time.monotonic())))
            if stamp() != before or not st.is_owned(state_dir):
                return

    # -- cancel / delete -------------------------------------------------------------------

    def cancel(self, app_id: str) -> None:
        """Like the base class, minus its ``describe``: describing an app whose supervisor
        died records FAILED, while a cancel must record CANCELLED."""
        try:
            state_dir = st.app_state_dir(app_id)
        except ValueError:
            return
        if os.path.isfile(os.path.join(state_dir, st.STATE_FILE)):
            self._cancel_existing(app_id)

    def _cancel_existing(self, app_id: str) -> None:
        """Asks the supervisor to stop the app (no retries); returns without waiting.

        If the supervisor is gone, stops the replicas' process groups directly and records
        CANCELLED.
        """
        state_dir = st.app_state_dir(app_id)
        state = st.read_json(os.path.join(state_dir, st.STATE_FILE))
        if not isinstance(state, dict) or state.get("state") in st.TERMINAL_STATES:
            return
        # the file first, then the pid: a supervisor that starts in between sees the file
        try:  # noqa: SIM105 (contextlib costs every command its import)
            st.create_private_file(os.path.join(state_dir, st.CANCEL_FILE))
        except FileNotFoundError:
            pass
        state = st.read_json(os.path.join(state_dir, st.STATE_FILE))
        if not isinstance(state, dict) or state.get("state") in st.TERMINAL_STATES:
            return
        if st.is_owned(state_dir):
            sup = state.get("supervisor") or {}
            if st.same_process(sup.get("pid"), sup.get("start_ticks")):
                st.signal_pid(int(sup["pid"]), signal.SIGTERM)
            return
        st.recover_orphaned(state_dir, cancelled=True)

    def _delete_existing(self, app_id: str) -> None:
        """Cancels the app if needed, waits for its supervisor to finish, removes its state.

        Logs written under a user ``log_dir`` are kept; logs inside the state dir go with it.
        """
        import shutil

        state_dir = st.app_state_dir(app_id)
        self._cancel_existing(app_id)
        deadline = time.monotonic() + _DELETE_WAIT_S
        while st.is_owned(state_dir) and time.monotonic() < deadline:
            self.wait_for_change(app_id, min(0.5, max(0.0, deadline - time.monotonic())))
        shutil.rmtree(state_dir, ignore_errors=True)
        self._requests.pop(app_id, None)

    # -- logs ------------------------------------------------------------------------------

    def _log_lines(self, query: LogQuery) -> Iterable[str]:
        """Replica ``k``'s log file of the stream asked for; followed until the app is
        terminal. Times are not kept per line (``log_time_bounds`` is off)."""
        app_id, role_name, k = query.app_id, query.role_name, query.k
        loaded = self._load(app_id)
        if loaded is None:
            raise ValueError(
                f"unknown local_cwd app {app_id!r}: no state in {st.apps_root()}"
                " (was it deleted, or started with another TORCHX_HOME?)"
            )
        _, request, state = loaded
        roles = {r["name"]: r for r in request["roles"]}
        role = roles.get(role_name)
        if role is None:
            raise ValueError(
                f"app {app_id} has no role {role_name!r}; its roles are: {', '.join(roles)}"
            )
        replicas = role["replicas"]
        if not 0 <= k < len(replicas):
            raise ValueError(
                f"role {role_name!r} of app {app_id} has replicas 0..{len(replicas) - 1};"
                f" there is no replica {k}"
            )
        stream = query.stream
        path = replicas[k][stream]
        if query.follow:
            return _log_files.LogLines(
                lambda: _log_files.follow_lines(self, app_id, path),
                lambda: _log_files.follow_chunks(self, app_id, path),
            )
        if not os.path.isfile(path):
            if state["state"] not in st.TERMINAL_STATES:
                return iter(())  # just scheduled: its launcher is still creating the files
            raise RuntimeError(
                f"the {stream} log of {role_name}[{k}] of app {app_id} is missing: {path}"
            )
        return _log_files.LogLines(
            lambda: _log_files.read_lines(path), lambda: _log_files.read_chunks(path)
        )

    def close(self) -> None:
        """Releases this scheduler's descriptors; apps are durable and keep running."""
        try:
            self._settle_all(raise_failure=True)  # a failed start is reported here at last
        finally:
            self._close_done_fds()


_unsettled: set[LocalScheduler] = set()
"""Schedulers with apps whose supervisors may not own them yet (settled at exit)."""


def _settle_at_exit(scheduler: LocalScheduler) -> None:
    if not _unsettled:
        import atexit

        atexit.unregister(_settle_unsettled)  # registered once
        atexit.register(_settle_unsettled)
    _unsettled.add(scheduler)


def _settle_unsettled() -> None:
    for scheduler in list(_unsettled):
        scheduler._settle_all(raise_failure=False)


def _with_env(role: Role, env: dict[str, str]) -> Role:
    clone = shallow_copy(role)
    clone.env = env
    return clone


def _replica_roles(app: AppDef, role: Role) -> list[tuple[int, Role]]:
    """Each replica of ``role`` with the role it runs: the role itself, or for a sweep
    (:class:`~torchx.specs.sweep.AppArray`) each element's, one replica per element."""

    if isinstance(app, AppArray):
        return [(p, app.element_role(p)) for p in range(len(app.elements))]
    return [(i, role) for i in range(role.num_replicas)]


def _is_within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def create_scheduler(
    session_name: str,
    cache_size: int = 100,
    extra_paths: list[str] | None = None,
    image_provider_class: Callable[[Mapping[str, CfgVal]], ImageProvider] = CWDImageProvider,
    **kwargs: Any,
) -> LocalScheduler:
    """Entry point of ``local_cwd``; unknown ``kwargs`` (every ``TORCHX_*`` env var the
    runner forwards) are ignored."""
    del kwargs
    return LocalScheduler(
        session_name=session_name,
        image_provider_class=image_provider_class,
        cache_size=cache_size,
        extra_paths=extra_paths,
    )
