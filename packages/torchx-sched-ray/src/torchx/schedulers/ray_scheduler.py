"""The ``ray`` scheduler: a TorchX app as one Ray job, submitted over the Jobs REST API.

* The submitting machine needs no Ray: every call is a stdlib HTTP request to the
  cluster's dashboard (``_ray.client``). The dashboard address is the ``dashboard_address``
  run option, then ``$RAY_API_SERVER_ADDRESS``, then ``$RAY_ADDRESS``, then 127.0.0.1:8265.
* One app is one Ray job whose entrypoint is a small driver shipped in this distribution
  (``_ray/driver.py``), uploaded with the job (never written into your directory). It
  gang-schedules every replica in one placement group (one bundle per replica: the role's
  CPU, GPU, memory and ``devices`` as custom resources), runs each replica's command in an
  actor of its own, restarts replicas as ``max_retries``/``retry_policy`` allow, and exits
  with the app's result. Nothing outlives the job: each replica's processes end with its
  actor, and the driver (exec'd, so Ray's stop signals it) ends its app when its job
  supervisor is gone.
* The workspace (the current directory on ``torchx run``; ``.torchxignore`` honoured) is
  zipped with the driver into the job's working dir, uploaded once per content.
* ``describe`` reads the job and the driver's event lines: per-replica states, hosts and exit
  codes, and PENDING with what the app waits for while its resources are not free.
* ``log_iter`` reads each replica's own log files (stdout and stderr apart), filters by
  time, regex and stream, and follows a running replica.
* The app id is ``host:port-<Ray submission id>`` (upstream's form; ``https:host:port-…`` for
  TLS), so ``status``, ``log``, ``cancel`` and ``--wait`` reach the cluster the job went to
  from any process, whatever ``$RAY_ADDRESS`` says. An id without an address (a dashboard
  URL with a path or credentials, or a handle from an older release) uses the usual
  address rules. Jobs carry TorchX's app and session in their metadata, so ``list`` shows
  TorchX's jobs only.

This module is the entry point; its wing, ``torchx.schedulers._ray``, holds the rest:

* ``request``: run options, the Ray job, the app spec the driver reads, a sweep's jobs;
* ``status``: a job and its driver's events to app status, waiting and timeline, attempts,
  a sweep's elements;
* ``failure``: a failed replica's exit code and Ray's word for the job to root causes;
* ``logs``: each replica's own log files (the progress tail too);
* ``readiness``: ``torchx check``;
* ``client``: the Jobs REST API, in the standard library;
* ``driver`` and ``keeper``: what runs in the cluster (the app's driver, a replica's
  command keeper).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from torchx.schedulers._ray import client as jobs_api
from torchx.schedulers._ray import failure as ray_failure
from torchx.schedulers._ray import logs, readiness, request
from torchx.schedulers._ray import status as ray_status
from torchx.schedulers._ray.request import META_SWEEP, Opts, RayActor, RayJob, RaySweep
from torchx.schedulers._ray.status import elements_of, sweep_state
from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    LogQuery,
    Scheduler,
)
from torchx.schedulers.ids import make_unique
from torchx.schedulers.shared import labels
from torchx.specs.api import (
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    ReplicaStatus,
    Role,
    RoleStatus,
    runopts,
)
from torchx.specs.failure import from_log_tail, root_cause
from torchx.specs.sweep import AppArray
from torchx.util.log import get_logger
from torchx.util.support.retry import in_thread
from torchx.workspace.api import WorkspaceMixin

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers.list_filter import ListFilter
    from torchx.util.readiness import ReadinessCheck

TORCHX_PLUGIN_API = 1
"""The torchx plugin contract this module was built against (torchx.util.plugin_api)."""

__all__ = ["Opts", "RayActor", "RayJob", "RayOpts", "RayScheduler", "create_scheduler"]

logger = get_logger(__name__)

RayOpts = Opts
"""Upstream's name of the run options."""

_TERMINAL = (AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED)

_MONITOR_ROUND_S = 1.0
"""How often Ray's job manager looks at each job (``JOB_MONITOR_LOOP_PERIOD_S``)."""

_Rows = list[ListAppResponse]


