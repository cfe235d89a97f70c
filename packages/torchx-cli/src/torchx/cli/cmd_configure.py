"""``torchx configure``: write (or print) a .torchxconfig listing the schedulers' options."""

import argparse
import sys

from torchx.cli.cmd_base import SubCommand

__all__ = ["CmdConfigure"]

CONFIG_FILE = ".torchxconfig"


class CmdConfigure(SubCommand):
    """``torchx configure [-s a,b] [--print] [-a/--all]``."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument(
            "-s",
            "--schedulers",
            type=str,
            help="comma-separated schedulers to include (default: every installed one)",
        )
        subparser.add_argument(
            "--print",
            action="store_true",
            help=f"print the config to stdout instead of writing ./{CONFIG_FILE}",
        )
        subparser.add_argument(
            "-a",
            "--all",
            action="store_true",
            help="include optional run options too (default: only the required ones)",
        )

    def run(self, args: argparse.Namespace) -> None:
        from torchx.cli._handles import check_scheduler, installed_schedulers
        from torchx.runner.config import dump

        if args.schedulers:
            schedulers = [
                check_scheduler(s.strip()) for s in args.schedulers.split(",") if s.strip()
            ]
        else:
            schedulers = installed_schedulers()
        required_only = not args.all
        if args.print:
            dump(f=sys.stdout, schedulers=schedulers, required_only=required_only)
            return
        with open(CONFIG_FILE, "w") as f:
            dump(f=f, schedulers=schedulers, required_only=required_only)
        print(f"torchx: wrote ./{CONFIG_FILE}", file=sys.stderr)
