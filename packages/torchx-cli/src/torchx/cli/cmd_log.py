"""``torchx log``: print (or follow) the logs of an app's replicas.

Every line is prefixed with ``role/replica`` (green on a terminal), one thread per replica.
"""

import argparse
import logging
import re
import sys
import time
from datetime import datetime, timedelta

from torchx.cli._handles import (
    MAX_HANDLE,
    check_scheduler,
    missing_app_error,
    shown,
    split_replica_path,
)
from torchx.cli._logstream import (
    LogPrinter,
    ReplicaLogStreamer,
    find_role_replicas,
    join_streamers,
    prefix_line,
    stream_replicas,
)
from torchx.cli.cmd_base import SubCommand
from torchx.cli.errors import EXIT_USAGE, CliError
from torchx.runner import get_runner
from torchx.schedulers.api import Stream
from torchx.specs import AppState, is_started, make_app_handle
from torchx.util.strings import escape_unprintable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import TextIO

    from torchx.runner import Runner
    from torchx.schedulers.api import Stream
    from torchx.specs.status import ArrayStatus

__all__ = [
    "ID_FORMAT",
    "CmdLog",
    "find_role_replicas",
    "get_logs",
    "parse_time",
    "prefix_line",
    "print_log_lines",
    "validate",
]

logger: logging.Logger = logging.getLogger(__name__)

ID_FORMAT = "SCHEDULER://[SESSION_NAME]/APP_ID/[ROLE_NAME/[REPLICA_IDS,...]]"
_ID_RE = re.compile(r"^\w+://[^/]*/[^/]+(/[^/]+(/(\d+,?)+)?)?$")
_RELATIVE_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_STREAM_CHOICES = ("stdout", "stderr", "combined")
_MAX_POLL_INTERVAL = 1.0


def validate(job_identifier: str) -> None:
    """Fails (exit code 2, a usage error) unless ``job_identifier`` has the form
    :py:data:`ID_FORMAT`."""

    if (
        len(job_identifier) > MAX_HANDLE
        or not job_identifier.isprintable()
        or not _ID_RE.match(job_identifier)
    ):
        raise CliError(
            f"malformed log identifier '{shown(job_identifier)}'; expected {ID_FORMAT},"
            " e.g. local_cwd://torchx/echo-bcd123 or local_cwd://torchx/echo-bcd123/echo/0",
            exit_code=EXIT_USAGE,
        )


def parse_time(text: str) -> "datetime":
    """``2026-08-01T12:00:00`` (ISO 8601) or an age such as ``90s``, ``15m``, ``2h``, ``1d``."""

    value = text.strip()
    relative = _RELATIVE_RE.match(value.lower())
    if relative:
        seconds = float(relative.group(1)) * _UNIT_SECONDS[relative.group(2)]
        return datetime.now() - timedelta(seconds=seconds)
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise CliError(
            f"invalid time '{text}'; use ISO 8601 (2026-08-01T12:00:00) or an age"
            " like 90s, 15m, 2h, 1d",
            exit_code=2,
        ) from None


def _wait_until_started(runner: "Runner", app_handle: str) -> None:
    interval = 0.05
    announced = False
    while True:
        status = runner.status(app_handle)
        if status is None:
            raise missing_app_error(app_handle)
        if is_started(status.state):
            return
        if not announced:
            logger.info("waiting for app %s to start before fetching logs...", app_handle)
            announced = True
        time.sleep(interval)
        interval = min(interval * 2, _MAX_POLL_INTERVAL)


def _all_replicas(
    runner: "Runner", app_handle: str, role_name: "str | None"
) -> "list[tuple[str, int]]":
    app = runner.describe(app_handle)
    if app is None:
        raise missing_app_error(app_handle)
    replicas = find_role_replicas(app, role_name)
    if not replicas:
        # Some schedulers describe no roles; the status still lists the replicas.
        status = runner.status(app_handle)
        if status is not None:
            replicas = [
                (role_status.role, replica.id)
                for role_status in status.roles
                if role_name is None or role_status.role == role_name
                for replica in role_status.replicas
            ]
    if not replicas and role_name is not None:
        roles = ", ".join(role.name for role in app.roles) or "<none>"
        raise CliError(f"app {app_handle} has no role '{role_name}'; its roles: {roles}")
    return replicas


def _failed_replicas(
    runner: "Runner", app_handle: str, role_name: "str | None"
) -> "list[tuple[str, int]]":
    """The failed replicas of the app (of ``role_name``), the root cause first; the root
    cause is said on stderr before the logs."""

    status = runner.status(app_handle)
    if status is None:
        raise missing_app_error(app_handle)
    replicas = [
        (role.role, replica.id)
        for role in status.roles
        if role_name is None or role.role == role_name
        for replica in sorted(role.replicas, key=lambda r: r.id)
        if replica.state == AppState.FAILED
    ]
    root = status.failure
    if root is not None and (root.role, root.replica_id) in replicas:
        replicas.remove((root.role, root.replica_id))
        replicas.insert(0, (root.role, root.replica_id))
        rank = f", rank {root.rank}" if root.rank is not None else ""

        what = escape_unprintable(root.message or root.cause)
        print(
            f"torchx: root cause: {root.role}[{root.replica_id}]{rank}: {what}",
            file=sys.stderr,
            flush=True,
        )
    if not replicas:
        print(f"torchx: {app_handle} has no failed replica ({status.state})", file=sys.stderr)
    return replicas


