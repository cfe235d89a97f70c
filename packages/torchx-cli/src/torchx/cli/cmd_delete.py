"""``torchx delete``: remove an app from its scheduler (cancelling it if it still runs)."""

from torchx.cli.cmd_base import AppHandleSubCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from torchx.runner import Runner

__all__ = ["CmdDelete"]


class CmdDelete(AppHandleSubCommand):
    """``torchx delete APP_HANDLE``; an unknown app is an error."""

    OPTION_DEFAULTS = {}

    def run_with_runner(self, args: "argparse.Namespace", runner: "Runner") -> None:
        if runner.status(args.app_handle) is None:
            self.exit_missing_app(args.app_handle)
        runner.delete(args.app_handle)
