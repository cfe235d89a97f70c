"""The apps the dashboard shows: each scheduler listed in its own thread (as ``torchx
list`` lists it), and the status of the apps whose row needs more than the listing says
(a running app's progress, a failed app's root cause), read by a small pool.

Nothing here waits on a scheduler while answering the page: a snapshot is what is known
now, and a scheduler that is slow or down is shown as such (its last error, or
``listing`` while its first answer is awaited).
"""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from torchx.cli.errors import error_line
from torchx.runner import config
from torchx.schedulers import get_default_scheduler_name, get_scheduler_factories
from torchx.specs import make_app_handle
from torchx.specs.api import AppState
from torchx.specs.failure import cause_words
from torchx.specs.progress import metrics_text, progress_cell
from torchx.util.support.config_files import read_config

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from torchx.runner import Runner
    from torchx.schedulers.api import ListAppResponse
    from torchx.specs.api import AppStatus, CfgVal
    from torchx.specs.failure import Failure
    from torchx.specs.progress import Progress

__all__ = [
    "REFRESH_S",
    "AppsSource",
    "SchedulerSource",
    "configured_schedulers",
    "failure_line",
    "progress_json",
]

REFRESH_S = 3.0
"""How often a scheduler is listed again, and a running app's status read again, while
the page is open (each list and read is started only when the last one has answered)."""

DETAIL_READERS = 8
"""Status reads side by side (the progress of running apps, the root cause of failed ones)."""

MAX_DETAILS_PER_ROUND = 64
"""Status reads queued per refresh at most: thousands of failed apps are read over a few
refreshes (newest first), never all at once."""

SLOW_S = 10.0
"""A listing that has not answered by then is shown as not answering (it goes on)."""


def configured_schedulers() -> list[str]:
    """The default scheduler, then every installed scheduler with a section of its own in
    a ``.torchxconfig`` (the files ``torchx run`` reads)."""

    installed = get_scheduler_factories()
    names: list[str] = []
    with contextlib.suppress(RuntimeError):  # none installed: only the configured ones
        names.append(get_default_scheduler_name())
    for path in config.find_configs():
        names += [section for section in read_config(path) if section in installed]
    return list(dict.fromkeys(names))


def failure_line(failure: Failure | None) -> str:
    """``train[1]: exited with code 3: ValueError: bad batch``, the cell of a failed app."""
    if failure is None:
        return ""

    cause = cause_words(failure.cause, failure.exit_code, failure.signal)
    where = f"{failure.role}[{failure.replica_id}]"
    if cause in failure.message:  # it says the cause already (a sweep's names its element)
        return f"{where}: {failure.message}"
    return f"{where}: {cause}" + (f": {failure.message}" if failure.message else "")


def progress_json(progress: Progress | None) -> dict[str, Any] | None:
    """``status --json``'s ``progress`` with the words the pages show beside the bar, as
    ``torchx list --progress`` and ``torchx status`` say them: ``cell`` (``75% (3/4), ETA
    12m``) and ``metrics_line`` (``loss=0.33``)."""
    if progress is None:
        return None

    return {
        **progress.to_json(),
        "cell": progress_cell(progress),
        "metrics_line": metrics_text(progress),
    }


class SchedulerSource:
    """One scheduler's listing, refreshed in a thread of its own."""

    def __init__(self, runner: Runner, name: str, cfg: Mapping[str, CfgVal] | None = None) -> None:
        self.runner = runner
        self.name = name
        self.cfg = dict(cfg or {})
        self.apps: list[ListAppResponse] = []
        self.error: str | None = None
        self.listed_at: float | None = None
        self._started_at: float | None = None
        self._lock = threading.Lock()
        self.answered = threading.Event()

    def refresh(self) -> None:
        """Starts a listing unless one runs or the last one is recent."""
        with self._lock:
            now = time.time()
            if self._started_at is not None:
                return
            if self.listed_at is not None and now - self.listed_at < REFRESH_S:
                return
            self._started_at = now
        threading.Thread(target=self._list, name=f"ui-list-{self.name}", daemon=True).start()

    def _list(self) -> None:
        try:
            cfg: dict[str, Any] = dict(self.cfg)  # -cfg first, then .torchxconfig's
            config.apply(scheduler=self.name, cfg=cfg)
            apps = self.runner.list(self.name, cfg=cfg)
            error = None
        except Exception as e:  # a scheduler that is down is shown, never raised
            apps, error = None, error_line(e)
        with self._lock:
            if apps is not None:
                self.apps = apps
            self.error = error
            self.listed_at = time.time()
            self._started_at = None
        self.answered.set()

    def to_json(self, now: float) -> dict[str, Any]:
        with self._lock:
            if self.error is not None:
                state = "down"
            elif self.listed_at is None:
                slow = self._started_at is not None and now - self._started_at > SLOW_S
                state = "not answering" if slow else "listing"
            else:
                state = "ok"
            return {
                "name": self.name,
                "state": state,
                "error": self.error,
                "listed_at": self.listed_at,
                "apps": len(self.apps),
            }


