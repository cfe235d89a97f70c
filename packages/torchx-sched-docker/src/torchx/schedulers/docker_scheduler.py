"""``local_docker``: runs each replica of an app as a container on a Docker host.

Every replica is one container on the ``torchx`` bridge network, named (and with the
hostname) ``<app_id>-<role>-<replica>``, so replicas reach rank 0 through
``$TORCHX_RANK0_HOST``. Containers carry the app id, role and replica as labels: the Docker
daemon itself holds the app's state, so ``status``, ``log``, ``cancel`` and ``delete`` work
from any process, and an app outlives the ``torchx run`` that started it.

* ``cancel`` stops the containers and keeps them for inspection; the app then reads as
  CANCELLED (a labelled marker volume records the cancellation inside the daemon).
* ``delete`` removes the containers (and the marker).
* Retries use Docker's ``on-failure`` restart policy (``Role.max_retries``).
* Images are pulled only when they are not on the host (``docker run`` does the same);
  an image that is neither local nor pullable fails the submission before any container
  is created. If any container cannot be created or started, the ones already created
  are removed: no half-started app is left behind.
* Containers run with Docker's init process, so ``cancel`` stops them promptly even when
  the program does not handle SIGTERM as PID 1.

The ``docker`` SDK is imported only when the daemon is contacted: ``--dryrun`` does not.

This module is the entry point; its wing, ``torchx.schedulers._docker``, holds the rest:

* ``request``: run options, the containers of an app and of a sweep's elements;
* ``status``: the daemon's container list to replica states, roles, a sweep's elements,
  waiting and timeline;
* ``failure``: exit codes, OOM kills and outside stops to root causes;
* ``logs``: a container's log stream (the progress tail too);
* ``readiness``: ``torchx check``;
* ``client``: a small Engine API client for the calls made on every command;
* ``retry``: the daemon's API with its outages ridden out;
* ``starter``: starts a sweep's elements K at a time.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from torchx.schedulers._docker import client as docker_engine
from torchx.schedulers._docker import logs, readiness, retry
from torchx.schedulers._docker import status as docker_status
from torchx.schedulers._docker.failure import log_tail, replica_failure
from torchx.schedulers._docker.request import (
    _COUNT_ATTEMPTS,
    LABEL_APP_ID,
    LABEL_CANCELLED,
    LABEL_PULLED,
    LABEL_REPLICA_ID,
    LABEL_RESTARTABLE,
    LABEL_ROLE_NAME,
    LABEL_SUBMITTED,
    LABEL_VERSION,
    NETWORK,
    DockerContainer,
    DockerJob,
    DockerOpts,
    Opts,
    _container_name,
    app_id_base,
    assemble,
)
from torchx.schedulers._docker.starter import log_path
from torchx.schedulers._docker.status import CONTAINER_STATE
from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    LogQuery,
    Scheduler,
    whole_lines,
)
from torchx.schedulers.ids import make_unique
from torchx.schedulers.shared import labels
from torchx.specs.api import (
    NONE,
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    ReplicaStatus,
    Role,
    RoleStatus,
    is_terminal,
    runopts,
)
from torchx.specs.attempts import Attempt
from torchx.specs.failure import root_cause
from torchx.specs.status import array_state
from torchx.util.log import get_logger
from torchx.util.support.atomic import FILE_MODE, make_private_dirs
from torchx.util.support.signals import signal_name
from torchx.version import get_torchx_image
from torchx.workspace.docker_workspace import (
    DockerWorkspaceMixin,
    connect_docker,
    docker_sdk,
    ensure_image,
    local_image_id,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import docker

    from torchx.specs.attempts import Attempt
    from torchx.specs.failure import Failure
    from torchx.util.readiness import ReadinessCheck

TORCHX_PLUGIN_API = 1
"""The torchx plugin contract this module was built against (torchx.util.plugin_api)."""

__all__ = [
    "CONTAINER_STATE",
    "LABEL_APP_ID",
    "LABEL_CANCELLED",
    "LABEL_REPLICA_ID",
    "LABEL_ROLE_NAME",
    "LABEL_VERSION",
    "NETWORK",
    "ContainerStartError",
    "DockerContainer",
    "DockerJob",
    "DockerOpts",
    "DockerScheduler",
    "Opts",
    "create_scheduler",
    "ensure_network",
    "has_docker",
]

log = get_logger(__name__)

SCHEDULER_NAME = "local_docker"


_STOP_TIMEOUT_S = 10


class ContainerStartError(RuntimeError):
    """A container of the app could not be created or started (none is left behind)."""


_SIGNAL_EXITS = frozenset({128 + 9, 128 + 15})  # SIGKILL, SIGTERM (through docker-init)
_KILL_LOOKBACK_S = 7 * 24 * 3600  # the daemon keeps only its latest events anyway


def has_docker() -> bool:
    """Whether a Docker daemon can be reached from this process (False without the SDK)."""
    try:
        connect_docker()
    except Exception:
        return False
    return True


def _lock_path() -> str:
    return os.path.join(tempfile.gettempdir(), "torchx_docker_network_lock")


def ensure_network(client: docker.DockerClient | None = None, network: str = NETWORK) -> None:
    """Creates the ``torchx`` bridge network unless it exists.

    Docker allows two networks of one name, so creation is serialized between processes
    with a file lock.
    """
    _ensure_network((client or connect_docker()).api, network)


def _ensure_network(api: Any, network: str) -> None:
    if any(n.get("Name") == network for n in api.networks(names=[network])):
        return
    fd = os.open(_lock_path(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if not any(n.get("Name") == network for n in api.networks(names=[network])):
            api.create_network(network, driver="bridge", check_duplicate=True)
    finally:
        os.close(fd)


def _is_not_found(error: BaseException) -> bool:
    return getattr(error, "status_code", None) == 404


class DockerScheduler(DockerWorkspaceMixin, Scheduler[Opts]):
    """Runs apps as containers on the Docker host of ``DOCKER_HOST`` (default: local)."""

    has_event_source = True  # wait_for_change: the daemon's event stream
    supports_arrays = True  # a sweep: a container per element, K started at a time

    def __init__(self, session_name: str, docker_client: docker.DockerClient | None = None) -> None:
        super().__init__("docker", session_name, docker_client=docker_client)
        self._explicit_client = docker_client is not None
        self._engine: Any = None
        self._describe_ns: dict[str, int] = {}
        # Container events seen by wait_for_change: where to go on reading them per app,
        # and the exit codes of containers that died (the daemon's container list shows
        # them as running for a while after `die`).
        self._event_ns: dict[str, int] = {}
        self._exits: dict[str, int] = {}

    @property
    def _api(self) -> Any:
        """The daemon's low-level API: this package's own light client for a local or plain
        TCP daemon (no SDK import), else (TLS/SSH daemons, an explicit ``docker_client``)
        the SDK's ``APIClient``. Both take the same calls."""
        if self._engine is None:
            engine = None if self._explicit_client else docker_engine.from_env()
            if engine is None:
                self._engine = retry.RetryingApi(self._docker_client.api, "DOCKER_HOST")
            else:
                api = retry.RetryingApi(engine, engine.address)
                api.ping()
                self._engine = api
        return self._engine

    # -- options and validation ------------------------------------------------------------

    def load_for_check(self) -> None:
        """The docker SDK; missing, :meth:`check_ready` says so."""

        with contextlib.suppress(Exception):  # missing: check_ready says what to install
            docker_sdk()

    def check_ready(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ReadinessCheck]:
        """The daemon this scheduler would use, and the built-in components' image."""

        return readiness.checks(get_torchx_image())

    def _run_opts(self) -> runopts:
        return Opts.as_runopts()

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Roles need no resource: without one a container gets no limits."""

    # -- dry run ---------------------------------------------------------------------------

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[DockerJob]:
        # the id is made here, through this module's name: upstream's tests patch
        # `torchx.schedulers.docker_scheduler.make_unique`
        app_id = make_unique(app_id_base(app.name))
        return AppDryRunInfo(assemble(app, Opts.from_cfg(cfg), app_id), str)

    # -- submit ----------------------------------------------------------------------------

    def schedule(self, dryrun_info: AppDryRunInfo[DockerJob]) -> str:
        request = dryrun_info.request
        api = self._api
        submitted = time.time()
        pulled: list[str] = []
        for image in dict.fromkeys(c.image for c in request.containers):
            if self._ensure_image(image):
                pulled.append(image)
        # the daemon keeps the app's state: when it was submitted and what was pulled for it
        marks = {LABEL_SUBMITTED: f"{submitted:.3f}"}
        if pulled:
            marks[LABEL_PULLED] = f"{time.time():.3f} {' '.join(pulled)}"
        for container in request.containers:
            container.kwargs.setdefault("labels", {}).update(marks)
        shells: dict[str, bool] = {}
        for container in request.containers:
            if container.command[: len(_COUNT_ATTEMPTS)] != _COUNT_ATTEMPTS:
                continue
            if container.image not in shells:
                shells[container.image] = self._has_shell(container.image)
            if not shells[container.image]:  # the role's command as given, no shell to count
                container.command = container.command[len(_COUNT_ATTEMPTS) :]
        networks = {c.kwargs.get("network") for c in request.containers} - {None}
        for network in networks:
            _ensure_network(api, str(network))
        created: list[str] = []
        current = "?"
        try:
            for container in request.containers:
                current = str(container.kwargs.get("name", container.image))
                created.append(self._create(container))
            now = created
            if request.max_parallel is not None and request.max_parallel < len(created):
                now = created[: request.max_parallel]  # a sweep: the rest in turn
            for container, container_id in zip(request.containers, now, strict=False):
                current = str(container.kwargs.get("name", container.image))
                api.start(container_id)
            if len(now) < len(created):
                self._start_in_turn(request.app_id, len(now))
        except BaseException as e:
            self._remove_containers(created)
            if not isinstance(e, Exception):
                raise
            reason = " ".join(str(getattr(e, "explanation", None) or e).split())
            raise ContainerStartError(
                f"could not start container {current} of app {request.app_id}: {reason}"
                f" (removed the {len(created)} container(s) already created; fix the"
                " role's image, entrypoint or mounts and run again)"
            ) from e
        return request.app_id

    @staticmethod
    def _start_in_turn(app_id: str, permits: int) -> None:
        """Leaves a detached process (``_docker.starter``) to start a sweep's other
        elements as earlier ones end."""

        path = log_path(app_id)
        make_private_dirs(os.path.dirname(path))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, FILE_MODE)
        try:
            subprocess.Popen(
                [sys.executable, "-m", "torchx.schedulers._docker.starter", app_id, str(permits)],
                stdin=subprocess.DEVNULL,
                stdout=fd,
                stderr=fd,
                start_new_session=True,
                close_fds=True,
            )
        finally:
            os.close(fd)

    @property
    def _image_api(self) -> Any:
        return self._api

    def _ensure_image(self, image: str) -> bool:
        """Pulls ``image`` (through the SDK) only when the daemon does not have it; whether
        it pulled it."""
        if local_image_id(self._api, image) is None:
            ensure_image(self._docker_client, image)
            return True
        return False

    def _has_shell(self, image: str) -> bool:
        """Whether ``image`` has ``/bin/sh``: looked for in a container made (never started)
        from it and removed at once."""
        api = self._api.unwrapped
        if isinstance(api, docker_engine.EngineClient):
            made = api.create_container_from_body(None, {"Image": image, "Cmd": ["/bin/sh"]})
            try:
                return api.path_exists(str(made["Id"]), "/bin/sh")
            finally:
                api.remove_container(str(made["Id"]), force=True)
        import docker.errors

        probe = self._docker_client.containers.create(image, ["/bin/sh"])
        try:
            probe.get_archive("/bin/sh")
            return True
        except docker.errors.NotFound:
            return False
        finally:
            probe.remove(force=True)

    def _create(self, container: DockerContainer) -> str:
        api = self._api
        light = isinstance(api.unwrapped, docker_engine.EngineClient)
        if light and set(container.kwargs) <= (docker_engine.SUPPORTED_CREATE_KWARGS):
            body = docker_engine.container_body(
                container.image, container.command, container.kwargs
            )
            created = api.create_container_from_body(str(container.kwargs["name"]), body)
            return str(created["Id"])
        # kwargs beyond what torchx generates (a role's pre_proc may add any): the SDK
        # knows every keyword of `containers.create`.
        made = self._docker_client.containers.create(
            container.image, container.command, **container.kwargs
        )
        return str(made.id)

    def _remove_containers(self, ids: Iterable[str]) -> None:
        for container_id in ids:
            try:
                self._api.remove_container(container_id, force=True, v=True)
            except Exception as e:  # best effort: report, keep removing the others
                log.warning("could not remove container %s: %s", container_id, e)

    # -- state -----------------------------------------------------------------------------

    def _containers(self, app_id: str, *labels: str) -> list[dict[str, Any]]:
        filters = [f"{LABEL_APP_ID}={app_id}", *labels]
        found: list[dict[str, Any]] = self._api.containers(all=True, filters={"label": filters})
        return found

    def _cancelled_apps(self, app_id: str | None = None) -> set[str]:
        """Ids of the apps (of ``app_id`` alone, if given) that were cancelled: one call."""
        labels = (
            [LABEL_CANCELLED] if app_id is None else [f"{LABEL_APP_ID}={app_id}", LABEL_CANCELLED]
        )
        volumes = self._api.volumes(filters={"label": labels}) or {}
        return {
            str((v.get("Labels") or {}).get(LABEL_APP_ID, "")) for v in volumes.get("Volumes") or []
        }

    def _replica_state(self, summary: dict[str, Any]) -> tuple[AppState, str, int]:
        """The replica state of a container summary, Docker's error message if any, and
        how often the container was restarted (known when it had to be inspected)."""
        state = str(summary.get("State", ""))
        died_with = self._exits.get(str(summary.get("Id", ""))) if state == "running" else None
        # a container Docker may have restarted is inspected even when it ended well, to
        # count its restarts
        restartable = LABEL_RESTARTABLE in (summary.get("Labels") or {})
        if died_with is None:
            listed = docker_status.listed_state(summary)
            if listed != AppState.FAILED and not (restartable and listed == AppState.SUCCEEDED):
                return listed, "", 0
        if died_with == 0 and not restartable:
            return AppState.SUCCEEDED, "", 0  # no restart policy: no restarts to count
        info = self._api.inspect_container(summary["Id"])
        restarts = int(info.get("RestartCount") or 0)
        container_state = info.get("State") or {}
        if container_state.get("Running") or container_state.get("Restarting"):
            state_now = CONTAINER_STATE.get(str(container_state.get("Status")), AppState.RUNNING)
            return state_now, "", restarts
        exit_code = int(container_state.get("ExitCode", -1))
        if exit_code == 0:
            return AppState.SUCCEEDED, "", restarts
        error = str(container_state.get("Error") or "")
        if container_state.get("OOMKilled"):
            error = error or "killed: out of memory (raise the role's memMB)"
        elif not error and exit_code in _SIGNAL_EXITS:
            error = self._stopped_from_outside(str(summary["Id"]), exit_code)
        return AppState.FAILED, error or f"exit code {exit_code}", restarts

    def _stopped_from_outside(self, container_id: str, exit_code: int) -> str:
        """Why a container ended by a signal: ``docker stop``/``kill``, the daemon or the
        host (Docker logged a ``kill`` of it) is not the replica's own failure, which is
        all Docker's ``on-failure`` policy restarts."""
        now = time.time()
        kills = self._api.events(
            since=int(now) - _KILL_LOOKBACK_S,
            until=now,
            filters={"container": [container_id], "event": ["kill"]},
        )
        signals = [
            str((e.get("Actor") or {}).get("Attributes", {}).get("signal", "")) for e in kills
        ]
        if not signals:
            return f"exit code {exit_code}"
        last = signals[-1]
        name = signal_name(int(last)) if last.isdigit() else last
        return (
            f"exit code {exit_code}: stopped from outside ({name} from docker"
            " stop/kill, the daemon or the host), not its own failure; Docker does not"
            " restart a container it was told to stop: run the app again to resume"
        )

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        self._describe_ns[app_id] = time.time_ns()
        summaries = self._containers(app_id)
        if not summaries:
            return None
        by_role: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for summary in summaries:
            labels = summary.get("Labels") or {}
            role = str(labels.get(LABEL_ROLE_NAME, ""))
            rid = int(labels.get(LABEL_REPLICA_ID, "0") or 0)
            by_role.setdefault(role, []).append((rid, summary))
        roles: list[Role] = []
        roles_statuses: list[RoleStatus] = []
        states: list[AppState] = []
        errors: list[str] = []
        failed: list[tuple[str, int, dict[str, Any]]] = []
        restarts = 0
        most_restarted: dict[str, Any] | None = None
        for role_name, replicas in by_role.items():
            replicas.sort(key=lambda r: r[0])
            statuses: list[ReplicaStatus] = []
            for rid, summary in replicas:
                state, error, replica_restarts = self._replica_state(summary)
                if replica_restarts > restarts:
                    restarts, most_restarted = replica_restarts, summary
                states.append(state)
                name = str((summary.get("Names") or ["/"])[0]).lstrip("/")
                if error:
                    errors.append(f"{role_name}/{rid}: {error}")
                if state == AppState.FAILED:
                    failed.append((role_name, rid, summary))
                statuses.append(
                    ReplicaStatus(
                        id=rid,
                        state=state,
                        role=role_name,
                        hostname=name,
                        structured_error_msg=error or NONE,
                    )
                )
            roles_statuses.append(RoleStatus(role_name, statuses))
            roles.append(docker_status.role_of(role_name, replicas[0][1], len(replicas)))
        array = docker_status.array_of(summaries)
        never_started = array is not None and any(s.get("State") == "created" for s in summaries)
        if never_started and app_id in self._cancelled_apps(app_id):  # cancelled before
            states = [AppState.CANCELLED if s == AppState.SUBMITTED else s for s in states]
        state = self._app_state(app_id, states)
        if array is not None and not is_terminal(state):  # some wait for their turn
            state = array_state(AppState.PENDING if s == AppState.SUBMITTED else s for s in states)
        if state == AppState.CANCELLED:  # a stopped container exits non-zero: not a failure
            for role_status in roles_statuses:
                for replica in role_status.replicas:
                    if replica.state != AppState.SUCCEEDED:
                        replica.state = AppState.CANCELLED
        return DescribeAppResponse(
            app_id=app_id,
            state=state,
            num_restarts=restarts,
            msg="; ".join(errors) if errors and state != AppState.CANCELLED else NONE,
            roles_statuses=roles_statuses,
            roles=roles,
            failure=self._root_cause(failed, list(by_role)) if state == AppState.FAILED else None,
            timeline=docker_status.timeline_of(summaries, state),
            waiting=docker_status.waiting_of(summaries) if state == AppState.PENDING else None,
            attempts=self._attempts(most_restarted) if most_restarted is not None else None,
            progress_tail=self._progress_tail(next(iter(by_role.values()))[0][1]["Id"]),
            array=docker_status.array_status(array, roles_statuses) if array is not None else None,
        )

    def _attempts(self, summary: dict[str, Any]) -> list[Attempt]:
        """The attempts of a container Docker restarted (``max_retries``): its ``start``
        and ``die`` events since it was created, one attempt per start, each ended by the
        next death and its exit code (Docker keeps no other record of them)."""

        events = self._api.events(
            since=int(summary.get("Created") or 0),
            until=time.time(),
            filters={"container": [str(summary["Id"])], "event": ["start", "die"]},
        )
        attempts: list[Attempt] = []
        for event in events:
            when = event.get("timeNano")
            at = int(when) / 1e9 if when else float(event.get("time") or 0)
            if event.get("Action", event.get("status")) == "start":
                attempts.append(Attempt(len(attempts), start=at))
            elif attempts and attempts[-1].end is None:
                code_text = str((event.get("Actor") or {}).get("Attributes", {}).get("exitCode"))
                current = attempts[-1]
                current.end = at
                current.exit_code = int(code_text) if code_text.lstrip("-").isdigit() else None
                failed = current.exit_code != 0
                current.state = AppState.FAILED if failed else AppState.SUCCEEDED
                current.cause = "exit_code" if failed else None
        return attempts

    def _progress_tail(self, container_id: str) -> Callable[[], str]:
        """Reads the end of a container's log (where ``torchx.progress`` reports)."""

        def tail() -> str:
            return log_tail(self._api, container_id)

        return tail

    def _root_cause(
        self, failed: list[tuple[str, int, dict[str, Any]]], role_order: list[str]
    ) -> Failure | None:
        """The first observed failure among the failed replicas' containers."""

        failures = []
        for role_name, rid, summary in failed:
            info = self._api.inspect_container(summary["Id"])
            code = int((info.get("State") or {}).get("ExitCode", -1))
            outside = ""
            if code in _SIGNAL_EXITS and not (info.get("State") or {}).get("OOMKilled"):
                stopped = self._stopped_from_outside(str(summary["Id"]), code)
                outside = stopped if "stopped from outside" in stopped else ""
            failures.append(replica_failure(self._api, role_name, rid, info, outside))
        return root_cause(failures, role_order)

    def _app_state(
        self, app_id: str, states: list[AppState], cancelled: set[str] | None = None
    ) -> AppState:
        """The app's state from its replicas'; ``cancelled`` (the cancelled app ids, when
        the caller has them) saves a lookup."""
        if all(is_terminal(s) for s in states):
            if all(s == AppState.SUCCEEDED for s in states):
                return AppState.SUCCEEDED
            if cancelled is None:
                cancelled = self._cancelled_apps(app_id)
            return AppState.CANCELLED if app_id in cancelled else AppState.FAILED
        if AppState.RUNNING in states:
            return AppState.RUNNING
        return next(s for s in states if not is_terminal(s))

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """Every app with containers on the Docker host, one row per app."""
        del cfg
        summaries: list[dict[str, Any]] = self._api.containers(
            all=True, filters={"label": [LABEL_APP_ID]}
        )
        by_app: dict[str, list[dict[str, Any]]] = {}
        for summary in sorted(summaries, key=lambda s: int(s.get("Created") or 0)):
            app_id = str((summary.get("Labels") or {}).get(LABEL_APP_ID, ""))
            by_app.setdefault(app_id, []).append(summary)
        cancelled = self._cancelled_apps() if by_app else set()
        rows = []
        for app_id, found in by_app.items():
            states = [docker_status.listed_state(s) for s in found]
            state = self._app_state(app_id, states, cancelled)
            waits = docker_status.waiting_of(found) if state == AppState.PENDING else None
            rows.append(
                ListAppResponse(
                    app_id=app_id,
                    state=state,
                    name=str((found[-1].get("Labels") or {}).get(labels.APP_NAME, "")),
                    waiting=waits.reason if waits is not None else "",
                    submitted=float(found[0].get("Created") or 0) or None,
                )
            )
        return rows

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        """Returns on the first container event of the app (or after ``timeout``).

        Events are read on from the last one seen (or from the last ``describe``), so none
        is missed between two calls. The exit code of a ``die`` is remembered: the daemon
        lists a container as running for a while (tens of ms) after it died, and
        ``describe`` would otherwise report the old state and wait a whole interval more.
        """
        if timeout <= 0:
            return
        since_ns = self._event_ns.get(app_id) or self._describe_ns.get(app_id) or time.time_ns()
        until = time.time() + timeout
        events = self._api.events(
            since=f"{since_ns // 1_000_000_000}.{since_ns % 1_000_000_000:09d}",
            until=f"{until:.9f}",
            filters={"type": ["container"], "label": [f"{LABEL_APP_ID}={app_id}"]},
            decode=True,
        )
        try:
            for event in _until_dropped(events):
                event_ns = int(event.get("timeNano") or 0)
                if event_ns < since_ns:
                    continue
                self._event_ns[app_id] = event_ns + 1
                container_id = str(event.get("id", ""))
                action = event.get("Action")
                if action == "die":
                    attributes = (event.get("Actor") or {}).get("Attributes") or {}
                    code = str(attributes.get("exitCode", ""))
                    self._exits[container_id] = int(code) if code.isdigit() else -1
                elif action in ("start", "restart"):
                    self._exits.pop(container_id, None)
                return
        finally:
            events.close()

    # -- cancel / delete -------------------------------------------------------------------

    def _cancel_existing(self, app_id: str) -> None:
        """Stops the app's containers (kept for inspection); the app reads CANCELLED."""
        summaries = self._containers(app_id)
        if summaries and all(s.get("State") == "exited" for s in summaries):
            return  # already ended: cancelling changes nothing
        self._api.create_volume(
            name=_container_name(app_id, "cancelled", 0),
            labels={LABEL_APP_ID: app_id, LABEL_CANCELLED: "1"},
        )
        running = [str(s["Id"]) for s in summaries if s.get("State") != "exited"]
        if not running:
            return

        # stopped side by side (each may take the stop timeout); a failure reaches the caller
        with ThreadPoolExecutor(max_workers=min(len(running), 16)) as pool:
            list(pool.map(self._stop, running))

    def _stop(self, container_id: str) -> None:
        try:
            self._api.stop(container_id, timeout=_STOP_TIMEOUT_S)
        except Exception as e:
            if not _is_not_found(e):  # removed meanwhile: nothing left to stop
                raise

    def _delete_existing(self, app_id: str) -> None:
        """Removes the app's containers (stopping running ones) and its marker."""
        api = self._api
        self._remove_containers(str(s["Id"]) for s in self._containers(app_id))
        volumes = api.volumes(filters={"label": [f"{LABEL_APP_ID}={app_id}"]})
        for volume in (volumes or {}).get("Volumes") or []:
            try:
                api.remove_volume(volume["Name"], force=True)
            except Exception as e:
                if not _is_not_found(e):
                    raise

    # -- logs ------------------------------------------------------------------------------

    def _log_lines(self, query: LogQuery) -> Iterable[str]:
        """The replica's container log: stdout, stderr or both interleaved as written,
        bounded by time by the daemon, followed until the container stops."""
        app_id, role_name, k = query.app_id, query.role_name, query.k
        found = self._containers(
            app_id, f"{LABEL_ROLE_NAME}={role_name}", f"{LABEL_REPLICA_ID}={k}"
        )
        if not found:
            self._raise_no_replica(app_id, role_name, k)
        if len(found) > 1:
            raise RuntimeError(
                f"{len(found)} containers are labelled as replica {k} of role {role_name!r}"
                f" of app {app_id}; remove the stray ones (docker ps -a --filter"
                f" label={LABEL_APP_ID}={app_id})"
            )
        kwargs: dict[str, Any] = {
            "stdout": query.stream != "stderr",
            "stderr": query.stream != "stdout",
            "stream": True,
            "follow": query.follow,
        }
        if query.since is not None:
            kwargs["since"] = query.since
        if query.until is not None:
            kwargs["until"] = query.until
        if query.follow:
            raw = logs.follow_log(self._api, found[0]["Id"], kwargs)
        else:
            # Docker frames a log by the program's writes: re-split it into whole lines
            raw = whole_lines(self._api.logs(found[0]["Id"], **kwargs))
        return (line.decode("utf-8", "replace") for line in raw)

    def _raise_no_replica(self, app_id: str, role_name: str, k: int) -> None:
        summaries = self._containers(app_id)
        if not summaries:
            raise ValueError(
                f"unknown local_docker app {app_id!r}: no container carries it"
                " (was it deleted, or started on another Docker host?)"
            )
        replicas: dict[str, list[str]] = {}
        for s in summaries:
            labels = s.get("Labels") or {}
            replicas.setdefault(str(labels.get(LABEL_ROLE_NAME)), []).append(
                str(labels.get(LABEL_REPLICA_ID))
            )
        if role_name not in replicas:
            raise ValueError(
                f"app {app_id} has no role {role_name!r}; its roles are: {', '.join(replicas)}"
            )
        ids = sorted(int(r) for r in replicas[role_name])
        raise ValueError(
            f"role {role_name!r} of app {app_id} has replicas {ids[0]}..{ids[-1]};"
            f" there is no replica {k}"
        )


def create_scheduler(
    session_name: str, docker_client: docker.DockerClient | None = None, **kwargs: Any
) -> DockerScheduler:
    """Entry point of ``local_docker``; unknown ``kwargs`` (the ``TORCHX_*`` env vars the
    runner forwards) are ignored."""
    del kwargs
    return DockerScheduler(session_name=session_name, docker_client=docker_client)


def _until_dropped(events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The events of a stream until it ends or the daemon drops it (a restart): the caller
    describes the app next, which waits for the daemon to come back."""
    try:
        yield from events
    except Exception as e:
        if not retry.transient(e):
            raise
