"""``torchx delete``: remove an app from its scheduler (cancelling it if it still runs)."""

import sys

from torchx.cli.cmd_base import AppHandleSubCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from torchx.runner import Runner

__all__ = ["CmdDelete"]


class CmdDelete(AppHandleSubCommand):
    """``torchx delete APP_HANDLE``: idempotent, as ``torchx cancel`` (and upstream).

    An app that is gone (or never was) has nothing left to delete: one note line, exit 0,
    so cleanup scripts under ``set -e`` keep going. A malformed handle or an unknown
    scheduler is still an error.
    """

    OPTIONS = ()  # none: `torchx delete HANDLE` needs no argparse

    def run_with_runner(self, args: "argparse.Namespace", runner: "Runner") -> None:
        if runner.status(args.app_handle) is None:
            print(
                f"torchx: app {args.app_handle} was not found (it ended and was removed, or"
                " never existed): nothing to delete",
                file=sys.stderr,
            )
            return
        runner.delete(args.app_handle)
