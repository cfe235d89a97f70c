"""``torchx ui``: one local dashboard for every app of the configured schedulers.

Registered in the ``torchx.cli.cmds`` entry-point group by the ``torchx-ui``
distribution, so the CLI itself carries no web stack. The web libraries are imported
only when the command runs (``torchx --help`` stays instant).
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import html
import os
import socket
import sys
import threading

from torchx.cli.cfg import parse_cfg_str_for, scheduler_runopts
from torchx.cli.cmd_base import SubCommand
from torchx.cli.errors import CliError
from torchx.runner import get_runner
from torchx.schedulers import get_scheduler_factories
from torchx.ui._hosts import is_loopback
from torchx.ui._sources import configured_schedulers
from torchx.util.support.atomic import check_private, write_private
from torchx.util.support.home import torchx_home

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    import socket
    from typing import Any

    from torchx.runner import Runner

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "CmdUi"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
"""Tried first when ``--port`` is not given; the next nine ports, then any free one,
when it is taken."""


class CmdUi(SubCommand):
    """``torchx ui [--host 127.0.0.1] [--port N] [--no-browser] [-s SCHEDULERS] [-cfg K=V]``."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument(
            "--host",
            default=DEFAULT_HOST,
            help="address to serve on (default: 127.0.0.1, this machine only; another"
            " address lets anyone who reaches it and has the token cancel your apps)",
        )
        subparser.add_argument(
            "--port",
            type=int,
            default=None,
            help=f"port to serve on (default: {DEFAULT_PORT}, or the next free one; 0: any)",
        )
        subparser.add_argument(
            "--no-browser", action="store_true", help="print the URL only, do not open it"
        )
        subparser.add_argument(
            "-s",
            "--schedulers",
            default=None,
            help="comma-separated schedulers to show, or `all` (default: the default"
            " scheduler and those with a section in .torchxconfig)",
        )
        subparser.add_argument(
            "-cfg",
            "--scheduler_args",
            default=None,
            help="run options for listing, as KEY=VALUE,KEY2=VALUE2: each goes to the"
            " schedulers shown that have it (see `torchx runopts`); .torchxconfig fills in"
            " the rest",
        )

    def run(self, args: argparse.Namespace) -> None:
        if args.port is not None and not 0 <= args.port <= 65535:
            raise CliError(f"--port must be 0-65535, got {args.port}", exit_code=2)
        with get_runner() as runner:
            schedulers = _schedulers(args.schedulers)
            cfgs = _cfgs(runner, schedulers, args.scheduler_args)
            sock = _bind(args.host, args.port)
            serve(runner, schedulers, sock, args.host, open_browser=not args.no_browser, cfgs=cfgs)


def _schedulers(given: str | None) -> list[str]:
    installed = sorted(get_scheduler_factories())
    if given is None:
        names = configured_schedulers()
    elif given.strip() == "all":
        names = installed
    else:
        names = [n.strip() for n in given.split(",") if n.strip()]
        unknown = [n for n in names if n not in installed]
        if unknown:
            close = difflib.get_close_matches(unknown[0], installed, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise CliError(
                f"-s {given}: no scheduler `{unknown[0]}` is installed{hint}; installed:"
                f" {', '.join(installed)}",
                exit_code=2,
            )
    if not names:
        raise CliError(
            "no scheduler to show: install torchx-runner (local_cwd) or name one with -s",
            exit_code=2,
        )
    return names


def _cfgs(runner: Runner, schedulers: list[str], given: str | None) -> dict[str, Any]:
    """``-cfg``'s options, checked and typed, per scheduler shown."""

    if not given:
        return {}
    opts_of = {name: scheduler_runopts(runner, name) for name in schedulers}
    return parse_cfg_str_for(opts_of, given)


def _bind(host: str, port: int | None) -> socket.socket:
    """A listening socket on ``host``: ``port``, else the default port or the next free."""

    candidates = [port] if port is not None else [*range(DEFAULT_PORT, DEFAULT_PORT + 10), 0]
    try:
        family, kind, proto, _, _ = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as e:
        raise CliError(f"--host {host}: not an address of this machine ({e.strerror})") from None
    last: OSError | None = None
    for candidate in candidates:
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError as e:
            sock.close()
            last = e
            if e.errno == errno.EADDRINUSE:
                continue
            raise CliError(f"--host {host}: cannot serve there ({e.strerror})") from None
        sock.listen(128)
        return sock
    raise CliError(
        f"port {port} on {host} is in use ({last.strerror if last else 'taken'}):"
        " choose another with --port N (0: any free port)"
    )


def serve(
    runner: Runner,
    schedulers: list[str],
    sock: socket.socket,
    host: str,
    *,
    open_browser: bool,
    cfgs: dict[str, Any] | None = None,
) -> None:
    """Serves the dashboard on ``sock`` until interrupted; prints its URL first."""

    import uvicorn

    from torchx.ui._auth import new_token
    from torchx.ui._server import create_app

    token = new_token()
    port = sock.getsockname()[1]
    app = create_app(
        runner, schedulers, token=token, port=port, cfgs=cfgs, loopback=is_loopback(host)
    )
    if not is_loopback(host):
        print(
            f"torchx ui: warning: --host {host} is not a loopback address: anyone who can"
            " reach it and has the token can see your apps and cancel them",
            file=sys.stderr,
        )
    shown = socket.gethostname() if host in ("0.0.0.0", "::", "") else host  # noqa: S104
    if ":" in shown:
        shown = f"[{shown}]"
    url = f"http://{shown}:{port}/?token={token}"
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    opener = None
    try:
        print(f"torchx ui: the apps of {', '.join(schedulers)}; Ctrl-C stops it. Open:")
        print(url, flush=True)
        if open_browser:
            import webbrowser

            opener = _opener_file(url.replace("/?token=", "/#token="), port)
            threading.Thread(
                target=webbrowser.open, args=(f"file://{opener}",), daemon=True
            ).start()
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn hands Ctrl-C on once it has shut down
        pass
    finally:
        if opener is not None:
            with contextlib.suppress(OSError):
                os.unlink(opener)
    print("torchx ui: stopped", file=sys.stderr)


def _opener_file(url: str, port: int) -> str:
    """A private page (mode 0600 in ``$TORCHX_HOME/ui``, 0700) that sends the browser on
    to ``url``: the browser is started with this file's path, so the token is not on its
    command line, which ``ps`` shows every user of the machine."""

    directory = os.path.join(torchx_home(), "ui")
    check_private(directory, torchx_home())
    path = os.path.join(directory, f"open-{port}.html")
    shown = html.escape(url, quote=True)
    page = (
        '<!doctype html><meta charset="utf-8"><title>torchx ui</title>'
        f'<meta http-equiv="refresh" content="0;url={shown}">'
        f'<p><a href="{shown}">Open torchx ui</a></p>\n'
    )
    write_private(path, page.encode())
    return path
