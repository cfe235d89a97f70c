"""``torchx cancel``: stop a running app (it stays known to the scheduler)."""

from torchx.cli.cmd_base import AppHandleSubCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from torchx.runner import Runner

__all__ = ["CmdCancel"]


class CmdCancel(AppHandleSubCommand):
    """``torchx cancel APP_HANDLE``; an unknown app is an error."""

    OPTION_DEFAULTS = {}

    def run_with_runner(self, args: "argparse.Namespace", runner: "Runner") -> None:
        if runner.status(args.app_handle) is None:
            self.exit_missing_app(args.app_handle)
        runner.cancel(args.app_handle)