class RayScheduler(WorkspaceMixin[None], Scheduler[RayJob]):
    """Runs TorchX apps as Ray jobs (see the module docstring)."""

    supports_arrays = True  # a sweep is one Ray job per element (_ray.status)

    def __init__(self, session_name: str, ray_client: Any = None) -> None:
        """``ray_client``: a ``ray.job_submission.JobSubmissionClient`` (or anything with
        ``get_address()``), as libraries built on upstream pass (codeflare-sdk, on
        OpenShift): its address is the default dashboard, and every call to that cluster
        carries the client's headers (its OAuth bearer token), cookies and TLS setting.
        Calls still go over this scheduler's own HTTP client."""
        super().__init__("ray", session_name)
        self._clients: dict[str | None, jobs_api.RayJobsClient] = {}
        self._default_address: str | None = None
        self._sdk: dict[str, Any] = {}
        if ray_client is not None:
            address = str(ray_client.get_address())
            self._default_address = address
            self._sdk = {
                "url": jobs_api.resolve_address(address)[0],
                "headers": dict(getattr(ray_client, "_headers", None) or {}),
                "cookies": dict(getattr(ray_client, "_cookies", None) or {}),
                "verify": getattr(ray_client, "_verify", True),
            }

    def _address_of(self, address: str | None) -> str | None:
        """``address``, or the SDK client's own when ``address`` names its host alone
        (``dashboard_address=ray-head.example.com`` beside a client of
        ``https://ray-head.example.com``, as codeflare-sdk passes them): then every request
        goes to the client's origin (its scheme and port), with its headers, cookies and
        TLS setting, as upstream used the client for every request."""
        if not address or not self._sdk or "://" in address:
            return address or self._default_address

        host, _, port = address.rstrip("/").partition(":")
        sdk = urlsplit(self._sdk["url"])
        if host == sdk.hostname and (not port or port == str(sdk.port or "")):
            return str(self._sdk["url"])
        return address

    def _new_client(self, url: str, origin: str) -> jobs_api.RayJobsClient:
        """A client of the dashboard at ``url``; the SDK client's settings go only to its
        own cluster."""
        sdk = self._sdk
        if sdk and jobs_api.origin_of(url) == jobs_api.origin_of(sdk["url"]):
            return jobs_api.RayJobsClient(
                url, origin, headers=sdk["headers"], cookies=sdk["cookies"], verify=sdk["verify"]
            )
        return jobs_api.RayJobsClient(url, origin)

    # -- options and the cluster ------------------------------------------------------------

    def _run_opts(self) -> runopts:
        return Opts.as_runopts()

    def _client(
        self, address: str | None = None, origin: str | None = None
    ) -> jobs_api.RayJobsClient:
        address = self._address_of(address)
        client = self._clients.get(address)
        if client is None:
            url, resolved_origin = jobs_api.resolve_address(address)
            client = self._new_client(url, origin or resolved_origin)
            self._clients[address] = client
        return client

    def check_ready(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ReadinessCheck]:
        """The dashboard answers, its Ray version, and the nodes with their resources."""

        return readiness.checks(Opts.from_cfg(cfg or {}).dashboard_address)

    # -- workspaces --------------------------------------------------------------------------

    def caching_build_workspace_and_update_role(
        self, role: Role, cfg: Mapping[str, CfgVal], build_cache: dict[object, object]
    ) -> None:
        """The workspace becomes the job's working dir: the role records the directory
        (it is zipped and uploaded at submit, where the driver joins it)."""
        workspace = role.workspace
        if not workspace:
            return
        if not workspace.is_unmapped_single_project():
            raise ValueError(
                f"role `{role.name}`: a Ray job has one working dir; give the workspace as one"
                " directory (no mapped projects)"
            )
        role.image = _local_dir(next(iter(workspace.projects)))

    def planned_image(self, role: Role, cfg: Mapping[str, CfgVal]) -> str:
        workspace = role.workspace
        return _local_dir(next(iter(workspace.projects))) if workspace else role.image

    def built_message(self, role: Role, old_image: str) -> str:
        return f"workspace {role.workspace} of role `{role.name}` becomes the job's working dir"

    # -- submit ------------------------------------------------------------------------------

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        opts = Opts.from_cfg(cfg)
        request.check_options(opts)
        app_id = make_unique(_job_name(app.name))

        if isinstance(app, AppArray):  # a sweep: one Ray job per element
            jobs = []
            for p in range(len(app.elements)):
                element = AppDef(name=app.name, roles=[app.element_role(p)], metadata=app.metadata)
                job = self._job(element, f"{app_id}-{p}", opts)
                job.metadata.update(request.element_metadata(app, app_id, p))
                job.spec_on_entrypoint = True  # one runtime env for all the elements
                gate = request.gate(app, app_id)
                if gate is not None:
                    job.spec["gate"] = gate
                jobs.append(job)
            return AppDryRunInfo(request.RaySweep(app_id, jobs), str)
        return AppDryRunInfo(self._job(app, app_id, opts), str)

    def _job(self, app: AppDef, app_id: str, opts: Opts) -> RayJob:
        """The Ray job of ``app`` (submission id ``app_id``)."""
        directories = {r.image for r in app.roles if r.workspace}
        if opts.working_dir:
            directories = _legacy_working_dir(opts.working_dir, directories)
        if len(directories) > 1:
            raise ValueError(
                "the roles of a Ray job share one working dir, but they have different"
                f" workspaces ({', '.join(sorted(directories))}); give them one"
            )
        address, origin = jobs_api.resolve_address(self._address_of(opts.dashboard_address))
        job = RayJob(
            address=address,
            address_origin=origin,
            submission_id=app_id,
            # Ray runs the entrypoint in a shell: the interpreter option is one quoted word,
            # and exec makes the driver the process a stop signals (not a shell above it)
            entrypoint=f"exec {shlex.quote(opts.python)} {request.DRIVER_PATH}",
            runtime_env=request.runtime_env(opts),
            metadata=request.job_metadata(app, app_id, self.session_name, opts),
            spec=request.app_spec(app, app_id, opts),
            package_dir=next(iter(directories), None),
            requirements=request.requirements_of(opts, next(iter(directories), None)),
            cluster_name=opts.cluster_name,
            actors=request.actors_of(app, app_id),
        )
        return job

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        if not app.roles:
            raise ValueError(f"app {app.name!r} has no roles")

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        """Uploads the working dir, submits the job (a sweep: each element's, whole or not
        at all), and returns ``host:port-<id>``."""

        found = dryrun_info.request
        jobs = found.jobs if isinstance(found, RaySweep) else [found]
        job = jobs[0]
        pip = (
            request.read_requirements(job.requirements) if job.requirements else []
        )  # now, not at dry run
        client = self._new_client(job.address, job.address_origin)
        client.version()
        with request.package_file() as package:
            name = request.pack_package(job.package_dir, package)
            if not client.has_package(name):
                client.upload_package(name, package)
        submitted: list[str] = []
        try:
            for each in jobs:
                submitted.append(client.submit(each.body(f"gcs://{name}", pip)))
        except BaseException:
            if isinstance(found, RaySweep):
                for done in submitted:
                    client.stop(done)
            raise
        submission_id = found.sweep_id if isinstance(found, RaySweep) else submitted[0]
        prefix = jobs_api.address_in_app_id(job.address)
        return f"{prefix}-{submission_id}" if prefix else submission_id

    def _located(self, app_id: str) -> tuple[jobs_api.RayJobsClient, str]:
        """The client of the cluster ``app_id`` names, and the job's Ray submission id."""
        address, job_id = jobs_api.split_app_id(app_id)
        return self._client(address, "the app id" if address else None), job_id

    # -- state -------------------------------------------------------------------------------

    def _job_and_events(
        self, client: jobs_api.RayJobsClient, app_id: str
    ) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """The job and its driver's events, fetched side by side (two HTTP calls)."""
        log: list[str] = []
        failure: list[BaseException] = []

        def read_log() -> None:
            try:
                log.append(client.driver_log(app_id))
            except BaseException as e:  # reported by the caller's thread
                failure.append(e)

        reader = in_thread(read_log)  # with the caller's outage budget
        try:
            job = client.job(app_id)
        except jobs_api.RayNotFoundError:
            reader.join()
            return None
        reader.join()
        if failure and not isinstance(failure[0], jobs_api.RayNotFoundError):
            raise failure[0]
        return job, ray_status.events(log[0] if log else "")

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        client, job_id = self._located(app_id)
        found = self._job_and_events(client, job_id)
        if found is None:
            return self._describe_sweep(client, app_id, job_id)
        job, found_events = found
        metadata = {str(k): str(v) for k, v in (job.get("metadata") or {}).items()}
        state, message = ray_status.app_state(job, found_events)
        roles = _roles_of(metadata)
        infos = ray_status.replicas(roles, state, found_events)
        role_statuses = []
        for role_name in roles:
            statuses = [
                ReplicaStatus(
                    id=info.replica,
                    state=info.state,
                    role=role_name,
                    hostname=info.host,
                    structured_error_msg=(
                        f"exit code {info.exit_code}" if info.exit_code else "<NONE>"
                    ),
                )
                for (name, _), info in sorted(infos.items())
                if name == role_name
            ]
            role_statuses.append(RoleStatus(role_name, statuses))
        restarts = sum(1 for e in found_events if e.get("event") == "restarted")
        first = infos.get((next(iter(roles)), 0)) if roles else None
        phases, waiting = ray_status.timing(job, found_events, state, message)
        failure = None
        if state == AppState.FAILED:
            failure = root_cause(ray_failure.failures(job, found_events, infos), list(roles))
            info = infos.get((failure.role, failure.replica_id)) if failure else None
            if failure is not None and info is not None:
                from_log_tail(failure, logs.replica_tail(client, info))
        return DescribeAppResponse(
            app_id=app_id,
            state=state,
            num_restarts=restarts,
            msg=message,
            ui_url=f"{client.shown}/#/jobs/{job_id}",
            metadata=metadata,
            roles_statuses=role_statuses,
            roles=[
                Role(name=r, image="", num_replicas=n, env=labels.request_env(metadata))
                for r, n in roles.items()
            ],
            failure=failure,
            timeline=phases,
            waiting=waiting,
            attempts=ray_status.attempts(found_events),
            progress_tail=(functools.partial(logs.replica_tail, client, first) if first else None),
        )

    def _sweep_elements(
        self, client: jobs_api.RayJobsClient, job_id: str
    ) -> list[Mapping[str, Any]]:
        """The element jobs of sweep ``job_id`` (none: not a sweep), from one listing."""

        return elements_of(client.jobs(), job_id)

    def _describe_sweep(
        self, client: jobs_api.RayJobsClient, app_id: str, job_id: str
    ) -> DescribeAppResponse | None:
        """A sweep: its element jobs' states; a failed one's root cause from its own
        ``describe``."""

        elements = self._sweep_elements(client, job_id)
        if not elements:
            return None
        status, states = sweep_state(elements)
        prefix = app_id[: -len(job_id)]
        role = next(iter(_roles_of(elements[0].get("metadata") or {})), "role")
        replicas = [ReplicaStatus(p, state, role, "") for p, state in enumerate(states)]
        state = status.state()
        response = DescribeAppResponse(
            app_id=app_id,
            state=state,
            num_restarts=0,
            ui_url=f"{client.shown}/#/jobs",
            roles_statuses=[RoleStatus(role, replicas)],
            roles=[Role(name=role, image="", num_replicas=len(elements))],
            array=status,
        )
        response.msg = status.failed_message() or response.msg
        if state == AppState.FAILED:
            failed = [p for p, s in enumerate(states) if s == AppState.FAILED]
            first = min(failed, key=lambda p: (elements[p].get("end_time") or 0, p))
            element = self.describe(f"{prefix}{elements[first].get('submission_id')}")
            if element is not None and element.failure is not None:
                response.failure = element.failure
                response.failure.replica_id = first
        return response

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """TorchX's jobs on the cluster (those whose metadata carry a TorchX app id)."""
        return self._list(cfg, None)

    def list_filtered(self, cfg: Mapping[str, CfgVal] | None, list_filter: ListFilter) -> _Rows:
        """``--since`` keeps the jobs Ray started since then (its ``start_time``)."""
        return list_filter.apply(self._list(cfg, list_filter.since))

    def _list(self, cfg: Mapping[str, CfgVal] | None, since: float | None) -> _Rows:
        client = self._client(Opts.from_cfg(cfg or {}).dashboard_address)
        prefix = jobs_api.address_in_app_id(client.address)

        rows = []
        jobs = sorted(client.jobs(), key=lambda j: j.get("start_time") or 0)
        sweeps_seen: set[str] = set()
        for job in jobs:
            metadata = job.get("metadata") or {}
            sweep_id = metadata.get(META_SWEEP)
            if sweep_id:  # a sweep's element: the sweep is one row
                if sweep_id in sweeps_seen:
                    continue
                sweeps_seen.add(sweep_id)
                if since is not None and (job.get("start_time") or 0) / 1000 < since:
                    continue
                status, _ = sweep_state(elements_of(jobs, sweep_id))
                rows.append(
                    ListAppResponse(
                        app_id=f"{prefix}-{sweep_id}" if prefix else str(sweep_id),
                        state=status.state(),
                        name=str(metadata.get("torchx.app") or ""),
                        submitted=(job.get("start_time") or 0) / 1000 or None,
                    )
                )
                continue
            app_id = metadata.get(request.META_APP_ID)
            if not app_id or job.get("submission_id") != app_id:
                continue
            if since is not None and (job.get("start_time") or 0) / 1000 < since:
                continue
            state = ray_status.JOB_STATES.get(str(job.get("status")), AppState.UNKNOWN)
            rows.append(
                ListAppResponse(
                    app_id=f"{prefix}-{app_id}" if prefix else str(app_id),
                    state=state,
                    name=str(metadata.get("torchx.app") or ""),
                    # Ray's own word from the same listing; the driver's wait for its
                    # placement group is in its events, read by status only
                    waiting=ray_status.app_state(job, [])[1] if state == AppState.PENDING else "",
                    submitted=(job.get("start_time") or 0) / 1000 or None,
                )
            )
        return rows

    # -- cancel / delete ---------------------------------------------------------------------

    def _cancel_existing(self, app_id: str) -> None:
        client, app_id = self._located(app_id)
        try:
            client.job(app_id)
        except jobs_api.RayNotFoundError:  # a sweep: each element's job
            for element in self._sweep_elements(client, app_id):
                client.stop(str(element.get("submission_id")))
            return
        client.stop(app_id)
        deadline = time.monotonic() + 5
        status = ""
        while time.monotonic() < deadline:
            status = str(client.job(app_id).get("status"))
            if ray_status.JOB_STATES.get(status) in _TERMINAL:
                return
            time.sleep(0.2)
        if status == "PENDING":
            logger.warning(
                "Ray keeps a job that has not started yet PENDING after a stop until its"
                " runtime env is ready (ray#58353); it will not run, and then reads CANCELLED"
            )

    def _delete_existing(self, app_id: str) -> None:
        """Stops the job if it runs, then deletes it. Ray's job monitor, which looks at a
        job about once a second, writes the state of a job that just ended once more when
        it finds the job's supervisor gone, and so brings a job deleted in between back
        (as FAILED): the deletion is repeated until the job stays gone for as long as one
        round of that monitor (:data:`_MONITOR_ROUND_S`, twice)."""

        client, job_id = self._located(app_id)
        if ray_status.JOB_STATES.get(str(client.job(job_id).get("status"))) not in _TERMINAL:
            self._cancel_existing(app_id)
        client.delete(job_id)
        gone_since = time.monotonic()
        while time.monotonic() - gone_since < 2 * _MONITOR_ROUND_S:
            time.sleep(0.25)
            try:
                client.job(job_id)
            except jobs_api.RayNotFoundError:
                continue
            client.delete(job_id)  # back from the monitor: again, and watch anew
            gone_since = time.monotonic()

    # -- logs --------------------------------------------------------------------------------

    def _log_lines(self, query: LogQuery) -> Iterable[str]:
        """Replica ``k`` of ``role_name``: its own output (every attempt in order), each line
        as written; the stream is stdout, stderr or both (merged by time). No role (as
        upstream's Ray scheduler and the SDKs built on it ask, ``log_iter(app_id, None)``):
        the job's whole log, as Ray's own ``get_job_logs`` gives it."""
        if not query.role_name:
            return self._job_log_lines(query.app_id, query.follow)
        return self._replica_lines(query)

    def _job_log_lines(self, app_id: str, follow: bool) -> Iterator[str]:
        """The job's whole log: what Ray's job log holds (runtime env set-up, the driver's
        own errors; not TorchX's event lines), then every replica's output, role by role
        (each followed until it ends when ``follow``)."""
        client, job_id = self._located(app_id)
        found = self._job_and_events(client, job_id)
        if found is None:
            raise ValueError(f"unknown Ray job {job_id!r} (see `torchx list -s ray`)")
        job, _ = found
        for line in client.driver_log(job_id).splitlines(keepends=True):
            if not line.startswith(ray_status.EVENT_PREFIX):
                yield line if line.endswith("\n") else line + "\n"
        for role, replicas in _roles_of(job.get("metadata") or {}).items():
            for k in range(replicas):
                yield from self._replica_lines(LogQuery(app_id, role, k, follow=follow))

    def _replica_lines(self, query: LogQuery) -> Iterator[str]:
        """A generator: nothing is asked of the cluster until the first line is wanted."""
        role_name, k, since, until = query.role_name, query.k, query.since, query.until
        suffixes = {"stdout": ["out"], "stderr": ["err"]}.get(query.stream, ["out", "err"])
        client, job_id = self._located(query.app_id)
        try:
            client.job(job_id)
        except jobs_api.RayNotFoundError:  # a sweep: element k's job, its one replica
            elements = self._sweep_elements(client, job_id)
            if not elements:
                raise ValueError(f"unknown Ray job {job_id!r} (see `torchx list -s ray`)") from None
            if not 0 <= k < len(elements):
                raise ValueError(
                    f"sweep {query.app_id} has elements 0..{len(elements) - 1}; no {k}"
                ) from None
            job_id, k = str(elements[k].get("submission_id")), 0
        yield from logs.replica_lines(
            client,
            lambda: self._replica(client, job_id, role_name, k),
            what=f"replica {role_name}/{k} of {query.app_id}",
            suffixes=suffixes,
            since=since,
            until=until,
            follow=query.follow,
        )

    def _replica(
        self, client: jobs_api.RayJobsClient, app_id: str, role_name: str, k: int
    ) -> tuple[Any, bool]:
        found = self._job_and_events(client, app_id)
        if found is None:
            raise ValueError(f"unknown Ray job {app_id!r} (see `torchx list -s ray`)")
        job, found_events = found
        roles = _roles_of(job.get("metadata") or {})
        if role_name not in roles:
            raise ValueError(
                f"app {app_id} has no role {role_name!r}; its roles are: {', '.join(roles)}"
            )
        if not 0 <= k < roles[role_name]:
            raise ValueError(
                f"role {role_name!r} of app {app_id} has replicas 0..{roles[role_name] - 1};"
                f" there is no replica {k}"
            )
        state, _ = ray_status.app_state(job, found_events)
        info = ray_status.replicas(roles, state, found_events)[(role_name, k)]
        return info, info.state in _TERMINAL or state in _TERMINAL


