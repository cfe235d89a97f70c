"""``torchx cancel``: stop a running app (it stays known to the scheduler)."""

import sys

from torchx.cli.cmd_base import AppHandleSubCommand
from torchx.specs import is_terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from torchx.runner import Runner

__all__ = ["CmdCancel"]


class CmdCancel(AppHandleSubCommand):
    """``torchx cancel APP_HANDLE``: idempotent, like ``Runner.cancel``.

    An app that is gone (or never was) leaves nothing to cancel: one note line, exit 0, so
    cleanup scripts under ``set -e`` keep going. A malformed handle or an unknown scheduler
    is still an error.
    """

    OPTIONS = ()  # none: `torchx cancel HANDLE` needs no argparse

    def run_with_runner(self, args: "argparse.Namespace", runner: "Runner") -> None:
        handle = args.app_handle
        status = runner.status(handle, progress=False)
        if status is None:
            print(
                f"torchx: app {handle} was not found (it ended and was removed, or"
                " never existed): nothing to cancel",
                file=sys.stderr,
            )
            return
        if is_terminal(status.state):
            print(
                f"torchx: app {handle} already ended {status.state.name}: nothing to cancel",
                file=sys.stderr,
            )
            return
        runner.cancel(handle)
        print(
            f"torchx: cancelled {handle} (it was {status.state.name}); `torchx status"
            f" {handle}` shows it once it has stopped",
            file=sys.stderr,
        )
