"""The contract every scheduler implements, plus typed run options (``StructuredOpts``).

A scheduler turns an :class:`~torchx.specs.AppDef` into its native request
(``_submit_dryrun``), submits it (``schedule``) and answers ``describe``/``list``/
``cancel``/``delete``/``log_iter`` for app ids it returned. Everything that is not
abstract has a sensible default so that plugins implement only what they support.
"""

from __future__ import annotations

import abc
import itertools
import re
import sys
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum

from torchx.schedulers.ids import user_key_id
from torchx.settings import ENV_TORCHX_JOB_ID
from torchx.specs.api import (
    NONE,
    NULL_RESOURCE,
    AppDef,
    AppDryRunInfo,
    CfgVal,
    InvalidRunConfigException,
    Role,
    Workspace,
    cases,
    macros,
    runopts,
)
from torchx.specs.states import AppState
from torchx.util.log import get_logger
from torchx.util.readiness import NO_CHECKS, ReadinessCheck
from torchx.util.startup.lazy_dataclass import (
    MISSING,
    Field,
    dataclass,
    field,
    fields,
    shallow_copy,
)
from torchx.util.startup.static_typing import GenericBase
from torchx.util.support.host_checks import real_submit
from torchx.util.types import decode_optional

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast
    from collections.abc import Callable
    from datetime import datetime
    from typing import Any, ClassVar, TypeAlias, TypeVar

    from torchx.schedulers.list_filter import ListFilter
    from torchx.specs.attempts import Attempt
    from torchx.specs.failure import Failure
    from torchx.specs.status import ArrayStatus, RoleStatus
    from torchx.specs.timeline import Phase, Waiting
    from torchx.util.readiness import ReadinessCheck
    from torchx.workspace.api import WorkspaceMixin

    T = TypeVar("T")
    _S = TypeVar("_S", bound="StructuredOpts")
    _Definition: TypeAlias = "ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef"
    # key, type, help, default, required
    _Option: TypeAlias = tuple[str, Any, str, Any, bool]
    # What as_runopts/get_docstrings derive from a class: (options, {field: help} items).
    _Schema: TypeAlias = tuple[tuple[_Option, ...], tuple[tuple[str, str], ...]]
else:
    T = "T"  # the parameter's name: a TypeVar would need typing

__all__ = [
    "DAYS_IN_2_WEEKS",
    "DescribeAppResponse",
    "ListAppResponse",
    "LogQuery",
    "Scheduler",
    "Stream",
    "StructuredOpts",
    "filter_regex",
    "split_lines",
    "split_lines_iterator",
    "stream_name",
    "whole_lines",
    "with_full_job_id",
]

DAYS_IN_2_WEEKS = 14


class Stream(str, Enum):
    """Which output stream of a replica ``log_iter`` reads."""

    STDOUT = "stdout"
    STDERR = "stderr"
    COMBINED = "combined"


@dataclass
class DescribeAppResponse:
    """What a scheduler knows about one app (``None`` from ``describe`` means unknown)."""

    app_id: str = "<NOT_SET>"
    state: AppState = AppState.UNSUBMITTED
    num_restarts: int = -1
    msg: str = NONE
    structured_error_msg: str = NONE
    ui_url: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    roles_statuses: list[RoleStatus] = field(default_factory=list)
    roles: list[Role] = field(default_factory=list)
    failure: Failure | None = None
    """The root cause of a FAILED app (:mod:`torchx.specs.failure`), where the scheduler
    can say more than its state."""
    waiting: Waiting | None = None
    """Why the app waits, while it waits, where the scheduler says
    (:mod:`torchx.specs.timeline`)."""
    timeline: list[Phase] = field(default_factory=list)
    """The phases the app went through, in order, as far as the scheduler knows them."""
    attempts: list[Attempt] | None = None
    """The app's attempts as the scheduler keeps them (oldest first; the current one may
    be left out), None where it keeps no history (:mod:`torchx.specs.attempts`)."""
    array: ArrayStatus | None = None
    """The elements of an array app (a sweep) and their states (:mod:`torchx.specs.sweep`);
    ``None`` for any other app."""
    progress_tail: Callable[[], str] | None = field(default=None, repr=False, compare=False)
    """Reads the end of the log the app reports its progress in (its first role's replica
    0: ``torchx.progress``), where the scheduler can; called only by those who show
    progress (``Runner.status``), so that ``describe`` costs nothing more."""


