"""``torchx ui``: a local web dashboard of every app on every configured scheduler.

``pip install torchx-ui`` adds the ``torchx ui`` subcommand (entry point ``ui`` in
``torchx.cli.cmds``). It lists each scheduler as ``torchx list`` does, in parallel, and
shows each app's state, age, why it waits, how far it is and why it failed; an app's
page adds its timeline, progress over time, attempts, a sweep's elements, the live log of
each replica, and cancel. See docs/ui.md.

This module imports nothing heavy: the web stack is loaded by :func:`create_app`.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from starlette.applications import Starlette

    from torchx.runner import Runner
    from torchx.specs import CfgVal

__all__ = ["create_app"]


def create_app(
    runner: "Runner",
    schedulers: list[str],
    *,
    token: str,
    port: int,
    cfgs: "Mapping[str, Mapping[str, CfgVal]] | None" = None,
) -> "Starlette":
    """The dashboard's ASGI application for the apps of ``schedulers``: every request
    must carry ``token`` (``?token=``, the cookie the first page sets, or
    ``Authorization: token ...``); ``port`` names that cookie. ``cfgs`` holds run options
    per scheduler for its listing (``.torchxconfig`` fills in the rest). Serve it with any
    ASGI server (``torchx ui`` uses uvicorn)."""
    from torchx.ui._server import create_app as create

    return create(runner, schedulers, token=token, port=port, cfgs=cfgs)