def get_logs(  # noqa: PLR0917 (positional order is the public API)
    file: "TextIO",
    identifier: str,
    regex: "str | None",
    should_tail: bool = False,
    runner: "Runner | None" = None,
    streams: "Stream | None" = None,
    *,
    since: "datetime | None" = None,
    until: "datetime | None" = None,
    failed: bool = False,
    raw: bool = False,
) -> None:
    """Prints the log lines selected by ``identifier`` (see :py:data:`ID_FORMAT`) to ``file``.

    Without replica ids, waits until the app has started and prints every replica of the
    role (or of all roles). With ``should_tail``, follows the logs until the app ends.
    With ``failed``, only the failed replicas', the root cause's first. The lines are a
    job's own output: their control characters are shown escaped (``\\x1b``) unless
    ``raw``.
    """
    validate(identifier)
    if runner is None:
        with get_runner() as own_runner:
            get_logs(
                file,
                identifier,
                regex,
                should_tail,
                own_runner,
                streams,
                since=since,
                until=until,
                failed=failed,
                raw=raw,
            )
        return

    scheduler, session_name, app_id, after = split_replica_path(identifier)
    check_scheduler(scheduler, context="scheduler in log identifier")
    role_name = after[0] if after else None
    app_handle = make_app_handle(scheduler, session_name or "default", app_id)

    if failed:
        replicas = _failed_replicas(runner, app_handle, role_name)
        if not replicas:
            return
    elif len(after) == 2 and role_name is not None:
        replicas = [(role_name, int(i)) for i in after[1].split(",") if i]
        status = runner.status(app_handle, progress=False)
        if status is None:
            raise missing_app_error(app_handle)
        if status.array is not None:  # a sweep's element is asked for by its index
            for _, i in replicas:
                _check_element(status.array, i)
    else:
        _wait_until_started(runner, app_handle)
        replicas = _all_replicas(runner, app_handle, role_name)

    printer = LogPrinter(file, raw=raw)
    streamers, threads = stream_replicas(
        runner,
        app_handle,
        replicas,
        printer,
        regex=regex,
        should_tail=should_tail,
        streams=streams,
        since=since,
        until=until,
    )
    join_streamers(streamers, threads, on_error=logger.error)


def _check_element(array: "ArrayStatus", index: int) -> None:
    """Fails in one line unless the sweep's submission has element ``index``."""
    if array.position_of(index) is None:
        indices = ", ".join(str(e.index) for e in array.elements)
        raise CliError(f"this sweep has no element {index}; its elements: {indices}")


def print_log_lines(  # noqa: PLR0917 (positional order is upstream's)
    file: "TextIO",
    runner: "Runner",
    app_handle: str,
    role_name: str,
    replica_id: int,
    regex: "str | None",
    should_tail: bool,
    exceptions: "list[BaseException]",
    streams: "Stream | None" = None,
) -> None:
    """Prints one replica's log lines to ``file``, each prefixed ``role/replica``.

    Meant as a thread target (one per replica): an error is appended to ``exceptions``
    instead of raised, so the caller can report it after joining every thread.
    """

    streamer = ReplicaLogStreamer(
        runner,
        app_handle,
        role_name,
        replica_id,
        LogPrinter(file),
        regex=regex,
        should_tail=should_tail,
        streams=streams,
    )
    streamer.run()
    if streamer.error is not None:
        exceptions.append(streamer.error)


class CmdLog(SubCommand):
    """``torchx log [--regex R] [-t] [--streams S] [--since T] [--until T] IDENTIFIER``."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("--regex", type=str, help="only print lines matching this regex")
        subparser.add_argument(
            "-t",
            "--tail",
            "-f",
            "--follow",
            dest="tail",
            action="store_true",
            help="follow the logs until the app ends (-f/--follow as in tail and kubectl)",
        )
        subparser.add_argument(
            "--streams",
            type=str,
            choices=_STREAM_CHOICES,
            default=None,
            help="which output stream to read (default: the scheduler's choice)",
        )
        subparser.add_argument(
            "--since",
            type=str,
            default=None,
            help="only lines logged after this time: ISO 8601 or an age like 15m, 2h",
        )
        subparser.add_argument(
            "--until",
            type=str,
            default=None,
            help="only lines logged before this time: ISO 8601 or an age like 15m, 2h",
        )
        subparser.add_argument(
            "--failed",
            action="store_true",
            help="only the failed replicas' output, the root cause's first",
        )
        subparser.add_argument(
            "--raw",
            action="store_true",
            help="print the output exactly as the job wrote it, escape sequences included"
            " (by default control characters are shown escaped, as \\x1b)",
        )
        subparser.add_argument(
            "identifier",
            type=str,
            metavar=ID_FORMAT,
            help="the app (handle printed by `torchx run`), optionally narrowed to a role"
            " and replica ids",
        )

    def run(self, args: argparse.Namespace) -> None:
        if args.regex is not None:
            try:
                re.compile(args.regex)
            except re.error as e:
                raise CliError(f"invalid --regex '{args.regex}': {e}", exit_code=2) from None
        streams = None
        if args.streams:
            streams = Stream(args.streams)
        since = parse_time(args.since) if args.since else None
        until = parse_time(args.until) if args.until else None
        get_logs(
            sys.stdout,
            args.identifier,
            args.regex,
            should_tail=args.tail,
            streams=streams,
            since=since,
            until=until,
            failed=args.failed,
            raw=args.raw,
        )