@dataclass
class ListAppResponse:
    """One row of ``Scheduler.list``; ``Runner.list`` fills in ``app_handle``."""

    app_id: str
    state: AppState
    app_handle: str = "<NOT_SET>"
    name: str = ""
    waiting: str = ""
    """Why the app waits, while it does and where the listing already says it (no extra
    call per app): e.g. Slurm's pending reason."""
    submitted: float | None = field(default=None, compare=False)
    """When the app was submitted (unix seconds), where the listing says it (``torchx ui``
    shows its age); not part of a row's equality."""

    def __hash__(self) -> int:
        return hash((self.app_id, self.app_handle, self.state))


@dataclass(frozen=True)
class LogQuery:
    """One ``log_iter`` call as a scheduler's ``_log_lines`` hook receives it.

    ``stream`` is ``"combined"``, ``"stdout"`` or ``"stderr"`` (already checked); ``follow``
    is ``log_iter``'s ``should_tail``. The regex is not here: ``log_iter`` applies it.
    """

    app_id: str
    role_name: str
    k: int = 0
    stream: str = "combined"
    since: datetime | None = None
    until: datetime | None = None
    follow: bool = False


class Scheduler(abc.ABC, GenericBase[T]):
    """Base class of every scheduler; ``T`` is the type of its run config.

    The run config reaching ``_submit_dryrun`` is the dict resolved by ``run_opts()``;
    schedulers with a :class:`StructuredOpts` class convert it with ``Opts.from_cfg``.
    """

    has_event_source: ClassVar[bool] = False
    """Whether :meth:`wait_for_change` returns at the app's next change (an event stream
    of the backend) instead of sleeping; ``Runner.wait`` then lets it block longer."""

    supports_arrays: ClassVar[bool] = False
    """Whether ``submit_dryrun`` renders an :class:`~torchx.specs.sweep.AppArray` (a
    sweep) as one native array request, and ``describe`` reports its elements; the runner
    refuses a sweep on a scheduler that does not."""

    def __init__(self, backend: str, session_name: str) -> None:
        self.backend = backend
        self.session_name = session_name

    def list_filtered(
        self, cfg: Mapping[str, CfgVal] | None, list_filter: ListFilter
    ) -> list[ListAppResponse]:
        """:meth:`list` narrowed by ``list_filter`` (``torchx list --state/--since/--name/
        --limit``). The default filters the rows of :meth:`list` by state, name and count
        and warns that ``since`` needs the scheduler's help; a scheduler whose backend can
        filter (by time, by state) overrides this."""
        if list_filter.since is not None:
            get_logger(__name__).warning(
                "scheduler `%s` cannot list by start time: --since is not applied", self.backend
            )
        return list_filter.apply(self.list_with(cfg))

    def list_with(self, cfg: Mapping[str, CfgVal] | None) -> list[ListAppResponse]:
        """:meth:`list`, given ``cfg`` when there is one and the method takes it: a plugin
        written for upstream may define ``list(self)``, which a listing without run options
        calls as it is (with options, they cannot narrow its listing)."""
        if not cfg or not _takes_an_argument(self.list):
            return self.list()
        return self.list(cfg)

    def list_iter(
        self, cfg: Mapping[str, CfgVal] | None = None, list_filter: ListFilter | None = None
    ) -> Iterator[ListAppResponse]:
        """The apps of :meth:`list` (or :meth:`list_filtered`) as the backend hands them
        over, for output that streams (``torchx list --json``). A scheduler whose backend
        pages its answer overrides this to yield each page's apps as it arrives (then in
        page order, not oldest first); the default yields the finished list."""
        if list_filter is not None:
            yield from self.list_filtered(cfg, list_filter)
        else:
            yield from self.list_with(cfg)

    def load_for_check(self) -> None:
        """Imports what :meth:`check_ready` needs (its SDK) before ``torchx check`` starts
        counting the probes' time: a busy machine's import of an SDK is not the service
        being slow. Default: nothing to load."""

    def check_ready(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ReadinessCheck]:
        """Cheap, read-only probes of what this scheduler needs (``torchx check``).

        ``cfg`` holds the run options as configured (``.torchxconfig``, ``-cfg``). Each
        returned :class:`torchx.util.readiness.ReadinessCheck` says what was found and,
        for a problem, one fix. Probes must finish within a few seconds, create or change
        nothing and never reveal secrets. Default: no checks (override to add yours).

        Args:
            cfg: run options that pick what is probed (a partition, a namespace...).
        """

        del cfg  # the default probes nothing
        return [ReadinessCheck("checks", NO_CHECKS, f"scheduler `{self.backend}` offers no checks")]

    def close(self) -> None:
        """Releases local resources; idempotent, never raises. Default: nothing to do."""

    def submit(
        self,
        app: AppDef,
        cfg: Mapping[str, CfgVal],
        workspace: str | Workspace | None = None,
    ) -> str:
        """Builds the workspace (if any), renders the request and schedules it.

        Returns the app id. The runner does the same in separate steps; this is the
        one-call form for tests and scripts.

        Args:
            app: what to run.
            cfg: run options (see ``run_opts``).
            workspace: local code to build into the app first (workspace schedulers).
        """

        with real_submit():
            return self._submit(app, cfg, workspace)

    def _submit(
        self, app: AppDef, cfg: Mapping[str, CfgVal], workspace: str | Workspace | None
    ) -> str:
        resolved_cfg = self.run_opts().resolve(cfg)
        if workspace:
            builder = as_workspace_scheduler(self)
            if builder is None:
                raise ValueError(
                    f"scheduler `{self.backend}` does not support workspaces; submit without"
                    " a workspace or use a scheduler that builds them"
                )
            role = app.roles[0]
            role.workspace = (
                Workspace.from_str(workspace) if isinstance(workspace, str) else workspace
            )
            builder.build_workspaces(app.roles, resolved_cfg)
        dryrun_info = self.submit_dryrun(app, resolved_cfg)
        return self.schedule(dryrun_info)

    @abc.abstractmethod
    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        """Submits a request rendered by ``submit_dryrun``; returns the app id.

        Args:
            dryrun_info: a request from :meth:`submit_dryrun`, possibly edited.
        """

    def submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        """Renders the scheduler request for ``app`` without submitting it.

        Each role's ``pre_proc`` hook may rewrite the request afterwards.

        Args:
            app: what would run.
            cfg: run options (see ``run_opts``).
        """
        resolved_cfg = self.run_opts().resolve(cfg)
        dryrun_info = self._submit_dryrun(app, resolved_cfg)
        if isinstance(app, AppDef):
            for role in app.roles:
                dryrun_info = role.pre_proc(self.backend, dryrun_info)
        dryrun_info._app = app
        dryrun_info._cfg = resolved_cfg
        return dryrun_info

    @abc.abstractmethod
    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        """Builds the native request for ``app`` with the resolved ``cfg``."""

    def run_opts(self) -> runopts:
        """The run options this scheduler accepts (plus its workspace options)."""
        opts = self._run_opts()
        builder = as_workspace_scheduler(self)
        if builder is not None:
            opts.update(builder.workspace_opts())
        return opts

    def _run_opts(self) -> runopts:
        """The scheduler's own run options. Default: none."""
        return runopts()

    def configure_placeholders(self) -> tuple[str, ...]:
        """Run options that are not required in every case but that ``torchx configure``
        writes as placeholders to fill in, since the scheduler's defaults need them (the
        Kubernetes scheduler's ``queue`` for its default Volcano job type). Default: none."""
        return ()

    @abc.abstractmethod
    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The app's current state, or ``None`` when the scheduler does not know it.

        Args:
            app_id: the app, as :meth:`schedule` returned it.
        """

    def describe_native(self, app_id: str) -> AppDryRunInfo[Any] | None:
        """The scheduler-native description of the app, when the scheduler has one."""
        del app_id
        return None

    @abc.abstractmethod
    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """The apps this scheduler can see (``cfg`` narrows the scope, e.g. namespace).

        Args:
            cfg: run options that narrow the listing, where the backend has any.
        """

    def find_by_idempotency_key(
        self, key: str, cfg: Mapping[str, CfgVal] | None = None
    ) -> str | None:
        """The id of the app submitted with idempotency ``key`` to the target ``cfg``
        names (namespace, queue, cluster...), or None.

        Default: an app of :meth:`list` whose id ends in the id of this user's key,
        which :func:`~torchx.schedulers.ids.make_unique` gives every app this user
        submits with the key (another user's run of the key is not found). A scheduler
        whose ids are not made that way (Slurm's are numbers) overrides it.
        """

        suffix = f"-{user_key_id(key)}"
        for app in self.list_with(cfg):
            if app.app_id.endswith(suffix):
                return app.app_id
        return None

    def exists(self, app_id: str) -> bool:
        """Whether the scheduler knows ``app_id``."""
        return self.describe(app_id) is not None

    @abc.abstractmethod
    def _cancel_existing(self, app_id: str) -> None:
        """Cancels an app that is known to exist."""

    def cancel(self, app_id: str) -> None:
        """Requests cancellation; non-blocking and idempotent (unknown ids are ignored).

        Args:
            app_id: the app, as :meth:`schedule` returned it.
        """
        if self.exists(app_id):
            self._cancel_existing(app_id)

    def delete(self, app_id: str) -> None:
        """Removes the app from the scheduler (cancelling it if it still runs).

        Args:
            app_id: the app, as :meth:`schedule` returned it.
        """
        if self.exists(app_id):
            self._delete_existing(app_id)

    def _delete_existing(self, app_id: str) -> None:
        """Deletes an app known to exist. Default: cancel it."""
        self._cancel_existing(app_id)

    log_time_bounds: ClassVar[bool] = True
    """Whether ``_log_lines`` honours ``since``/``until``; where not, ``log_iter`` warns once
    per call that they are ignored."""

    def log_iter(  # noqa: PLR0917 (positional order is the public API)
        self,
        app_id: str,
        role_name: str | None,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        """Lines (with trailing newline) logged by replica ``k`` of ``role_name``.

        Args:
            app_id: the app, as ``schedule`` returned it.
            role_name: the role whose replica is read.
            k: the replica's index in the role.
            regex: keep only lines in which it matches (``re.search``).
            since: the earliest time of a line (where the backend keeps times).
            until: the latest time of a line (where the backend keeps times).
            should_tail: follow the log until the replica ends.
            streams: stdout, stderr or both (``None``: combined).

        Written once for every scheduler: it checks the stream, warns where the backend
        cannot bound lines by time (``log_time_bounds``), asks the ``_log_lines`` hook and
        filters by ``regex``. A scheduler implements ``_log_lines``; one that overrides
        ``log_iter`` itself, as upstream's plugins do, keeps working.
        """
        # a role of None (upstream's plugins and SDKs ask so): the app's whole log, where
        # the scheduler has one (Ray); the others say which roles there are
        query = LogQuery(
            app_id, role_name or "", k, stream_name(streams), since, until, should_tail
        )
        if (since or until) and not self.log_time_bounds:
            warnings.warn(
                "this scheduler keeps no times with its log lines: since/until are ignored"
                " and every line is returned",
                stacklevel=2,
            )
        lines = self._log_lines(query)
        return filter_regex(regex, lines) if regex else lines

    def _log_lines(self, query: LogQuery) -> Iterable[str]:
        """The hook behind ``log_iter``: the lines of one replica's stream, unfiltered.

        Errors that need no iteration (unknown app, role or replica; a stream the backend
        does not keep) are raised here, before any line. Schedulers without log access keep
        this default, which raises.
        """
        raise NotImplementedError(
            f"{type(self).__name__} (scheduler `{self.backend}`) does not support"
            " application log iteration; read the logs with the scheduler's own tools"
        )

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        """Blocks until the app may have changed state, or for at most ``timeout`` seconds.

        The runner calls this between ``describe`` polls. Default: sleep ``timeout``;
        schedulers with an event source (``has_event_source``) return as soon as
        something happens.
        """
        del app_id
        time.sleep(max(0.0, timeout))

    def _pre_build_validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Hook run before workspaces are built. Default: nothing."""

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Checks the app after workspaces are built. Default: every role has a resource."""
        for role in app.roles:
            if role.resource == NULL_RESOURCE:
                raise ValueError(
                    f"No resource for role `{role.name}` (image `{role.image}`) on scheduler"
                    f" `{scheduler}`; set Role.resource, e.g. resource=specs.resource(cpu=2,"
                    " memMB=4096) or a named resource"
                )


def as_workspace_scheduler(scheduler: object) -> WorkspaceMixin[Any] | None:
    """``scheduler`` when it builds workspaces (is a ``WorkspaceMixin``), else ``None``.

    Imports nothing: a class can only derive from (or be registered with) ``WorkspaceMixin``
    once ``torchx.workspace.api`` is imported, so while it is not, the answer is ``None``.
    """
    module = sys.modules.get("torchx.workspace.api")
    mixin = getattr(module, "WorkspaceMixin", None)
    if mixin is not None and isinstance(scheduler, mixin):
        workspace_scheduler: WorkspaceMixin[Any] = scheduler
        return workspace_scheduler
    return None


def with_full_job_id(app: AppDef, app_id: str) -> AppDef:
    """``app`` whose roles see ``$TORCHX_JOB_ID`` as the exact handle ``run`` prints, for a
    scheduler whose app id is more than the ``${app_id}`` macro (``NAMESPACE:NAME`` on
    Kubernetes, ``QUEUE:NAME`` on AWS Batch). Roles without it are shared, not copied."""

    roles = []
    for role in app.roles:
        value = role.env.get(ENV_TORCHX_JOB_ID)
        if value is None or macros.app_id not in value:
            roles.append(role)
            continue
        renamed = shallow_copy(role)
        renamed.env = {**role.env, ENV_TORCHX_JOB_ID: value.replace(macros.app_id, app_id)}
        roles.append(renamed)
    copied = shallow_copy(app)  # of its class: a sweep stays one
    copied.roles = roles
    return copied


def stream_name(streams: Stream | str | None) -> str:
    """The stream a ``log_iter`` call asks for: ``stdout``, ``stderr`` or ``combined`` (the
    default); anything else is a one-line ``ValueError``."""
    name = "combined" if streams is None else str(getattr(streams, "value", streams))
    if name not in ("stdout", "stderr", "combined"):
        raise ValueError(f"unknown log stream {name!r}; use stdout, stderr or combined")
    return name


def _takes_an_argument(method: Callable[..., object]) -> bool:
    """Whether the bound ``method`` accepts a positional argument."""
    code = getattr(getattr(method, "__func__", None), "__code__", None)
    if code is not None and not code.co_flags & 0x04:  # no *args: count its parameters
        return bool(code.co_argcount > 1)
    import inspect

    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params
    )


def filter_regex(regex: str, lines: Iterable[str]) -> Iterator[str]:
    """Lazily keeps the lines in which ``regex`` matches (``re.search``)."""

    return filter(re.compile(regex).search, lines)


def split_lines(text: str) -> list[str]:
    """Splits ``text`` into lines that keep their ``\\n`` (the last may lack one)."""
    lines: list[str] = []
    start = 0
    while True:
        idx = text.find("\n", start)
        if idx == -1:
            if start < len(text):
                lines.append(text[start:])
            return lines
        lines.append(text[start : idx + 1])
        start = idx + 1


def split_lines_iterator(chunks: Iterable[str]) -> Iterator[str]:
    """Yields the lines of each chunk (chunks are not joined across boundaries)."""
    for chunk in chunks:
        yield from split_lines(chunk)


MAX_LINE_BYTES = 1 << 20
"""Longest partial line a log streamer holds: a longer line is split (see LINE_SPLIT_MARK)."""

LINE_SPLIT_MARK = b" [torchx: line longer than 1 MiB, continued on the next line]\n"
"""What ends each 1 MiB piece of an over-long log line."""


def whole_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines (each with its ``\n``) of a byte stream that arrives in arbitrary chunks
    (a log streamed by a daemon or an API server); a last partial line is yielded too.

    Splits on ``\n`` only (a ``\r`` of a progress bar ends no line) and works on bytes, so
    a multi-byte character split across two chunks is never cut. The source is closed when
    it is exhausted or the reader stops early.

    A line longer than :data:`MAX_LINE_BYTES` is split there with :data:`LINE_SPLIT_MARK`,
    so a program printing without newlines cannot make the reader hold it all in memory.
    """
    pending = b""
    try:
        for chunk in chunks:
            if b"\n" not in chunk:
                pending += chunk
                while len(pending) >= MAX_LINE_BYTES:
                    yield pending[:MAX_LINE_BYTES] + LINE_SPLIT_MARK
                    pending = pending[MAX_LINE_BYTES:]
                continue
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                yield line + b"\n"
        if pending:
            yield pending
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


# --------------------------------------------------------------------------------------
# StructuredOpts
# --------------------------------------------------------------------------------------

CFG_KEY = "cfg_key"
"""Field metadata key giving an option an external name (``mail-user``)."""

HELP_KEY = "help"
"""Field metadata key holding an option's help text (preferred to an attribute docstring)."""

_DOCSTRINGS: dict[type, dict[str, str]] = {}


def _attribute_docstrings(cls: type) -> dict[str, str]:
    """``{field: docstring}`` from string literals written right after each field.

    Read from the class source with ``ast`` (costly: the whole module is parsed), so only
    for classes that declare fields; classes without source (built with ``exec``) simply
    have no docstrings.
    """
    cached = _DOCSTRINGS.get(cls)
    if cached is not None:
        return cached
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if "__dataclass_fields__" not in vars(klass) or not vars(klass).get("__annotations__"):
            continue
        docs.update(_own_attribute_docstrings(klass))
    _DOCSTRINGS[cls] = docs
    return docs


def _own_attribute_docstrings(klass: type) -> dict[str, str]:
    """The attribute docstrings written in the body of ``klass`` itself.

    Parses the defining module once and finds the class by ``__qualname__`` (cheaper than
    ``inspect.getsource``, which also tokenizes and parses the class a second time).
    """
    import ast
    import inspect
    import linecache

    module = sys.modules.get(klass.__module__)
    path = getattr(module, "__file__", None)
    if module is None or not path:
        return {}
    try:
        tree = ast.parse("".join(linecache.getlines(path, vars(module))))
    except (SyntaxError, ValueError):
        return {}
    class_def = _find_class(tree, klass.__qualname__)
    if class_def is None:
        return {}
    docs: dict[str, str] = {}
    for stmt, following in itertools.pairwise(class_def.body):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[stmt.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _find_class(tree: ast.Module, qualname: str) -> ast.ClassDef | None:
    """The first class definition with ``qualname`` (``f.<locals>.C`` included)."""
    import ast

    def definitions(body: list[ast.stmt]) -> Iterator[_Definition]:
        """Class and function definitions of one scope, also inside ``if``/``try``/..."""
        for stmt in body:
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                yield stmt
                continue
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.stmt):
                    yield from definitions([child])
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    yield from definitions(child.body)

    scope: list[ast.stmt] = tree.body
    found: _Definition | None = None
    for part in qualname.split("."):
        if part == "<locals>":
            continue
        found = next((d for d in definitions(scope) if d.name == part), None)
        if found is None:
            return None
        scope = found.body
    return found if isinstance(found, ast.ClassDef) else None


def _is_group(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, StructuredOpts)


class _OptionField:
    """One dataclass field of a StructuredOpts class, as an option.

    A plain class, not a dataclass: generating dataclass methods costs start-up time.
    """

    __slots__ = (
        "default",
        "has_default",
        "has_factory",
        "help",
        "key",
        "name",
        "required",
        "spellings",
        "type",
    )

    def __init__(self, f: Field, option_type: Any) -> None:
        has_default = f.default is not MISSING
        has_factory = f.default_factory is not MISSING
        self.name = f.name
        self.key = str(f.metadata.get(CFG_KEY, f.name))
        self.type = option_type
        self.required = not (has_default or has_factory)
        self.default: Any = f.default if has_default else None
        self.has_default = has_default or has_factory
        self.has_factory = has_factory
        help_text = f.metadata.get(HELP_KEY)
        self.help = None if help_text is None else str(help_text)
        camel = cases.snake_to_camel(self.name)
        self.spellings = tuple(dict.fromkeys((self.key, self.name, camel)))


_FIELDS: dict[type, list[_OptionField]] = {}


def _type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, without importing typing when every string
    annotation is plain Python in its class's module (``int``, ``str | None``,
    ``list[str]``): an options class is read by every command that uses its scheduler."""
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        module = sys.modules.get(klass.__module__)
        namespace = dict(vars(module)) if module is not None else {}
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            value = annotation
            if isinstance(annotation, str):
                try:
                    # what get_type_hints does with it: the class's own source code
                    value = eval(annotation, namespace, dict(vars(klass)))  # noqa: S307
                except Exception:  # a name only typing knows how to resolve
                    import typing

                    return typing.get_type_hints(cls)
            hints[name] = type(None) if value is None else value
    return hints


def _option_fields(cls: type) -> list[_OptionField]:
    cached = _FIELDS.get(cls)
    if cached is not None:
        return cached

    hints = _type_hints(cls)
    result = [
        _OptionField(f, decode_optional(hints.get(f.name, f.type)))
        for f in fields(cls)
        if not f.name.startswith("_") and f.init
    ]
    _FIELDS[cls] = result
    return result


def _help_texts(cls: type) -> dict[str, str]:
    """``{field: help}`` of the plain (non-group) options of ``cls``.

    Metadata help wins; the class source is read for attribute docstrings only when some
    option has no metadata help; the field name is the last resort.
    """
    fields = [f for f in _option_fields(cls) if not _is_group(f.type)]
    texts = {f.name: f.help for f in fields if f.help is not None}
    if len(texts) < len(fields):
        docs = _attribute_docstrings(cls)
        for f in fields:
            if f.help is None:
                texts[f.name] = docs.get(f.name, f.name)
    return texts


_SCHEMAS: dict[type, _Schema] = {}


def _schema(cls: type[StructuredOpts]) -> _Schema:
    """The options and help texts of ``cls``, computed once per class."""
    cached = _SCHEMAS.get(cls)
    if cached is not None:
        return cached
    texts = _help_texts(cls)
    options: list[_Option] = []
    docstrings: list[tuple[str, str]] = []
    for f in _option_fields(cls):
        if _is_group(f.type):
            for sub_key, sub_opt in f.type.as_runopts():
                options.append(
                    (
                        f"{f.key}.{sub_key}",
                        sub_opt.opt_type,
                        sub_opt.help,
                        sub_opt.default,
                        sub_opt.is_required,
                    )
                )
            docstrings += [(f"{f.name}.{sub}", t) for sub, t in f.type.get_docstrings().items()]
            continue
        options.append((f.key, f.type, texts[f.name], f.default, f.required))
        docstrings.append((f.name, texts[f.name]))
    schema = (tuple(options), tuple(docstrings))
    _SCHEMAS[cls] = schema
    return schema


@dataclass
class StructuredOpts(Mapping[str, CfgVal]):
    """Typed run options declared as dataclass fields; also a read-only ``Mapping``.

    Subclass it with ``@dataclass``; each field is one option. Its help text is the
    ``help`` entry of the field's metadata or else the string literal written on the line
    after the field (reading that needs the class source, which is slower)::

        @dataclass
        class Opts(StructuredOpts):
            log_dir: str | None = field(
                default=None, metadata={"help": "Directory to write logs to."}
            )
            cache: bool = False
            \"\"\"Reuse downloaded artifacts.\"\"\"

    A field without a default is a required option. ``field(metadata={"cfg_key":
    "mail-user"})`` gives an option a name that is not an identifier. A field whose
    type is another ``StructuredOpts`` is a nested group (``k8s.context`` keys). Keys
    may be written in camelCase (``logDir``) anywhere a cfg is read.
    """

    # ---- schema -------------------------------------------------------------------
    @classmethod
    def as_runopts(cls) -> runopts:
        """The ``runopts`` schema for this class (nested groups as ``group.key``).

        Computed once per class; each call returns a new ``runopts`` the caller may change.
        """
        opts = runopts()
        for key, type_, help_text, default, required in _schema(cls)[0]:
            opts.add(key, type_, help_text, default=default, required=required)
        return opts

    @classmethod
    def get_docstrings(cls) -> dict[str, str]:
        """``{field: help text}``; nested groups contribute ``group.field`` entries."""
        return dict(_schema(cls)[1])

    @classmethod
    def from_cfg(cls: type[_S], cfg: Mapping[str, CfgVal]) -> _S:
        """Builds an instance from a cfg dict (snake, camelCase or ``cfg_key`` keys).

        Missing keys keep the field default; unknown keys are ignored. The same option
        given under two spellings with different values is an error.
        """
        if isinstance(cfg, cls):
            return cfg
        kwargs: dict[str, Any] = {}
        for f in _option_fields(cls):
            if _is_group(f.type):
                prefixes = tuple(f"{s}." for s in f.spellings)
                sub_cfg = {
                    k[len(p) :]: v
                    for k, v in cfg.items()
                    for p in prefixes
                    if isinstance(k, str) and k.startswith(p)
                }
                if sub_cfg or f.required:
                    kwargs[f.name] = f.type.from_cfg(sub_cfg)
                continue
            found = [(s, cfg[s]) for s in f.spellings if s in cfg]
            if not found:
                continue
            first_key, value = found[0]
            for other_key, other in found[1:]:
                if other != value:
                    raise InvalidRunConfigException(
                        f"Run option `{f.key}` is given twice with different values:"
                        f" {first_key}={value!r} and {other_key}={other!r}; keep one spelling",
                        f.key,
                        cfg,
                    )
            if value is None and f.has_factory:
                continue  # resolve() reports an unset factory default as None
            kwargs[f.name] = value
        return cls(**kwargs)

    # ---- Mapping protocol --------------------------------------------------------------
    def _lookup(self, key: str) -> Any:
        """The value of option ``key``; ``LookupError`` when it is not an option."""
        obj: Any = self
        for part in _split_key(type(self), key):
            if obj is None:  # an unset optional nested group
                return None
            obj = getattr(obj, part)
        return obj

    def __getitem__(self, key: str) -> CfgVal:
        if not isinstance(key, str):
            raise KeyError(key)
        try:
            value = self._lookup(key)
        except LookupError:
            raise KeyError(
                f"`{key}` is not an option of {type(self).__name__};"
                f" options: {', '.join(self) or '<none>'}"
            ) from None
        result: CfgVal = value
        return result

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        try:
            self._lookup(key)
        except LookupError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        for f in _option_fields(type(self)):
            if _is_group(f.type):
                value = getattr(self, f.name)
                sub_keys: Iterable[str] = (
                    iter(value) if value is not None else _external_keys(f.type)
                )
                for sub in sub_keys:
                    yield f"{f.key}.{sub}"
            else:
                yield f.key

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __or__(self, other: Mapping[str, CfgVal]) -> dict[str, CfgVal]:
        merged: dict[str, CfgVal] = dict(self.items())
        merged.update(other.items())
        return merged

    def __ror__(self, other: Mapping[str, CfgVal]) -> dict[str, CfgVal]:
        merged: dict[str, CfgVal] = dict(other.items())
        merged.update(self.items())
        return merged


def _external_keys(cls: type[StructuredOpts]) -> Iterator[str]:
    for f in _option_fields(cls):
        if _is_group(f.type):
            for sub in _external_keys(f.type):
                yield f"{f.key}.{sub}"
        else:
            yield f.key


def _split_key(cls: type, key: str) -> tuple[str, ...]:
    """The attribute path for an external key; ``LookupError`` when it is no option."""
    fields = _option_fields(cls)
    for f in fields:
        for spelling in f.spellings:
            if key == spelling and not _is_group(f.type):
                return (f.name,)
            if _is_group(f.type) and key.startswith(f"{spelling}."):
                return (f.name, *_split_key(f.type, key[len(spelling) + 1 :]))
    snake = cases.camel_to_snake(key)
    if snake != key:
        return _split_key(cls, snake)
    raise LookupError(key)
