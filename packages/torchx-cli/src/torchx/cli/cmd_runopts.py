"""``torchx runopts``: the run options (``-cfg`` keys) of each scheduler.

A scheduler whose module or SDK fails to import is listed with its error and never hides
the others.
"""

import sys

from torchx.cli._handles import check_scheduler, installed_schedulers
from torchx.cli._option_table import Option, add_options
from torchx.cli._term import palette_for
from torchx.cli.cmd_base import SubCommand
from torchx.cli.errors import CliError
from torchx.schedulers import get_scheduler_factories
from torchx.util.startup import disk_cache
from torchx.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
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

    def add_arguments(self, subparser: "argparse.ArgumentParser") -> None:
        subparser.add_argument(
            "scheduler",
            type=str,
            nargs="?",
            help="scheduler to show (default: every installed one)",
        )
        add_options(subparser, "runopts", self.OPTIONS)

    # `torchx runopts` alone needs no argparse (the scheduler positional defaults to None)
    OPTIONS = (Option(("--json",), "json", "print the options as JSON", flag=True),)

    def parse_plain(self, words: "list[str]") -> "dict[str, object] | None":
        values = super().parse_plain(words)
        return None if values is None else {"scheduler": None, **values}

    def _load(self, names: "list[str]", one: bool) -> "dict[str, tuple[str, Any] | str]":
        """Per scheduler: (its options as text, as JSON), or why it could not be loaded."""
        from torchx.runner import get_runner

        results: dict[str, tuple[str, Any] | str] = {}
        with get_runner() as runner:
            for name in names:
                try:
                    opts = runner.scheduler_run_opts(name)
                except Exception as e:
                    if one:
                        raise CliError(
                            f"scheduler '{name}' could not be loaded: {type(e).__name__}: {e}"
                            " (see `torchx plugins`)"
                        ) from e
                    results[name] = f"{type(e).__name__}: {e}"
                else:
                    results[name] = (repr(opts), _opts_as_json(opts))
        return results

    def run(self, args: "argparse.Namespace") -> None:
        names = [check_scheduler(args.scheduler)] if args.scheduler else installed_schedulers()
        # Every scheduler's module (and its run options) is imported to answer: the
        # answer is kept while the code it came from is unchanged (a failure is not kept).
        key = (_CACHE_FORMAT, *_code_key(), tuple(names))
        cache = "runopts" if not args.scheduler else f"runopts-{_safe(names[0])}"
        results = disk_cache.read_checked(cache, key)
        if not isinstance(results, dict):
            results = self._load(names, one=bool(args.scheduler))
            if all(isinstance(r, tuple) for r in results.values()):
                disk_cache.write_checked(cache, key, _loaded_sources(), results)

        if args.json:
            from torchx.cli._json import print_json

            print_json(
                {
                    name: {"options": r[1]} if isinstance(r, tuple) else {"error": r}
                    for name, r in results.items()
                }
            )
        else:
            c = palette_for(sys.stdout)
            for name, result in results.items():
                body = result[0] if isinstance(result, tuple) else f"    failed to load: {result}"
                print(f"{c.GREEN}{name}{c.ENDC}:\n{body}\n")


_CACHE_FORMAT = 1


def _safe(name: str) -> str:
    """A scheduler name as part of a file name."""
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in name)


def _code_key() -> "tuple[Any, ...]":
    """What decides which code answers: torchx, the interpreter, the import path and the
    registered schedulers."""

    factories = tuple(
        (name, getattr(f, "__module__", ""), getattr(f, "__qualname__", ""))
        for name, f in get_scheduler_factories().items()
    )
    paths = tuple(p for p in sys.path if isinstance(p, str))
    return (__version__, sys.version, sys.executable, paths, factories)


def _loaded_sources() -> "list[str]":
    """The source file of every module loaded so far (the schedulers' among them)."""
    return [
        path
        for module in list(sys.modules.values())
        if isinstance(path := getattr(module, "__file__", None), str)
    ]
