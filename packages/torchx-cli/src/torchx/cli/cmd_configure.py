"""``torchx configure``: write (or print) a .torchxconfig listing the schedulers' options.

An existing ./.torchxconfig is never overwritten silently: the sections it lacks are
appended and the ones it has are kept as they are (``--force`` rewrites the file).
"""

import argparse
import os
import sys

from torchx.cli._handles import check_scheduler, installed_schedulers
from torchx.cli.cmd_base import SubCommand
from torchx.cli.errors import CliError
from torchx.runner.config import ConfigError, add_missing_sections, dump

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
        subparser.add_argument(
            "--force",
            action="store_true",
            help=f"rewrite an existing ./{CONFIG_FILE} (default: only add the sections it lacks)",
        )

    def run(self, args: argparse.Namespace) -> None:
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
        if os.path.exists(CONFIG_FILE) and not args.force:
            self._add_missing(schedulers, required_only)
            return
        with open(CONFIG_FILE, "w") as f:
            dump(f=f, schedulers=schedulers, required_only=required_only)
        print(f"torchx: wrote ./{CONFIG_FILE}", file=sys.stderr)

    def _add_missing(self, schedulers: "list[str]", required_only: bool) -> None:
        try:
            added, kept = add_missing_sections(CONFIG_FILE, schedulers, required_only)
        except ConfigError as e:
            raise CliError(f"{e} (or rewrite it with `torchx configure --force`)") from None
        kept_note = (
            f"; kept [{'], ['.join(kept)}] as they were (`--force` rewrites the file)"
            if kept
            else ""
        )
        if added:
            print(
                f"torchx: added [{'], ['.join(added)}] to ./{CONFIG_FILE}{kept_note}",
                file=sys.stderr,
            )
        else:
            print(
                f"torchx: ./{CONFIG_FILE} already has a section for every scheduler; left it"
                " unchanged (`--force` rewrites it)",
                file=sys.stderr,
            )
