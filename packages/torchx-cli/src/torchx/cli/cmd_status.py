"""``torchx status``: the state of an app and of each of its replicas."""

import argparse

from torchx.cli.cmd_base import AppHandleSubCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.runner import Runner

__all__ = ["CmdStatus"]


class CmdStatus(AppHandleSubCommand):
    """``torchx status APP_HANDLE [--roles a,b] [--json]``."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        super().add_arguments(subparser)
        subparser.add_argument(
            "--roles",
            type=str,
            default="",
            help="comma-separated roles to show (default: all)",
        )
        subparser.add_argument("--json", action="store_true", help="print the status as JSON")

    def run_with_runner(self, args: argparse.Namespace, runner: "Runner") -> None:
        status = runner.status(args.app_handle)
        if status is None:
            self.exit_missing_app(args.app_handle)
        filter_roles = [r.strip() for r in args.roles.split(",") if r.strip()] or None
        if args.json:
            from torchx.cli._json import print_json

            print_json(status.to_json(filter_roles))
        else:
            print(status.format(filter_roles))
