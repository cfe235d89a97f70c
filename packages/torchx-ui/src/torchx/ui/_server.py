"""The dashboard's web application (Starlette): two pages, served as files, and the JSON
and event-stream endpoints their scripts read. Every endpoint that calls a scheduler is a
plain function, which Starlette runs in its thread pool; the live log is a thread that
follows the log as ``torchx log -f`` does, feeding a server-sent event stream.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
import time
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from torchx.cli.errors import error_line
from torchx.progress import MARK, is_report_line
from torchx.schedulers.shared.log_files import FOLLOW_STOP
from torchx.specs import parse_app_handle
from torchx.specs.api import AppState
from torchx.specs.failure import cause_words
from torchx.specs.progress import reports_in
from torchx.specs.timeline import waiting_line
from torchx.ui._auth import TokenGate
from torchx.ui._sources import AppsSource, progress_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping
    from typing import Any

    from starlette.requests import Request

    from torchx.runner import Runner
    from torchx.specs.api import AppStatus, CfgVal

__all__ = [
    "FIRST_LIST_WAIT_S",
    "LOG_BATCH_LINES",
    "LOG_LINE_CHARS",
    "LOG_QUEUE_LINES",
    "PROGRESS_POINTS",
    "create_app",
]

STATIC = Path(__file__).parent / "static"

FIRST_LIST_WAIT_S = 1.5
"""How long the first answer of ``/api/apps`` waits for the schedulers' first listings
(a scheduler that has not answered by then is shown as listing, and fills in later)."""

PROGRESS_POINTS = 2000
"""Progress reports kept for the chart of an app (the last ones)."""

LOG_BATCH_LINES = 500
"""Log lines sent in one event at most (a long log arrives in a few events, not thousands)."""

LOG_QUEUE_LINES = 1000
"""Log lines read but not yet sent to a page, at most: then the reader waits."""

LOG_LINE_CHARS = 16384
"""The longest log line a page gets whole (a longer one is cut, and says so)."""


def _json(data: object, status_code: int = 200) -> Response:
    return Response(
        json.dumps(data, default=str), status_code=status_code, media_type="application/json"
    )


def _error(message: str, status_code: int) -> Response:
    return _json({"error": message}, status_code)


class _Refused(Exception):
    """An answer other than the one asked for: the app is not there, a bad parameter."""

    def __init__(self, message: str, status_code: int = 404) -> None:
        super().__init__(message)
        self.status_code = status_code


def _answering(endpoint: Callable[[Request], Response]) -> Callable[[Request], Response]:
    """The endpoint, answering a refusal or a scheduler's error as ``{"error": ...}``
    (502: the scheduler failed, not this server)."""

    def serve(request: Request) -> Response:
        try:
            return endpoint(request)
        except _Refused as e:
            return _error(str(e), e.status_code)
        except Exception as e:
            return _error(error_line(e), 502)

    return serve


class _Api:
    """The endpoints, sharing one runner and one :class:`AppsSource`."""

    def __init__(self, runner: Runner, source: AppsSource) -> None:
        self.runner = runner
        self.source = source
        self._first = True

    def _handle(self, request: Request) -> tuple[str, str]:
        """(scheduler, handle) of the app the request names."""
        app_id = request.path_params["app_id"]
        names = [s.name for s in self.source.sources]
        scheduler = (
            request.query_params.get("scheduler")
            or self.source.scheduler_of(app_id)
            or self.source.ask_schedulers(app_id)  # newer than the last listing
        )
        if not scheduler:
            raise _Refused(f"no app {app_id!r} on {', '.join(names)}; add ?scheduler=NAME")
        if scheduler not in names:  # only what the dashboard shows can be read or cancelled
            raise _Refused(
                f"scheduler {scheduler!r} is not one this dashboard shows ({', '.join(names)})",
                400,
            )
        return scheduler, self.source.handle_of(scheduler, app_id)

    def apps(self, request: Request) -> Response:
        del request
        wait_s, self._first = (FIRST_LIST_WAIT_S if self._first else 0.0), False
        return _json(self.source.snapshot(wait_s))

    def app(self, request: Request) -> Response:
        scheduler, handle = self._handle(request)
        status = self.runner.status(handle)
        if status is None:
            raise _Refused(f"{handle}: the scheduler does not know this app (any more)")
        name = next(
            (a.name for s in self.source.sources for a in s.apps if a.app_handle == handle), ""
        )
        return _json(
            {
                "handle": handle,
                "app_id": request.path_params["app_id"],
                "scheduler": scheduler,
                "name": name,
                "terminal": status.is_terminal(),
                "status": _for_the_page(status),
            }
        )

    def progress(self, request: Request) -> Response:
        _, handle = self._handle(request)
        status = self.runner.status(handle)
        reports = _progress_history(self.runner, handle, status) if status else []
        return _json({"reports": reports})

    def cancel(self, request: Request) -> Response:
        _, handle = self._handle(request)
        self.runner.cancel(handle)
        return _json({"cancelled": handle})

    def retry(self, request: Request) -> Response:
        """Submits a sweep's failed elements again (``torchx run --retry-failed``)."""
        _, handle = self._handle(request)
        try:
            retried = self.runner.retry_failed(handle)
        except ValueError as e:  # not a sweep, none failed, no record of it on this host
            raise _Refused(str(e), 409) from None

        return _json({"retried": handle, "handle": retried, "app_id": parse_app_handle(retried)[2]})

    def log(self, request: Request) -> Response:
        _, handle = self._handle(request)
        role = request.query_params.get("role", "")
        replica = request.query_params.get("replica", "0")
        if not role or not replica.isdigit():
            raise _Refused("name the replica: ?role=NAME&replica=K", 400)
        return StreamingResponse(
            self._follow(handle, role, int(replica)),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _follow(self, handle: str, role: str, replica: int) -> AsyncIterator[str]:
        """Server-sent events: ``lines`` (a JSON list of lines), ``failed`` (why the log
        cannot be read), then ``end`` once the log ends (the app ended).

        Bounded: the reading thread waits while :data:`LOG_QUEUE_LINES` lines are not yet
        sent (a slow page slows the reader, it does not fill the server), a line is cut
        to :data:`LOG_LINE_CHARS` for the page, and once the page goes away the thread
        ends at its next line (an idle local_cwd or Slurm log: at its next poll)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue(maxsize=LOG_QUEUE_LINES)
        stop = threading.Event()

        def put(kind: str, text: str) -> bool:
            """Hands one item to the page, waiting for room; False once the page is gone."""
            future = asyncio.run_coroutine_threadsafe(queue.put((kind, text)), loop)
            while not stop.is_set():
                try:
                    future.result(timeout=0.5)
                    return True
                except concurrent.futures.TimeoutError:
                    continue
                except (RuntimeError, concurrent.futures.CancelledError):  # shutting down
                    break
            future.cancel()
            return False

        def follow() -> None:
            FOLLOW_STOP.set(stop)
            try:
                for line in self.runner.log_lines(handle, role, replica, should_tail=True):
                    if is_report_line(line):
                        continue  # the progress protocol: the chart shows it, not the log
                    if stop.is_set() or not put("line", _cut(line.rstrip("\n"))):
                        return
            except Exception as e:
                put("failed", error_line(e))
            finally:
                put("end", "")

        threading.Thread(target=follow, name="ui-log", daemon=True).start()
        try:
            while True:
                kind, text = await queue.get()
                batch = [text] if kind == "line" else []
                while kind == "line" and len(batch) < LOG_BATCH_LINES and not queue.empty():
                    kind, text = queue.get_nowait()
                    if kind == "line":
                        batch.append(text)
                if batch:
                    yield f"event: lines\ndata: {json.dumps(batch)}\n\n"
                if kind == "failed":
                    yield f"event: failed\ndata: {json.dumps(text)}\n\n"
                elif kind == "end":
                    yield "event: end\ndata: {}\n\n"
                    return
        finally:
            stop.set()  # the page went away: the thread stops at its next line


def _cut(line: str) -> str:
    """``line`` as the page shows it: at most :data:`LOG_LINE_CHARS` characters."""
    if len(line) <= LOG_LINE_CHARS:
        return line
    rest = len(line) - LOG_LINE_CHARS
    return f"{line[:LOG_LINE_CHARS]} [torchx ui: {rest} more characters; torchx log shows them]"


def _for_the_page(status: AppStatus) -> dict[str, Any]:
    """``status --json``'s object with what the page shows as ``torchx status`` says it:
    each replica's state by name (``--json`` keeps upstream's number), ``words`` for the
    failure's and each attempt's cause, the waiting ``line``, the progress ``cell``."""

    found = status.to_json()
    for role in found["roles"]:
        for replica in role["replicas"]:
            replica["state"] = AppState(replica["state"]).name
    for cause in [found["failure"], *found["attempts"]]:
        if cause and cause.get("cause"):
            cause["words"] = cause_words(cause["cause"], cause["exit_code"], cause.get("signal"))
    if status.waiting is not None:
        found["waiting"]["line"] = waiting_line(status.waiting, time.time())
    found["progress"] = progress_json(status.progress)
    return found


def _progress_history(runner: Runner, handle: str, status: AppStatus) -> list[dict[str, Any]]:
    """Every ``torchx.progress`` report in the reporting replica's log, oldest first."""

    if status.progress is not None:
        role, replica = status.progress.role, status.progress.replica_id
    elif status.roles:
        role, replica = status.roles[0].role, 0
    else:
        return []
    return reports_in(runner.log_lines(handle, role, replica, regex=MARK), last=PROGRESS_POINTS)


