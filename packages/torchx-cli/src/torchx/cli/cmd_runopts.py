"""``torchx runopts``: the run options (``-cfg`` keys) of each scheduler.

A scheduler whose module or SDK fails to import is listed with its error and never hides
the others.

Imports inside functions are deliberate: a command loads only what its own path uses
(start-up is measured by packages/torchx-cli/tests/test_cli_main.py and
benchmarks/bench_cli.py).
"""

import argparse
import sys

from torchx.cli.cmd_base import SubCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.specs import runopts

__all__ = ["CmdRunopts"]


def _opts_as_json(opts: "runopts") -> "dict[str, Any]":
    from torchx.cli._json import to_jsonable
    from torchx.specs import get_type_name

    return {
        key: {
            "type": get_type_name(opt.opt_type),
            "default": to_jsonable(opt.default),
            "required": opt.is_required,
            "help": opt.help,
        }
        for key, opt in opts
    }


class CmdRunopts(SubCommand):
    """``torchx runopts [SCHEDULER] [--json]``."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument(
            "scheduler",
            type=str,
            nargs="?",
            help="scheduler to show (default: every installed one)",
        )
        subparser.add_argument("--json", action="store_true", help="print the options as JSON")

    def run(self, args: argparse.Namespace) -> None:
        from torchx.cli._errors import CliError
        from torchx.cli._handles import check_scheduler, installed_schedulers
        from torchx.runner import get_runner

        names = [check_scheduler(args.scheduler)] if args.scheduler else installed_schedulers()
        results: dict[str, runopts | Exception] = {}
        with get_runner() as runner:
            for name in names:
                try:
                    results[name] = runner.scheduler_run_opts(name)
                except Exception as e:
                    if args.scheduler:
                        raise CliError(
                            f"scheduler '{name}' could not be loaded: {type(e).__name__}: {e}"
                            " (see `torchx plugins`)"
                        ) from e
                    results[name] = e

        if args.json:
            from torchx.cli._json import print_json

            print_json(
                {
                    name: {"error": f"{type(r).__name__}: {r}"}
                    if isinstance(r, Exception)
                    else {"options": _opts_as_json(r)}
                    for name, r in results.items()
                }
            )
        else:
            from torchx.cli._term import palette_for

            c = palette_for(sys.stdout)
            for name, result in results.items():
                if isinstance(result, Exception):
                    body = f"    failed to load: {type(result).__name__}: {result}"
                else:
                    body = repr(result)
                print(f"{c.GREEN}{name}{c.ENDC}:\n{body}\n")