class _Detail:
    """What a status read added to an app's row."""

    __slots__ = ("failure", "progress", "read_at", "state", "waiting")

    def __init__(self, status: AppStatus | None, read_at: float) -> None:
        self.read_at = read_at
        self.state = status.state if status is not None else None
        self.failure = ""
        self.progress = None
        self.waiting = ""
        if status is not None:
            failed = status.state == AppState.FAILED
            self.failure = failure_line(status.failure) or (status.msg if failed else "")
            self.progress = progress_json(status.progress)
            if status.state == AppState.PENDING and status.waiting is not None:
                self.waiting = status.waiting.reason or status.waiting.phase


class AppsSource:
    """Every configured scheduler's apps, with the details their rows show."""

    def __init__(
        self,
        runner: Runner,
        schedulers: list[str],
        cfgs: Mapping[str, Mapping[str, CfgVal]] | None = None,
    ) -> None:
        self.runner = runner
        cfgs = cfgs or {}
        self.sources = [SchedulerSource(runner, name, cfgs.get(name)) for name in schedulers]
        self._details: dict[str, _Detail] = {}
        self._reading: set[str] = set()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=DETAIL_READERS, thread_name_prefix="ui-status")

    def start(self) -> None:
        """Starts every scheduler's first listing."""
        for source in self.sources:
            source.refresh()

    def scheduler_of(self, app_id: str) -> str | None:
        """The scheduler whose last listing has ``app_id`` (the first one that has it)."""
        for source in self.sources:
            if any(app.app_id == app_id for app in source.apps):
                return source.name
        return None

    def ask_schedulers(self, app_id: str) -> str | None:
        """The first scheduler that knows ``app_id`` when asked (an app newer than its
        last listing, or past a listing's limit); each listing is refreshed too."""
        for source in self.sources:
            source.refresh()
        for source in self.sources:
            try:
                known = self.runner.status(self.handle_of(source.name, app_id), progress=False)
            except Exception:  # a scheduler that is down does not know it: ask the next
                known = None
            if known is not None:
                return source.name
        return None

    def handle_of(self, scheduler: str, app_id: str) -> str:
        """The app's handle as its scheduler listed it, else built from the runner's session."""

        for source in self.sources:
            if source.name == scheduler:
                for app in source.apps:
                    if app.app_id == app_id:
                        return app.app_handle
        return make_app_handle(scheduler, self.runner.name(), app_id)

    def snapshot(self, wait_s: float = 0.0) -> dict[str, Any]:
        """The apps page's data now (after at most ``wait_s`` for first listings)."""
        for source in self.sources:
            source.refresh()
        deadline = time.monotonic() + wait_s
        for source in self.sources:
            source.answered.wait(max(0.0, deadline - time.monotonic()))
        now = time.time()
        rows = []
        wanted: list[tuple[float, str]] = []
        for source in self.sources:
            for app in list(source.apps):
                rows.append(self._row(source.name, app, now, wanted))
        self._read_details(wanted)
        return {
            "now": now,
            "refresh_s": REFRESH_S,
            "schedulers": [source.to_json(now) for source in self.sources],
            "apps": rows,
        }

    def _row(
        self, scheduler: str, app: ListAppResponse, now: float, wanted: list[tuple[float, str]]
    ) -> dict[str, Any]:
        detail = self._details.get(app.app_handle)
        if detail is not None and detail.state != app.state and app.state == AppState.FAILED:
            detail = None  # it failed since the last read: read its root cause
        if app.state == AppState.FAILED and detail is None:
            wanted.append((-(app.submitted or 0.0), app.app_handle))
        elif app.state == AppState.RUNNING and (detail is None or now - detail.read_at > REFRESH_S):
            wanted.append((-(app.submitted or 0.0) - 1e12, app.app_handle))  # running first
        state, waiting = app.state, app.waiting
        if state == AppState.RUNNING and detail is not None and detail.state == AppState.PENDING:
            # the listing's word is the job's (Ray: its driver runs); the status read knows
            # the app still waits (Ray: for its placement group), as `torchx status` says
            state, waiting = AppState.PENDING, detail.waiting
        running = state == AppState.RUNNING
        return {
            "handle": app.app_handle,
            "app_id": app.app_id,
            "name": app.name,
            "scheduler": scheduler,
            "state": state.name,
            "submitted": app.submitted,
            "waiting": waiting or None,
            "progress": detail.progress if detail is not None and running else None,
            "failure": (detail.failure or None) if detail is not None else None,
        }

    def _read_details(self, wanted: list[tuple[float, str]]) -> None:
        with self._lock:
            todo = [handle for _, handle in sorted(wanted) if handle not in self._reading]
            todo = todo[:MAX_DETAILS_PER_ROUND]
            self._reading.update(todo)
        for handle in todo:
            self._pool.submit(self._read, handle)

    def _read(self, handle: str) -> None:
        try:
            status = self.runner.status(handle)
        except Exception:  # shown as no detail; the app page says the error
            status = None
        with self._lock:
            self._details[handle] = _Detail(status, time.time())
            self._reading.discard(handle)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
