"""``torchx list``: the apps a scheduler knows about."""

import argparse
from concurrent.futures import ThreadPoolExecutor

from torchx.cli._handles import check_scheduler
from torchx.cli._json import stream_json_array
from torchx.cli._option_table import add_options, scheduler_options
from torchx.cli._table import format_table
from torchx.cli.cfg import parse_cfg_str, scheduler_runopts
from torchx.cli.cmd_base import SubCommand
from torchx.cli.cmd_run import _default_scheduler
from torchx.cli.errors import CliError
from torchx.runner import config, get_runner
from torchx.schedulers.list_filter import ListFilter, parse_since, parse_states
from torchx.specs.api import AppState
from torchx.specs.progress import progress_cell

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.runner import Runner
    from torchx.schedulers.api import ListAppResponse
    from torchx.schedulers.list_filter import ListFilter
    from torchx.specs.progress import Progress

__all__ = [
    "APP_NAME_HEADER",
    "HANDLE_HEADER",
    "NAME_HEADER",
    "PROGRESS_HEADER",
    "STATUS_HEADER",
    "WAITING_HEADER",
    "CmdList",
]

HANDLE_HEADER = "APP HANDLE"
APP_NAME_HEADER = "APP NAME"
STATUS_HEADER = "APP STATUS"
WAITING_HEADER = "WAITING FOR"
"""The column of why an app waits, shown when one does."""
PROGRESS_HEADER = "PROGRESS"
"""The column of how far each running app is (``--progress``)."""
NAME_HEADER = APP_NAME_HEADER  # upstream's name for it


class CmdList(SubCommand):
    """``torchx list [-s SCHEDULER] [-cfg K=V,...] [--json]``."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        add_options(subparser, "list", scheduler_options("list", "list", _default_scheduler))
        subparser.add_argument(
            "--state",
            type=str,
            help="only apps in these states, e.g. running,pending (comma-separated)",
        )
        subparser.add_argument(
            "--since",
            type=str,
            help="only apps started since: a duration (30m, 12h, 2d, 1w) or a date/time;"
            " on Slurm it sets the accounting window (default: list_days)",
        )
        subparser.add_argument(
            "--name", type=str, help="only apps whose name matches this glob, e.g. 'train*'"
        )
        subparser.add_argument(
            "--limit", type=int, help="at most this many apps, the newest (after the filters)"
        )
        subparser.add_argument(
            "--json",
            action="store_true",
            help="print the apps as a JSON array, one app per line, streamed as the"
            " scheduler pages its answer",
        )
        subparser.add_argument(
            "--progress",
            action="store_true",
            help="add how far each running app is (its last torchx.progress report): one"
            " status read per running app, so only when asked",
        )

    def run(self, args: argparse.Namespace) -> None:
        if not args.scheduler:
            raise CliError("no scheduler is installed; install torchx-runner for local_cwd")
        scheduler = check_scheduler(args.scheduler)
        with get_runner() as runner:
            cfg = parse_cfg_str(
                scheduler_runopts(runner, scheduler), scheduler, args.scheduler_args
            )
            config.apply(scheduler=scheduler, cfg=cfg)
            list_filter = _list_filter(args)
            if args.json:

                def json_row(app: "ListAppResponse") -> dict[str, object]:
                    found: dict[str, object] = {
                        "app_handle": app.app_handle,
                        "app_id": app.app_id,
                        "name": app.name,
                        "state": str(app.state),
                        "waiting": app.waiting or None,
                    }
                    if args.progress:
                        read = _progress_of(runner, app)
                        found["progress"] = read.to_json() if read is not None else None
                    return found

                # streamed: each page of a paging backend is printed as it arrives
                stream_json_array(
                    json_row(app)
                    for app in runner.list_iter(scheduler, cfg=cfg, list_filter=list_filter)
                )
                return
            apps = runner.list(scheduler, cfg=cfg, list_filter=list_filter)
            progress = _progress(runner, apps) if args.progress else []

        rows = [[app.app_handle, app.name, str(app.state)] for app in apps]
        headers = [HANDLE_HEADER, APP_NAME_HEADER, STATUS_HEADER]
        if any(app.waiting for app in apps):  # else upstream's three columns
            headers.append(WAITING_HEADER)
            for row, app in zip(rows, apps, strict=True):
                row.append(app.waiting)
        if args.progress:
            headers.append(PROGRESS_HEADER)
            for row, read in zip(rows, progress, strict=True):
                row.append(progress_cell(read) if read is not None else "")
        print(format_table(rows, headers))


def _progress_of(runner: "Runner", app: "ListAppResponse") -> "Progress | None":
    """How far a running app is (one status read), None for an app that is not running."""

    if app.state != AppState.RUNNING:
        return None
    status = runner.status(app.app_handle)
    return status.progress if status is not None else None


def _progress(runner: "Runner", apps: "list[ListAppResponse]") -> "list[Progress | None]":
    """:func:`_progress_of` of each app, read side by side."""

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda app: _progress_of(runner, app), apps))


def _list_filter(args: argparse.Namespace) -> "ListFilter | None":
    """The filters given on the command line (None: list everything, as upstream)."""
    if args.state is None and args.since is None and args.name is None and args.limit is None:
        return None

    if args.limit is not None and args.limit < 0:
        raise CliError(f"--limit must be 0 or more, got {args.limit}", exit_code=2)
    try:
        return ListFilter(
            states=parse_states(args.state) if args.state is not None else None,
            since=parse_since(args.since) if args.since is not None else None,
            name=args.name,
            limit=args.limit,
        )
    except ValueError as e:
        raise CliError(str(e), exit_code=2) from None
