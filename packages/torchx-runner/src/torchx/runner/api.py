"""The TorchX runner: launch, watch, stop and inspect apps on any registered scheduler.

``Runner`` is the Python SDK behind the ``torchx`` CLI. It turns a component or an
:class:`~torchx.specs.AppDef` into a scheduler request (``dryrun``), submits it
(``schedule``) and answers questions about the resulting app handle
(``<scheduler>://<session>/<app_id>``). Every lookup goes through the scheduler, so a
handle printed by another process (or another machine, for remote schedulers) works
just as well as one launched by this runner.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Mapping
from types import TracebackType

from torchx.runner._reads import ReadMethods
from torchx.runner._requested_as import requested_as
from torchx.runner._requests import (
    ENV_PARENT_RUN_ID,
    Unbuilt,
    check_roles,
    copy_app,
    fill_event,
    inject_env,
    keep_request,
    kept_request,
    rendered_request,
    runcfg_json,
    scheduler_params_from_env,
    str_metadata,
    str_or_none,
    target_of,
    with_key,
)
from torchx.runner._trackers import finish_tracked_app, get_configured_trackers
from torchx.runner._workspaces import build_planned, built_images, prepare_workspaces
from torchx.runner.events import log_event
from torchx.runner.sweep import (
    SweepMethods,
    check_sweep,
)
from torchx.schedulers import get_scheduler_factories
from torchx.schedulers.api import Stream
from torchx.schedulers.ids import keyed_ids
from torchx.specs.api import (
    NONE,
    AppDef,
    AppDryRunInfo,
    AppHandle,
    CfgVal,
    Role,
    UnknownSchedulerException,
    Workspace,
    macros,
    make_app_handle,
    parse_app_handle,
    runopts,
)
from torchx.specs.builders import materialize_appdef
from torchx.specs.finder import get_component
from torchx.specs.sweep import AppArray
from torchx.util.log import get_logger
from torchx.util.startup.static_typing import overload
from torchx.util.strings import carried_env
from torchx.util.support.host_checks import is_real_submit, real_submit
from torchx.util.support.retry import outage_budget

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, TypeVar

    from torchx.schedulers import SchedulerFactory
    from torchx.schedulers.api import Scheduler
    from torchx.specs.api import Role
    from torchx.specs.status import AppStatus

__all__ = ["NONE", "Runner", "S", "Stream", "get_configured_trackers", "get_runner"]

logger = get_logger(__name__)


def __getattr__(name: str) -> Any:
    """``S``, upstream's type variable for a scheduler's request type, made when asked for
    (``Stream``, which upstream's module re-exported, is imported above: launchers import
    it from here)."""
    if name == "S":
        from typing import TypeVar

        variable = globals()["S"] = TypeVar("S")
        return variable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    S = TypeVar("S")
    T = TypeVar("T")

DEFAULT_SESSION_NAME = "torchx"
"""Session name of runners made by :func:`get_runner` (part of every app handle)."""


_EVENT_WAIT_S = 60.0
"""How long :meth:`Runner.wait` lets a scheduler with an event source block between two
checks: it returns at the first change anyway, so a long window only saves calls (an API
server is asked once a minute, not every ``wait_interval``, while nothing happens)."""


class Runner(SweepMethods, ReadMethods):
    """Launches and manages apps on the registered schedulers.

    Args:
        name: session name, the middle part of every app handle this runner creates.
        scheduler_factories: ``{scheduler name: factory}``; defaults to every registered
            scheduler (``torchx.schedulers.get_scheduler_factories()``).
        component_defaults: ``{component name: {param: default as string}}``, typically
            the ``[component:<name>]`` sections of ``.torchxconfig``.
        scheduler_params: extra kwargs for every scheduler factory. They win over the
            ``TORCHX_<X>`` environment variables, which are also passed (as ``<x>``).

    Schedulers are created lazily on first use and closed by :meth:`close` (or on leaving
    a ``with`` block).
    """

    def __init__(
        self,
        name: str = "",
        scheduler_factories: Mapping[str, SchedulerFactory] | None = None,
        component_defaults: Mapping[str, Mapping[str, str]] | None = None,
        scheduler_params: Mapping[str, object] | None = None,
    ) -> None:
        if scheduler_factories is None:
            scheduler_factories = get_scheduler_factories()
        self._name = name
        self._scheduler_factories: dict[str, SchedulerFactory] = dict(scheduler_factories)
        self._scheduler_params: dict[str, object] = {
            **scheduler_params_from_env(),
            **(scheduler_params or {}),
        }
        self._scheduler_instances: dict[str, Scheduler[Any]] = {}
        self._instances_lock = threading.Lock()  # one instance per scheduler, whatever thread
        self._apps: dict[AppHandle, AppDef] = {}
        self._found_by_key: set[AppHandle] = set()
        self._component_defaults: dict[str, dict[str, str]] = {
            k: dict(v) for k, v in (component_defaults or {}).items()
        }

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Runner:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]:
        self.close()
        return False

    def close(self) -> None:
        """Closes every scheduler this runner created. Safe to call more than once."""
        instances = list(self._scheduler_instances.values())
        self._scheduler_instances.clear()
        for scheduler in instances:
            scheduler.close()

    def name(self) -> str:
        """The session name (middle part of the app handles this runner creates)."""
        return self._name

    def __repr__(self) -> str:
        return (
            f"Runner(name={self._name!r}, schedulers={list(self._scheduler_factories)},"
            f" apps={list(self._apps)})"
        )

    # ------------------------------------------------------------------ launching

    def run_component(  # noqa: PLR0917 (positional order is the public API)
        self,
        component: str,
        component_args: list[str] | dict[str, Any],
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> AppHandle:
        """Materializes ``component`` with ``component_args`` and runs it on ``scheduler``.

        ``component`` is a registered name (``dist.ddp``, ``utils.echo``...) or
        ``path/to/file.py:function``. ``component_args`` is either CLI-style
        (``["--script", "train.py", "-j", "2x4"]``) or a dict of parameter values.
        Returns the app handle.

        Args:
            component: a registered name or ``path/to/file.py:function``.
            component_args: the component's arguments, CLI-style or as a dict.
            scheduler: the scheduler's name (``local_cwd``, ``slurm``, ``kubernetes``...).
            cfg: run options (``torchx runopts SCHEDULER`` lists them); ``.torchxconfig``
                fills in what is not given.
            workspace: local code to ship with the job (a directory, or a
                :class:`~torchx.specs.Workspace`); how it ships is the scheduler's
                (an image build, a ``job_dir`` copy).
            parent_run_id: the tracker run this job's run descends from.
            idempotency_key: submit at most once per key and target: when an app with
                this key exists already on the target (the scheduler and the run options
                that choose where), its handle is returned and nothing is submitted. The
                key is the app's ``$TORCHX_RUN_ID``.

        Returns:
            The app handle, ``SCHEDULER://SESSION/APP_ID``.

        Raises:
            ComponentNotFoundException: no component of that name (nor ``file.py:function``).
            ComponentArgumentError: an argument is unknown, missing or does not parse.
            InvalidRunConfigException: a run option is missing or of the wrong type.
            ValueError: the app or a run option is refused before anything is submitted
                (the message names the fix).
        """
        with (
            log_event("run_component", scheduler, workspace=str_or_none(workspace)) as ctx,
            real_submit(),
        ):
            dryrun_info = self.dryrun_component(
                component,
                component_args,
                scheduler,
                cfg=cfg,
                workspace=workspace,
                parent_run_id=parent_run_id,
                idempotency_key=idempotency_key,
            )
            handle = self.schedule(dryrun_info)
            fill_event(ctx, dryrun_info, handle)
            return handle

    def dryrun_component(  # noqa: PLR0917 (positional order is the public API)
        self,
        component: str,
        component_args: list[str] | dict[str, Any],
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> AppDryRunInfo[Any]:
        """What :meth:`run_component` would submit, without submitting it (see :meth:`dryrun`).

        Args:
            component: a registered name or ``path/to/file.py:function``.
            component_args: the component's arguments, CLI-style or as a dict (an unknown
                key is refused, with the nearest argument's name).
            scheduler: the scheduler's name.
            cfg: run options; ``.torchxconfig`` fills in what is not given.
            workspace: local code to ship with the job.
            parent_run_id: the tracker run this job's run would descend from.
            idempotency_key: the key :meth:`schedule` will submit it with (see
                :meth:`run_component`).

        Returns:
            The rendered request; print it to see what would be submitted.

        Raises:
            ComponentNotFoundException: no component of that name (nor ``file.py:function``).
            ComponentArgumentError: an argument is unknown, missing or does not parse.
            InvalidRunConfigException: a run option is missing or of the wrong type.
            ValueError: the app or a run option is refused before anything is submitted
                (the message names the fix).
        """

        component_def = get_component(component)
        cli_args = component_args if isinstance(component_args, list) else []
        json_args = component_args if isinstance(component_args, dict) else {}
        app = materialize_appdef(
            component_def.fn,
            cli_args,
            self._component_defaults.get(component),
            json_args,
        )
        with requested_as(component, component_args):
            return self.dryrun(
                app,
                scheduler,
                cfg=cfg,
                workspace=workspace,
                parent_run_id=parent_run_id,
                idempotency_key=idempotency_key,
            )

    @overload
    def run(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
        *,
        dryrun: Literal[False] = False,
        idempotency_key: str | None = None,
    ) -> AppHandle: ...

    @overload
    def run(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
        *,
        dryrun: Literal[True],
        idempotency_key: str | None = None,
    ) -> AppDryRunInfo[Any]: ...

    @overload
    def run(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
        *,
        dryrun: bool,
        idempotency_key: str | None = None,
    ) -> AppHandle | AppDryRunInfo[Any]: ...

    def run(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
        *,
        dryrun: bool = False,
        idempotency_key: str | None = None,
    ) -> AppHandle | AppDryRunInfo[Any]:
        """Runs ``app`` on ``scheduler`` and returns its handle.

        With ``dryrun=True`` nothing is submitted and the rendered request
        (:class:`~torchx.specs.AppDryRunInfo`) is returned instead. ``app`` itself is
        never modified.

        Args:
            app: what to run.
            scheduler: the scheduler's name (``local_cwd``, ``slurm``, ``kubernetes``...).
            cfg: run options; ``.torchxconfig`` fills in what is not given.
            workspace: local code to ship with the job (see :meth:`run_component`).
            parent_run_id: the tracker run this job's run descends from.
            dryrun: render the request instead of submitting it.
            idempotency_key: submit at most once per key and target (see
                :meth:`run_component`).

        Returns:
            The app handle, or with ``dryrun=True`` the rendered request.

        Raises:
            InvalidRunConfigException: a run option is missing or of the wrong type.
            ValueError: the app or a run option is refused before anything is submitted.
        """
        with log_event(
            "run", scheduler, runcfg=runcfg_json(cfg), workspace=str_or_none(workspace)
        ) as ctx:
            if dryrun:
                return self.dryrun(
                    app,
                    scheduler,
                    cfg=cfg,
                    workspace=workspace,
                    parent_run_id=parent_run_id,
                    idempotency_key=idempotency_key,
                )
            with real_submit():
                dryrun_info = self.dryrun(
                    app,
                    scheduler,
                    cfg=cfg,
                    workspace=workspace,
                    parent_run_id=parent_run_id,
                    idempotency_key=idempotency_key,
                )
                handle = self.schedule(dryrun_info)
            fill_event(ctx, dryrun_info, handle)
            return handle

    def schedule(
        self, dryrun_info: AppDryRunInfo[Any], *, idempotency_key: str | None = None
    ) -> AppHandle:
        """Submits a request previously rendered by :meth:`dryrun`; returns the app handle.

        The request may be edited in between (``dryrun_info.request``) for scheduler
        features TorchX does not expose. A dry run leaves workspaces unbuilt; they are
        built here and the request rendered again (edit a request only after
        ``dryrun(..., build_workspaces=True)``, which builds them at once).

        Args:
            dryrun_info: what :meth:`dryrun` returned.
            idempotency_key: submit at most once per key and target (see
                :meth:`run_component`); by default the key the dry run was given. Another
                key renders the request again.

        Returns:
            The app handle, ``SCHEDULER://SESSION/APP_ID``.

        Raises:
            ValueError: ``dryrun_info`` did not come from :meth:`dryrun`, or the
                scheduler refused the request (the message names the fix).
        """
        scheduler = dryrun_info._scheduler
        if scheduler is None:
            raise ValueError(
                "this AppDryRunInfo was not produced by Runner.dryrun (it names no"
                " scheduler); render it with runner.dryrun(app, scheduler) first"
            )
        with (
            log_event("schedule", scheduler, runcfg=runcfg_json(dryrun_info._cfg)) as ctx,
            real_submit(),
        ):
            sched = self._scheduler(scheduler)
            key = dryrun_info.idempotency_key
            if idempotency_key is not None and idempotency_key != key:
                dryrun_info = with_key(sched, dryrun_info, idempotency_key)
                key = idempotency_key
            if key is None:
                dryrun_info = build_planned(sched, dryrun_info)
                app_id = sched.schedule(dryrun_info)
            else:
                info = dryrun_info

                def submit() -> str:
                    built = build_planned(sched, info)
                    return sched.schedule(built)

                from torchx.runner._idempotency import submit_once  # with a key only

                app_id, submitted = submit_once(
                    sched,
                    key,
                    cfg=dryrun_info._cfg,
                    submit=submit,
                    handle_of=lambda found: make_app_handle(scheduler, self._name, found),
                    target=target_of(scheduler, dryrun_info._cfg),
                    request=kept_request(dryrun_info),
                )
                if not submitted:
                    self._found_by_key.add(make_app_handle(scheduler, self._name, app_id))
            handle = make_app_handle(scheduler, self._name, app_id)
            app = dryrun_info._app
            if app is not None:
                self._apps[handle] = app
            fill_event(ctx, dryrun_info, handle)
            return handle

    @overload
    def build_workspace(
        self, app_or_role: Role, scheduler: str, cfg: Mapping[str, CfgVal] | None = None
    ) -> str | None: ...

    @overload
    def build_workspace(
        self, app_or_role: AppDef, scheduler: str, cfg: Mapping[str, CfgVal] | None = None
    ) -> dict[tuple[str, Workspace], str]: ...

    def build_workspace(
        self,
        app_or_role: AppDef | Role,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
    ) -> dict[tuple[str, Workspace], str] | str | None:
        """Builds workspaces once, for many submissions; ``app_or_role`` is not changed.

        Pin the result onto each app with :func:`torchx.workspace.pin_workspace_images`
        and submit them: none rebuilds. For an ``AppDef`` the result maps each
        ``(image, workspace)`` pair of its roles, as written, to the image built from it
        (a pair, not a role name, so it applies to other apps; roles sharing a pair are
        built once). For a ``Role``, its built image, or ``None`` when it has no
        workspace. Only ``Role.workspace`` is read (not ``run``'s ``workspace=``), and the
        app is neither validated nor rendered into a request.

        A role whose build changed more than its image (a builder that also sets ``env``,
        say) cannot be pinned: its pair is left out, with a warning, and rebuilt at each
        submission. A scheduler without workspaces gives ``{}`` (``None`` for a role).
        """
        with log_event("build_workspace", scheduler):
            return built_images(self._scheduler(scheduler), app_or_role, scheduler, cfg)

    def found_by_idempotency_key(self, app_handle: AppHandle) -> bool:
        """Whether this runner returned ``app_handle`` for an idempotency key because the
        app existed already (nothing was submitted)."""
        return app_handle in self._found_by_key

    def dryrun(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
        *,
        build_workspaces: bool = False,
        idempotency_key: str | None = None,
    ) -> AppDryRunInfo[Any]:
        """Renders the request ``app`` would be submitted as, without submitting it.

        Works on a copy of ``app`` (available as ``info.app``): the copy gets the TorchX
        env vars (job id, session id, trackers, parent run id). ``$TORCHX_PARENT_RUN_ID``
        wins over ``parent_run_id``. Print the result to see the request.

        Nothing on this host is required or changed: a program or file missing here is
        one warning line, and workspaces are planned, not built (no Docker daemon, no
        ``job_dir`` copy; the roles show the image a build would give), unless
        ``build_workspaces=True``. :meth:`schedule` builds what is left.

        Args:
            app: what would run.
            scheduler: the scheduler's name.
            cfg: run options; ``.torchxconfig`` fills in what is not given.
            workspace: local code to ship with the job (see :meth:`run_component`).
            parent_run_id: the tracker run this job's run would descend from.
            build_workspaces: build the workspaces now (images, ``job_dir`` copies).
            idempotency_key: the key :meth:`schedule` will submit it with: the app is
                named by it and ``$TORCHX_RUN_ID`` is the key (see :meth:`run_component`).

        Returns:
            The rendered request (``info.request``), with the app it was made from
            (``info.app``).

        Raises:
            InvalidRunConfigException: a run option is missing or of the wrong type.
            ValueError: the app has no roles, a role no entrypoint, a refused env name,
                a NUL byte or an absurd replica count.
        """
        if not app.roles:
            raise ValueError(
                f"app {app.name!r} has no roles; add at least one specs.Role to AppDef.roles"
            )
        if idempotency_key is not None:
            # hashing and locks only for a run with a key (bench_cli: run --dryrun)
            from torchx.runner._idempotency import check_key

            check_key(idempotency_key)
        sched = self._scheduler(scheduler)

        env_parent = os.environ.get(ENV_PARENT_RUN_ID)
        if env_parent:
            logger.info("using %s=%s as the tracker parent run id", ENV_PARENT_RUN_ID, env_parent)
            parent_run_id = env_parent

        check_roles(app)
        if isinstance(app, AppArray):
            check_sweep(app, sched)
        app = copy_app(app)
        for role in app.roles:
            role.env = carried_env(role.name, role.env)
        inject_env(
            app,
            make_app_handle(scheduler, self._name, macros.app_id),
            parent_run_id,
            idempotency_key,
        )
        if idempotency_key is not None:
            keep_request(app, scheduler, cfg)

        resolved_cfg: dict[str, CfgVal]
        with log_event(
            "dryrun",
            scheduler,
            app_id=app.name,
            app_image=app.roles[0].image,
            app_metadata=str_metadata(app.metadata),
            runcfg=runcfg_json(cfg),
            workspace=str_or_none(workspace),
        ):
            resolved_cfg = sched.run_opts().resolve(cfg or {})
            sched._pre_build_validate(app, scheduler, resolved_cfg)
            build = build_workspaces or is_real_submit()
            unbuilt = prepare_workspaces(sched, app, workspace, resolved_cfg, build)
            sched._validate(app, scheduler, resolved_cfg)
            with keyed_ids(idempotency_key):
                dryrun_info = sched.submit_dryrun(app, resolved_cfg)
            dryrun_info._scheduler = scheduler
            dryrun_info.idempotency_key = idempotency_key
            if unbuilt is not None:
                dryrun_info.unbuilt = Unbuilt(unbuilt, rendered_request(dryrun_info))
        return dryrun_info

    # ------------------------------------------------------------------ schedulers

    def scheduler_run_opts(self, scheduler: str) -> runopts:
        """The run options ``scheduler`` accepts (keys, types, defaults, help).

        Args:
            scheduler: the scheduler's name.

        Returns:
            Its :class:`~torchx.specs.runopts`.

        Raises:
            KeyError: no scheduler of that name is installed.
        """
        return self._scheduler(scheduler).run_opts()

    def cfg_from_str(self, scheduler: str, *cfg_literal: str) -> Mapping[str, CfgVal]:
        """Parses ``"k1=v1,k2=v2"`` run-config strings for ``scheduler``; later ones win.

        Args:
            scheduler: the scheduler's name.
            cfg_literal: the strings, as ``-cfg`` takes them.

        Returns:
            The run options with their values typed.

        Raises:
            InvalidRunConfigException: a value does not parse as its option's type.
        """
        opts = self.scheduler_run_opts(scheduler)
        cfg: dict[str, CfgVal] = {}
        for literal in cfg_literal:
            cfg.update(opts.cfg_from_str(literal))
        return cfg

    def scheduler_backends(self) -> list[str]:
        """Names of the schedulers this runner can use, in registration order.

        Returns:
            The names (``local_cwd`` first when it is installed).
        """
        return list(self._scheduler_factories)

    def _scheduler(self, scheduler: str) -> Scheduler[Any]:
        instance = self._scheduler_instances.get(scheduler)
        if instance is not None:
            return instance
        with self._instances_lock:  # threads (torchx list --progress, torchx ui) share one
            instance = self._scheduler_instances.get(scheduler)
            if instance is None:
                factory = self._scheduler_factories.get(scheduler)
                if factory is None:
                    raise UnknownSchedulerException(scheduler, self._scheduler_factories)
                instance = factory(self._name, **self._scheduler_params)
                self._scheduler_instances[scheduler] = instance
        return instance

    def _scheduler_app_id(self, app_handle: AppHandle) -> tuple[Scheduler[Any], str, str]:
        """(scheduler, scheduler name, app id) of a handle; the session part is ignored."""
        backend, _, app_id = parse_app_handle(app_handle)
        return self._scheduler(backend), backend, app_id

    # ------------------------------------------------------------------ app handles

    def status(
        self, app_handle: AppHandle, *, progress: bool = True, element_progress: bool = False
    ) -> AppStatus | None:
        """The app's current status, or ``None`` if the scheduler does not know it.

        Args:
            app_handle: the app, as :meth:`run` returned it.
            progress: read how far it is (its last ``torchx.progress`` report: one small
                read of its log) once it has started; ``False`` skips that read.
            element_progress: of a sweep, also read each started element's progress from
                its own log (``status.array.elements[i].progress``; one read per element).

        The first read that finds the app ended, with trackers configured
        (``TORCHX_TRACKERS`` or a ``.torchxconfig``), starts one detached helper process
        that tells each tracker how it ended; once per app (a marker file keeps it once
        across processes), never while it runs.

        Returns:
            Its :class:`~torchx.specs.AppStatus`, or ``None``.

        Raises:
            MalformedAppHandleException: the handle is not ``SCHEDULER://SESSION/APP_ID``.
        """
        scheduler, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("status", backend, app_id):
            desc = scheduler.describe(app_id)
            if desc is None:
                self._apps.pop(app_handle, None)
                return None
            # a status read only: not on `torchx run --dryrun`'s path (bench_cli)
            from torchx.runner._status import status_from

            status = status_from(
                desc, scheduler, progress=progress, element_progress=element_progress
            )
            if status.is_terminal():
                finish_tracked_app(app_handle, status.state.name)
            return status

    def wait(
        self,
        app_handle: AppHandle,
        wait_interval: float = 10,
        *,
        on_status: Callable[[AppStatus], None] | None = None,
    ) -> AppStatus | None:
        """Blocks until the app is finished; returns its final status (``None`` if unknown).

        ``on_status`` is called with every status read while the app is not finished (to
        say why it is still pending, for example).

        Between checks the scheduler's ``wait_for_change`` is given up to
        ``wait_interval`` seconds, so schedulers without an event source are polled that
        often. Schedulers with one (``has_event_source``: local_cwd, local_docker,
        kubernetes) return at the first change and are given at least a minute, which only
        saves calls while nothing happens.

        Args:
            app_handle: the app, as :meth:`run` returned it.
            wait_interval: the most seconds between two status reads.
            on_status: called with each status read while the app is not finished.

        Returns:
            The final status, or ``None`` if the scheduler does not know the app.
        """
        scheduler, backend, app_id = self._scheduler_app_id(app_handle)
        window = wait_interval
        if scheduler.has_event_source:
            window = max(wait_interval, _EVENT_WAIT_S)

        # a wait lasts as long as the app: an outage of the scheduler's service (a restart
        # of its controller, a dropped connection) is ridden out, up to TORCHX_OUTAGE_S
        with log_event("wait", backend, app_id), outage_budget():
            while True:
                app_status = self.status(app_handle, progress=False)
                if app_status is None or app_status.is_terminal():
                    return app_status
                if on_status is not None:
                    on_status(app_status)
                scheduler.wait_for_change(app_id, window)

    def cancel(self, app_handle: AppHandle) -> None:
        """Asks the scheduler to stop the app if it is still running; returns at once.

        Args:
            app_handle: the app, as :meth:`run` returned it. An app that has ended, or
                that the scheduler does not know, is left as it is.
        """
        scheduler, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("cancel", backend, app_id):
            app_status = self.status(app_handle, progress=False)
            if app_status is not None and not app_status.is_terminal():
                scheduler.cancel(app_id)

    def stop(self, app_handle: AppHandle) -> None:
        """Deprecated alias of :meth:`cancel`."""
        warnings.warn(
            "Runner.stop() is deprecated; use Runner.cancel()",
            PendingDeprecationWarning,
            stacklevel=2,
        )
        self.cancel(app_handle)

    def delete(self, app_handle: AppHandle) -> None:
        """Removes the app from the scheduler (cancelling it first if it still runs).

        Args:
            app_handle: the app, as :meth:`run` returned it.
        """
        scheduler, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("delete", backend, app_id):
            if self.status(app_handle, progress=False) is not None:
                scheduler.delete(app_id)
            self._apps.pop(app_handle, None)


def get_runner(
    name: str | None = None,
    component_defaults: Mapping[str, Mapping[str, str]] | None = None,
    **scheduler_params: Any,
) -> Runner:
    """A :class:`Runner` over every registered scheduler, session ``"torchx"``.

    ``scheduler_params`` are passed to every scheduler factory. Custom session names
    are deprecated (they only change the middle part of the app handles).

    Example::

        from torchx.runner import get_runner

        with get_runner() as runner:
            handle = runner.run_component("utils.echo", ["--msg", "hi"], "local_cwd")
            print(runner.wait(handle, wait_interval=1))

    Args:
        name: the session name (deprecated: ``"torchx"`` when not given).
        component_defaults: ``{component: {argument: value}}`` defaults (what
            ``[component:NAME]`` sections of ``.torchxconfig`` hold).
        scheduler_params: keyword arguments of every scheduler factory.

    Returns:
        The runner; use it as a context manager so that its schedulers are closed.
    """
    if name:
        warnings.warn(
            "custom session names are deprecated and will be removed; call get_runner()"
            " without a name",
            FutureWarning,
            stacklevel=2,
        )
    else:
        name = DEFAULT_SESSION_NAME
    return Runner(
        name=name,
        component_defaults=component_defaults,
        scheduler_params=scheduler_params,
    )