def create_app(
    runner: Runner,
    schedulers: list[str],
    *,
    token: str,
    port: int,
    cfgs: Mapping[str, Mapping[str, CfgVal]] | None = None,
    loopback: bool = True,
) -> Starlette:
    """The dashboard for the apps of ``schedulers`` (listed with ``cfgs``), behind ``token``,
    served on ``port`` of a loopback address (``loopback``) or of one others reach."""
    source = AppsSource(runner, schedulers, cfgs)
    api = _Api(runner, source)

    def page(name: str) -> Any:
        def serve(request: Request) -> Response:
            del request
            return FileResponse(STATIC / name, headers={"Cache-Control": "no-store"})

        return serve

    routes = [
        Route("/", page("apps.html")),
        Route("/app/{app_id:path}", page("app.html")),
        Route("/api/apps", api.apps),
        Route("/api/app/{app_id:path}", _answering(api.app)),
        Route("/api/progress/{app_id:path}", _answering(api.progress)),
        Route("/api/log/{app_id:path}", _answering(api.log)),
        Route("/api/cancel/{app_id:path}", _answering(api.cancel), methods=["POST"]),
        Route("/api/retry/{app_id:path}", _answering(api.retry), methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        del app
        source.start()  # the first listings are under way before the first page asks
        yield
        source.close()

    return Starlette(
        routes=routes,
        middleware=[Middleware(TokenGate, token=token, port=port, loopback=loopback)],
        lifespan=lifespan,
    )
