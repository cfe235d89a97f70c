"""``aws_batch``: runs TorchX apps as AWS Batch multi-node jobs.

An app is one multi-node job with one node range per role (any number of replicas per role,
at most five roles); its id is ``<queue>:<job name>``. Job and job definition share a unique
name derived from the app name and carry the TorchX tags, so ``status``, ``log``, ``list``,
``cancel`` and ``delete`` work from any machine with access to the account.

* ``describe``/``status`` find the job by name in its queue and report Batch's
  ``statusReason`` (why it failed, was terminated, or still waits) and, where Batch gives
  node jobs, each replica's own state.
* ``cancel`` terminates the job (queued or running); it then reads CANCELLED with the
  reason. ``delete`` also deregisters the job's definition (Batch keeps finished jobs).
* ``log_iter`` reads each node's CloudWatch Logs stream and can follow it while it runs.
* Workspaces are built into an image and pushed to ``image_repo`` (needs the ``docker``
  extra: ``pip install torchx-sched-batch[workspace]``).
* Before anything is pushed or registered, ``schedule`` checks the region, the credentials
  and the queue, so a mistake costs one clear error line and leaves nothing behind.

boto3 is imported only when AWS is contacted: ``--dryrun``, ``runopts`` and ``--help`` never
import it.

This module is the entry point; its wing, ``torchx.schedulers._aws_batch``, holds the rest:

* ``request``: run options, the job definition and the job, a sweep's array job;
* ``status``: ``DescribeJobs`` answers to app status, waiting and timeline, attempts, a
  sweep's elements;
* ``failure``: Batch's reasons and exit codes to root causes;
* ``logs``: CloudWatch Logs streams (the progress tail too);
* ``readiness``: ``torchx check``;
* ``client``: boto3's clients and AWS's errors as one line.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from torchx.schedulers._aws_batch import client as batch_client
from torchx.schedulers._aws_batch import logs, readiness
from torchx.schedulers._aws_batch import request as jobdef
from torchx.schedulers._aws_batch import status as batch_status
from torchx.schedulers._aws_batch.client import (
    AWSBatchError,
    AWSCredentialsError,
    AWSRegionError,
    BatchQueueError,
)
from torchx.schedulers._aws_batch.logs import to_datetime, to_millis_since_epoch
from torchx.schedulers._aws_batch.request import (
    DEFAULT_ROLE_NAME,
    ENV_TORCHX_ROLE_IDX,
    ENV_TORCHX_ROLE_NAME,
    AWSBatchOpts,
    BatchJob,
    Opts,
    ResourceType,
    array_job,
    parse_ulimits,
    resource_from_resource_requirements,
    resource_requirements_from_resource,
)
from torchx.schedulers._aws_batch.status import CANCEL_REASON, JOB_STATE
from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    LogQuery,
    Scheduler,
    with_full_job_id,
)
from torchx.schedulers.shared import labels
from torchx.specs.api import (
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    Role,
    is_terminal,
    runopts,
)
from torchx.specs.sweep import AppArray
from torchx.util.support.user import current_user
from torchx.version import __version__
from torchx.workspace.docker_workspace import DockerWorkspaceMixin

TYPE_CHECKING = False
if TYPE_CHECKING:
    import docker

    from torchx.schedulers.list_filter import ListFilter
    from torchx.util.readiness import ReadinessCheck

TORCHX_PLUGIN_API = 1
"""The torchx plugin contract this module was built against (torchx.util.plugin_api)."""

__all__ = [
    "CANCEL_REASON",
    "DEFAULT_ROLE_NAME",
    "ENV_TORCHX_ROLE_IDX",
    "ENV_TORCHX_ROLE_NAME",
    "JOB_STATE",
    "TAG_TORCHX_APPNAME",
    "TAG_TORCHX_USER",
    "TAG_TORCHX_VER",
    "AWSBatchError",
    "AWSBatchOpts",
    "AWSBatchScheduler",
    "AWSCredentialsError",
    "AWSRegionError",
    "BatchJob",
    "BatchQueueError",
    "Opts",
    "ResourceType",
    "create_scheduler",
    "parse_ulimits",
    "resource_from_resource_requirements",
    "resource_requirements_from_resource",
    "to_datetime",
    "to_millis_since_epoch",
]

TAG_TORCHX_VER = labels.VERSION
TAG_TORCHX_APPNAME = labels.APP_NAME
TAG_TORCHX_USER = labels.USER

_LIST_PAGE = 100
"""Job summaries per ListJobs call (at most 100 per DescribeJobs call follow them)."""
_DESCRIBE_BATCH = 100
"""DescribeJobs takes at most 100 job ids per call."""


def _split_app_id(app_id: str) -> tuple[str, str]:
    queue, sep, name = app_id.partition(":")
    if not sep or not queue or not name:
        raise ValueError(
            f"malformed aws_batch app id {app_id!r}; expected <queue>:<job name>, as in"
            " aws_batch://torchx/my-queue:trainer-bx3k9"
        )
    return queue, name


_Rows = list[ListAppResponse]
_Names = list[str]
_Summaries = list[dict[str, Any]]


def _token_pages(what: str, fn: Any, key: str, **kwargs: Any) -> Iterator[_Summaries]:
    """The ``key`` items of each page of a Batch call that pages with ``nextToken``, a
    page asked for only when the one before is used."""
    while True:
        page = batch_client.api_call(what, fn, **kwargs)
        yield list(page.get(key) or [])
        if not page.get("nextToken"):
            return
        kwargs["nextToken"] = page["nextToken"]


def _oldest_first(apps: Iterable[tuple[int, ListAppResponse]]) -> _Rows:
    return [row for _, row in sorted(apps, key=lambda pair: pair[0])]


def _may_be_in(summary: Mapping[str, Any], states: frozenset[AppState]) -> bool:
    """Whether a job of this summary's status can be in one of ``states`` (a FAILED job
    may read CANCELLED, which only its description tells)."""
    state = batch_status.app_state(summary)
    return state in states or (state == AppState.FAILED and AppState.CANCELLED in states)


def _job_def_name(job: Mapping[str, Any]) -> str:
    """``arn:...:job-definition/<name>:<revision>`` -> ``<name>``."""
    return str(job.get("jobDefinition", "")).rpartition("/")[2].rpartition(":")[0]


class AWSBatchScheduler(DockerWorkspaceMixin, Scheduler[Opts]):
    """Submits apps to AWS Batch as multi-node jobs (see the module docstring).

    ``client`` (Batch) and ``log_client`` (CloudWatch Logs) are used when given; otherwise
    each thread gets its own clients from the standard boto3 chain.
    """

    def __init__(
        self,
        session_name: str,
        client: Any | None = None,
        log_client: Any | None = None,
        docker_client: docker.DockerClient | None = None,
    ) -> None:
        super().__init__("aws_batch", session_name, docker_client=docker_client)
        self.__client = client
        self.__log_client = log_client

    @property
    def _client(self) -> Any:
        return self.__client if self.__client is not None else batch_client.thread_client("batch")

    @property
    def _log_client(self) -> Any:
        return (
            self.__log_client
            if self.__log_client is not None
            else batch_client.thread_client("logs")
        )

    # -- options and validation ------------------------------------------------------------

    def load_for_check(self) -> None:
        """boto3 and botocore (a second or more to import on a busy machine)."""

        for module in ("torchx.schedulers._aws_batch.readiness", "boto3", "botocore.config"):
            with contextlib.suppress(ImportError):  # missing: check_ready says so
                importlib.import_module(module)

    def check_ready(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ReadinessCheck]:
        """Credentials and region, then the configured queue and its compute."""

        return readiness.checks(dict(cfg or {}))

    supports_arrays = True  # a sweep is one array job (_aws_batch.status)

    def _run_opts(self) -> runopts:
        return Opts.as_runopts()

    def _pre_build_validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Checks what needs no AWS call, before a workspace is built."""
        opts = Opts.from_cfg(cfg)
        if not str(opts.queue or "").strip():
            raise ValueError(
                "no AWS Batch job queue given; set it with -cfg queue=<name> (or `queue` in"
                " the [aws_batch] section of .torchxconfig)"
            )
        jobdef.check_role_count(app)
        if opts.ulimits:
            parse_ulimits(opts.ulimits)
        if not 0 <= int(opts.priority) <= 9999:
            raise ValueError(f"priority={opts.priority} is out of range; use 0 to 9999")
        jobdef.retry_strategy(app)

    def build_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """Builds the roles' workspaces, once it is sure the images can be pushed."""
        if any(role.workspace for role in roles) and not cfg.get("image_repo"):
            raise ValueError(
                "a workspace is built into an image that AWS Batch must pull; set the"
                " repository to push it to with -cfg image_repo=<registry/repo> (e.g. an ECR"
                " repository), or run without a workspace (--workspace '')"
            )
        super().build_workspaces(roles, cfg)

    # -- dry run ---------------------------------------------------------------------------

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[BatchJob]:
        opts = Opts.from_cfg(cfg)
        name = jobdef.job_name_for(app.name, opts.share_id)
        images_to_push = self.dryrun_push_images(app, cfg)
        app = with_full_job_id(app, f"{opts.queue}:{name}")  # $TORCHX_JOB_ID = the handle
        container_extra: dict[str, Any] = {"privileged": bool(opts.privileged)}
        if opts.ulimits:
            container_extra["ulimits"] = parse_ulimits(opts.ulimits)
        if opts.job_role_arn:
            container_extra["jobRoleArn"] = opts.job_role_arn
        if opts.execution_role_arn:
            container_extra["executionRoleArn"] = opts.execution_role_arn

        if isinstance(app, AppArray):  # a sweep: one array job
            container, submit = array_job(app, name, name, container_extra)
        else:
            num_nodes, ranges = jobdef.node_ranges(app, name, container_extra)
        tags = {
            TAG_TORCHX_VER: __version__,
            TAG_TORCHX_APPNAME: app.name,
            TAG_TORCHX_USER: str(opts.user),
            **{str(k): str(v) for k, v in app.metadata.items()},
        }
        job_def: dict[str, Any] = {"jobDefinitionName": name}
        if isinstance(app, AppArray):
            job_def.update(type="container", containerProperties=container)
        else:
            submit = {}
            job_def.update(
                type="multinode",
                nodeProperties={
                    "numNodes": num_nodes,
                    "mainNode": 0,
                    "nodeRangeProperties": ranges,
                },
            )
        job_def.update(retryStrategy=jobdef.retry_strategy(app), tags=tags)
        if opts.share_id:
            job_def["schedulingPriority"] = int(opts.priority)
        request = BatchJob(
            name=name,
            queue=str(opts.queue),
            share_id=opts.share_id,
            job_def=job_def,
            images_to_push=images_to_push,
            submit=submit,
        )
        return AppDryRunInfo(request, str)

    # -- submit ----------------------------------------------------------------------------

    def _check_queue(self, request: BatchJob) -> None:
        """Fails with one line unless ``request.queue`` exists, is enabled and matches the
        share id (a fair-share queue needs one, a plain queue refuses one)."""
        client = self._client
        found = batch_client.api_call(
            f"look up the AWS Batch job queue {request.queue}",
            client.describe_job_queues,
            jobQueues=[request.queue],
        )["jobQueues"]
        if not found:
            region = client.meta.region_name
            names = [
                str(q["jobQueueName"])
                for q in batch_client.api_call(
                    "list the AWS Batch job queues", client.describe_job_queues, maxResults=20
                )["jobQueues"]
            ]
            known = f"queues there: {', '.join(names)}" if names else "it has no queues"
            raise BatchQueueError(
                f"AWS Batch job queue {request.queue!r} does not exist in region {region}"
                f" ({known}); set -cfg queue=<name>, or the region with AWS_DEFAULT_REGION"
            )
        queue = found[0]
        if queue.get("state") == "DISABLED":
            raise BatchQueueError(
                f"AWS Batch job queue {request.queue!r} is DISABLED and takes no jobs;"
                " enable it or pick another queue with -cfg queue=<name>"
            )
        fair_share = bool(queue.get("schedulingPolicyArn"))
        if fair_share and not request.share_id:
            raise BatchQueueError(
                f"AWS Batch job queue {request.queue!r} has a fair-share scheduling policy;"
                " set the share with -cfg share_id=<identifier>"
            )
        if request.share_id and not fair_share:
            raise BatchQueueError(
                f"AWS Batch job queue {request.queue!r} has no scheduling policy, so it takes"
                " no share identifier; drop -cfg share_id"
            )

    def schedule(self, dryrun_info: AppDryRunInfo[BatchJob]) -> str:
        request = dryrun_info.request
        self._check_queue(request)
        if request.images_to_push:
            self.push_images(request.images_to_push, quiet=bool(dryrun_info._cfg.get("quiet")))
        client = self._client
        job_def_arn = batch_client.api_call(
            f"register the job definition {request.name}",
            client.register_job_definition,
            **request.job_def,
        )["jobDefinitionArn"]
        submit: dict[str, Any] = {
            "jobName": request.name,
            "jobQueue": request.queue,
            "jobDefinition": job_def_arn,
            "tags": request.job_def["tags"],
            **request.submit,
        }
        if request.share_id:
            submit["shareIdentifier"] = request.share_id
        try:
            batch_client.api_call(f"submit the job {request.name}", client.submit_job, **submit)
        except BaseException:
            # leave nothing behind: the definition exists only for this job (the submit
            # error is the one to report)
            with contextlib.suppress(Exception):
                client.deregister_job_definition(jobDefinition=job_def_arn)
            raise
        return f"{request.queue}:{request.name}"

    # -- finding and describing jobs -------------------------------------------------------

    def _find_job(self, app_id: str) -> dict[str, Any] | None:
        """The newest job summary named like the app in its queue (None if none)."""
        queue, name = _split_app_id(app_id)
        pages = _token_pages(
            f"list the jobs of queue {queue}",
            self._client.list_jobs,
            "jobSummaryList",
            jobQueue=queue,
            filters=[{"name": "JOB_NAME", "values": [name]}],
        )
        try:
            summaries = [
                s
                for page in pages
                for s in page
                if s["jobName"] == name and ":" not in str(s.get("jobId", ""))  # not a child
            ]
        except AWSBatchError as e:
            if e.code == "ClientException" and "queue" in str(e).lower():
                return None  # no such queue: no such app
            raise
        if not summaries:
            return None
        return max(summaries, key=lambda s: int(s.get("createdAt") or 0))

    def _describe_jobs(self, ids: list[str]) -> list[dict[str, Any]]:
        jobs: list[dict[str, Any]] = []
        for start in range(0, len(ids), _DESCRIBE_BATCH):
            chunk = ids[start : start + _DESCRIBE_BATCH]
            jobs += batch_client.api_call("describe jobs", self._client.describe_jobs, jobs=chunk)[
                "jobs"
            ]
        return jobs

    def _job_and_nodes(self, app_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        summary = self._find_job(app_id)
        if summary is None:
            return None
        job_id = str(summary["jobId"])
        num_nodes = int((summary.get("nodeProperties") or {}).get("numNodes") or 0)
        if num_nodes:  # Batch tells the node count up front: one call for all
            found = self._describe_jobs([job_id, *(f"{job_id}#{i}" for i in range(num_nodes))])
        else:
            found = self._describe_jobs([job_id])
            if found:
                num_nodes = int((found[0].get("nodeProperties") or {}).get("numNodes") or 0)
                if num_nodes and found[0].get("status") not in ("SUBMITTED", "PENDING"):
                    found += self._describe_jobs([f"{job_id}#{i}" for i in range(num_nodes)])
        parent = next((j for j in found if j.get("jobId") == job_id), None)
        if parent is None:
            return None
        exit_code = (summary.get("container") or {}).get("exitCode")
        if exit_code is not None and "exitCode" not in (parent.get("container") or {}):
            # some answers (emulators) keep the exit code on the summary only
            parent = {
                **parent,
                "container": {**(parent.get("container") or {}), "exitCode": exit_code},
            }
        return parent, [j for j in found if j.get("jobId") != job_id]

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        found = self._job_and_nodes(app_id)
        if found is None:
            return None

        if batch_status.is_array(found[0]):  # a sweep: its children are its elements
            parent = found[0]
            children = self._describe_jobs(batch_status.child_ids(parent))
            return batch_status.describe_array(app_id, parent, children, tail=self._log_tail)
        response = batch_status.describe_response(app_id, *found, tail=self._log_tail)
        parent, nodes = found
        first = next((n for n in nodes if str(n.get("jobId", "")).endswith("#0")), parent)
        response.progress_tail = functools.partial(self._log_tail, first)  # read when asked
        return response

    def _log_tail(self, job: Mapping[str, Any]) -> str:
        """The end of a (node) job's CloudWatch stream (its last events, 64 KiB): a root
        cause, or ``torchx.progress``'s reports."""
        stream = batch_status.log_stream_of(job)
        return logs.tail(self._log_client, stream) if stream else ""

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """TorchX's jobs (by tag, every status) in every queue, or in the ``queue`` of
        ``cfg``, oldest first: ListJobs pages followed to the end (upstream stopped at
        100 per queue), one DescribeJobs call per page of candidates."""
        return _oldest_first(self._apps(cfg, None))

    def list_filtered(self, cfg: Mapping[str, CfgVal] | None, list_filter: ListFilter) -> _Rows:
        """``--since`` becomes Batch's own ``AFTER_CREATED_AT`` filter and ``--state`` is
        applied to the job summaries, so only matching jobs are described."""
        return list_filter.apply(_oldest_first(self._apps(cfg, list_filter)))

    def list_iter(
        self, cfg: Mapping[str, CfgVal] | None = None, list_filter: ListFilter | None = None
    ) -> Iterator[ListAppResponse]:
        """The apps of each ListJobs page as soon as that page is described."""
        for _, row in self._apps(cfg, list_filter):
            if list_filter is None or list_filter.apply([row]):
                yield row

    def _apps(
        self, cfg: Mapping[str, CfgVal] | None, list_filter: ListFilter | None
    ) -> Iterator[tuple[int, ListAppResponse]]:
        """(created at, row) of TorchX's jobs, page by page: each ListJobs page's
        candidates (named like their job definition, in a wanted state) are described in
        one call and the tagged ones yielded before the next page is asked for."""
        queue = (cfg or {}).get("queue")
        queues = [str(queue)] if queue else self._queue_names()
        since_ms = int((list_filter.since or 0) * 1000) if list_filter else 0
        states = list_filter.states if list_filter else None
        for name in queues:
            for page in self._job_summary_pages(name, since_ms):
                ids = [
                    str(summary["jobId"])
                    for summary in page
                    # TorchX names the job definition like the job: skip others unread
                    if _job_def_name(summary) == summary.get("jobName")
                    and ":" not in str(summary["jobId"])  # a sweep's child: its array is listed
                    and (states is None or _may_be_in(summary, states))
                ]
                for job in self._describe_jobs(ids):
                    tags = job.get("tags") or {}
                    if TAG_TORCHX_VER not in tags:
                        continue
                    waits = batch_status.waiting(job)
                    row = ListAppResponse(
                        app_id=f"{name}:{job['jobName']}",
                        state=batch_status.app_state(job),
                        name=str(tags.get(TAG_TORCHX_APPNAME, "")),
                        waiting=waits.reason if waits is not None else "",
                        submitted=int(job.get("createdAt") or 0) / 1000 or None,
                    )
                    yield int(job.get("createdAt") or 0), row

    def _queue_names(self) -> _Names:
        pages = _token_pages(
            "list the AWS Batch job queues", self._client.describe_job_queues, "jobQueues"
        )
        return [str(q["jobQueueName"]) for page in pages for q in page]

    def _job_summary_pages(self, queue: str, since_ms: int) -> Iterator[_Summaries]:
        """The queue's job summaries created after ``since_ms``, every status (what the
        filter makes Batch list), a page at a time."""
        return _token_pages(
            f"list the jobs of queue {queue}",
            self._client.list_jobs,
            "jobSummaryList",
            jobQueue=queue,
            filters=[{"name": "AFTER_CREATED_AT", "values": [str(since_ms)]}],
            maxResults=_LIST_PAGE,
        )

    # -- cancel / delete -------------------------------------------------------------------

    def cancel(self, app_id: str) -> None:
        """Terminates the job (queued or running); Batch ends it FAILED with our reason,
        which reads as CANCELLED. One lookup of the job (unknown ids are ignored)."""
        self._terminate(app_id, self._find_job(app_id))

    def delete(self, app_id: str) -> None:
        """Terminates the job if it still runs and deregisters its job definition (Batch
        itself keeps a record of finished jobs for a while)."""
        summary = self._find_job(app_id)
        self._terminate(app_id, summary)
        if summary is None or not summary.get("jobDefinition"):
            return
        batch_client.api_call(
            f"deregister the job definition of {app_id}",
            self._client.deregister_job_definition,
            jobDefinition=str(summary["jobDefinition"]),
        )

    def _cancel_existing(self, app_id: str) -> None:
        self.cancel(app_id)

    def _delete_existing(self, app_id: str) -> None:
        self.delete(app_id)

    def _terminate(self, app_id: str, summary: dict[str, Any] | None) -> None:
        if summary is None or is_terminal(
            JOB_STATE.get(str(summary.get("status")), AppState.UNKNOWN)
        ):
            return
        batch_client.api_call(
            f"terminate the job of {app_id}",
            self._client.terminate_job,
            jobId=str(summary["jobId"]),  # the id: some emulators ignore an ARN here
            reason=f"{CANCEL_REASON} (user {current_user()})",
        )

    # -- logs ------------------------------------------------------------------------------

    def _log_lines(self, query: LogQuery) -> Iterable[str]:
        """Lines of replica ``k`` of ``role_name`` from its node's CloudWatch Logs stream.

        Batch writes stdout and stderr to one stream, so only the combined stream exists.
        Where Batch reports no node jobs (emulators), the job's own stream is the main
        node's.
        """
        if query.stream != "combined":
            raise ValueError(
                f"aws_batch has no separate {query.stream} log: Batch writes stdout and stderr of"
                " a node to one CloudWatch stream; use the combined stream"
            )
        app_id = query.app_id
        found = self._job_and_nodes(app_id)
        if found is None:
            raise ValueError(f"unknown aws_batch app {app_id!r}: no such job in the queue")
        job, nodes = found
        job_id = str(job["jobId"])

        if batch_status.is_array(job):  # a sweep's element: its child job's stream
            ids = batch_status.child_ids(job)
            if not 0 <= query.k < len(ids):
                raise ValueError(f"sweep {app_id} has elements 0..{len(ids) - 1}; no {query.k}")
            node_index, node_job_id, nodes = -1, ids[query.k], []
        else:
            node_index = self._node_index(app_id, job, query.role_name, query.k)
            node_job_id = f"{job_id}#{node_index}"
        main_node = int((job.get("nodeProperties") or {}).get("mainNode") or 0)
        # the first lookup answers from the DescribeJobs just made (a sweep's element: its
        # child was not among them), later ones ask again
        fresh: list[dict[str, Any]] | None = None if node_index < 0 else [job, *nodes]

        def locate() -> tuple[str | None, bool]:
            """(the node's stream, whether it has ended): at most one DescribeJobs call."""
            nonlocal fresh
            jobs = fresh if fresh is not None else self._describe_jobs([job_id, node_job_id])
            fresh = None
            found = {j.get("jobId"): j for j in jobs}
            parent, node = found.get(job_id), found.get(node_job_id)
            parent_ended = parent is None or is_terminal(batch_status.app_state(parent))
            if node is not None:
                return batch_status.log_stream_of(node), is_terminal(
                    batch_status.app_state(node)
                ) or parent_ended
            if parent is not None and parent_ended and node_index == main_node:
                return batch_status.log_stream_of(parent), True
            return None, parent_ended

        return logs.iter_log_events(
            self._log_client, locate, query.since, query.until, query.follow
        )

    @staticmethod
    def _node_index(app_id: str, job: Mapping[str, Any], role_name: str, k: int) -> int:
        properties = job.get("nodeProperties") or {}
        num_nodes = int(properties.get("numNodes") or 0)
        roles: list[str] = []
        for node_range in properties.get("nodeRangeProperties") or []:
            container = node_range.get("container") or {}
            env = {e["name"]: e.get("value") for e in container.get("environment") or []}
            name = str(env.get(ENV_TORCHX_ROLE_NAME, DEFAULT_ROLE_NAME))
            roles.append(name)
            if name != role_name:
                continue
            first, last = jobdef.parse_target_nodes(
                str(node_range.get("targetNodes", "0")), num_nodes
            )
            if not 0 <= k <= last - first:
                raise ValueError(
                    f"role {role_name!r} of app {app_id} has replicas 0..{last - first};"
                    f" there is no replica {k}"
                )
            return first + k
        raise ValueError(
            f"app {app_id} has no role {role_name!r}; its roles are: {', '.join(roles)}"
        )


def create_scheduler(
    session_name: str,
    client: Any | None = None,
    log_client: Any | None = None,
    docker_client: docker.DockerClient | None = None,
    **kwargs: Any,
) -> AWSBatchScheduler:
    """Entry point of ``aws_batch``; unknown ``kwargs`` are ignored."""
    del kwargs
    return AWSBatchScheduler(
        session_name=session_name,
        client=client,
        log_client=log_client,
        docker_client=docker_client,
    )