def _roles_of(metadata: Mapping[str, Any]) -> dict[str, int]:
    try:
        roles = json.loads(str(metadata.get(request.META_ROLES) or "{}"))
    except ValueError:
        roles = {}
    return {str(name): int(count) for name, count in roles.items()}


def _job_name(name: str) -> str:
    """A name Ray accepts as a submission id, from the app's name."""

    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "app"
    return cleaned[:40]


def _local_dir(project: str) -> str:
    """A workspace project as a directory here: ``file://DIR`` is ``DIR`` (the user's files
    must reach the job; a URL there uploaded an empty working dir)."""
    return project.removeprefix("file://") if project.startswith("file://") else project


def _legacy_working_dir(working_dir: str, directories: set[str]) -> set[str]:
    """Upstream's ``working_dir`` run option (2021-22, still in torchrec's Ray README) is
    the workspace: the job's working dir, with one deprecation line. Given explicitly, it
    wins over the workspace (by default the current directory). ``~`` is the home
    directory, as the shell made it on upstream's command line; one that is not a
    directory here is warned about and dropped, as upstream dropped the option."""
    directory = os.path.expanduser(_local_dir(working_dir))
    if not os.path.isdir(directory):
        logger.warning(
            "run option working_dir=%s is not a directory here, so it is not used (the"
            " workspace is the job's working dir; use `torchx run --workspace DIR`)",
            working_dir,
        )
        return directories
    instead = directories - {directory}
    logger.warning(
        "run option working_dir is upstream's old name of the workspace: %s becomes the"
        " job's working dir%s (use `torchx run --workspace %s`)",
        directory,
        f" instead of {', '.join(sorted(instead))}" if instead else "",
        directory,
    )
    return {directory}


def create_scheduler(session_name: str, ray_client: Any = None, **kwargs: Any) -> RayScheduler:
    """The ``torchx.schedulers`` entry point of ``ray`` (``ray_client`` as upstream's)."""
    return RayScheduler(session_name, ray_client=ray_client)
