"""The :class:`~torchx.runner.Runner`'s reads of apps that exist: their definition and the
scheduler's own request read back, their logs (followed through outages of the
scheduler's service), and the apps a scheduler lists."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from torchx.runner._logs import PatientLog
from torchx.runner._requests import with_app_id
from torchx.runner.events import log_event
from torchx.runner.sweep import element_position, sweep_as_described
from torchx.specs.api import (
    AppDef,
    AppDryRunInfo,
    AppHandle,
    CfgVal,
    UnknownAppException,
    make_app_handle,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from torchx.schedulers.api import ListAppResponse, Scheduler, Stream
    from torchx.schedulers.list_filter import ListFilter
    from torchx.specs.api import AppStatus

__all__ = ["ReadMethods"]


class ReadMethods:
    """What a :class:`~torchx.runner.Runner` reads of the apps its schedulers know."""

    if TYPE_CHECKING:  # what the Runner gives them
        _name: str
        _apps: dict[AppHandle, AppDef]

        def _scheduler(self, scheduler: str) -> Scheduler[Any]: ...

        def _scheduler_app_id(self, app_handle: AppHandle) -> tuple[Scheduler[Any], str, str]: ...

        def status(
            self, app_handle: AppHandle, *, progress: bool = True, element_progress: bool = False
        ) -> AppStatus | None: ...

    def describe_native(self, app_handle: AppHandle) -> AppDryRunInfo[Any] | None:
        """The scheduler's own request of an app already submitted, read back: the same
        :class:`~torchx.specs.AppDryRunInfo` as :meth:`dryrun` gives, its ``request`` of the
        scheduler's type, with what an ``AppDef`` cannot hold. None where the scheduler
        cannot read it back, or the app is gone."""
        scheduler, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("describe_native", backend, app_id):
            info = scheduler.describe_native(app_id)
            if info is not None:
                info._scheduler = backend
            return info

    def describe(self, app_handle: AppHandle) -> AppDef | None:
        """The app's definition, or ``None`` if the scheduler does not know the app.

        Apps launched by this runner return the submitted ``AppDef``; others are rebuilt
        from what the scheduler reports (the app id as name, its roles and metadata).

        Args:
            app_handle: the app, as :meth:`run` returned it.

        Returns:
            The :class:`~torchx.specs.AppDef`, or ``None``.
        """
        scheduler, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("describe", backend, app_id):
            app = self._apps.get(app_handle)
            if app is not None:
                return app
            desc = scheduler.describe(app_id)
            if desc is None:
                return None
            roles = with_app_id(desc.roles, app_id)
            if desc.array is not None:  # a sweep: its elements as the scheduler keeps them
                return sweep_as_described(app_id, roles, desc.metadata, desc.array)
            return AppDef(name=app_id, roles=roles, metadata=desc.metadata)

    def log_lines(  # noqa: PLR0917 (positional order is the public API)
        self,
        app_handle: AppHandle,
        role_name: str | None,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        """Lines logged by replica ``k`` of ``role_name`` (each ends with a newline); with
        no role (``None``), the app's whole log where its scheduler keeps one (Ray's job
        log, as codeflare's ``job.logs()`` asks for it).

        ``regex`` keeps matching lines, ``since``/``until`` bound the time range and
        ``should_tail`` follows the log until the replica ends. Raises
        :class:`~torchx.specs.UnknownAppException` for an app the scheduler does not know.

        Args:
            app_handle: the app, as :meth:`run` returned it.
            role_name: the role whose replica is read (``None``: the whole app's log).
            k: the replica's index in the role; of a sweep, the element's index (as
                ``status`` numbers them; ``ValueError`` for one not in this submission).
            regex: keep only the lines in which it matches (``re.search``).
            since: the earliest time of a line, where the scheduler keeps times.
            until: the latest time of a line, where the scheduler keeps times.
            should_tail: follow the log until the replica ends.
            streams: stdout, stderr or both (``None``: combined).

        Returns:
            The lines, read as they are iterated.

        Raises:
            UnknownAppException: the scheduler does not know the app.
        """
        scheduler, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("log_lines", backend, app_id):
            status = self.status(app_handle, progress=False)
            if status is None:
                raise UnknownAppException(app_handle)
            if status.array is not None and role_name is not None:
                k = element_position(status.array, k)
            lines = scheduler.log_iter(
                app_id,
                role_name,
                k,
                regex,
                since,
                until,
                should_tail,
                streams=streams,
            )
            if not should_tail:
                return lines
            # a followed log lasts as long as the replica: ride out service outages
            return PatientLog(lines)

    def list(
        self,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        *,
        list_filter: ListFilter | None = None,
    ) -> list[ListAppResponse]:
        """The apps ``scheduler`` knows about, with their handles filled in.

        ``cfg`` narrows the listing where the scheduler supports it (e.g. a namespace);
        ``list_filter`` keeps apps by state, start time, name and count
        (:class:`torchx.schedulers.list_filter.ListFilter`), applied by the backend where
        the scheduler can.

        Args:
            scheduler: the scheduler's name.
            cfg: run options that narrow the listing (a namespace, a queue...).
            list_filter: which apps to keep (state, start time, name, count).

        Returns:
            One :class:`~torchx.schedulers.api.ListAppResponse` per app.
        """
        with log_event("list", scheduler):
            sched = self._scheduler(scheduler)
            if list_filter is not None:
                apps = sched.list_filtered(cfg, list_filter)
            else:
                apps = sched.list_with(cfg)
            for app in apps:
                app.app_handle = make_app_handle(scheduler, self._name, app.app_id)
            return apps

    def list_iter(
        self,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        *,
        list_filter: ListFilter | None = None,
    ) -> Iterator[ListAppResponse]:
        """:meth:`list`, app by app as the backend answers: a scheduler whose backend
        pages (Kubernetes, AWS Batch) hands over each page's apps before asking for the
        next, in page order. ``list_filter`` with a ``limit`` needs every app first (it
        keeps the newest).

        Args:
            scheduler: the scheduler's name.
            cfg: run options that narrow the listing.
            list_filter: which apps to keep.

        Returns:
            An iterator of :class:`~torchx.schedulers.api.ListAppResponse`.
        """
        with log_event("list", scheduler):
            sched = self._scheduler(scheduler)
            if list_filter is not None and list_filter.limit is not None:
                apps: Iterable[ListAppResponse] = sched.list_filtered(cfg, list_filter)
            else:
                apps = sched.list_iter(cfg, list_filter)
            for app in apps:
                app.app_handle = make_app_handle(scheduler, self._name, app.app_id)
                yield app
