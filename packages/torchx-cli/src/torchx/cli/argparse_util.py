"""argparse pieces shared by the subcommands.

* :py:class:`ArgumentParser` reports usage errors as one line (exit code 2).
* :py:class:`ArgOnceAction` rejects an option given twice (``-s a -s b`` is a mistake,
  not "last one wins").
* :py:class:`torchxconfig` additionally takes its default from the ``[cli:<subcmd>]``
  section of ``.torchxconfig`` (keyed by the argparse ``dest``), which also makes a
  required option optional when the config provides it.
"""

import argparse
import difflib

from torchx.cli._cli_defaults import ONCE_SEEN_ATTR, cli_config, explicitly_given
from torchx.cli.errors import EXIT_FAILURE, usage_error
from torchx.util.support.terminal import help_width

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

__all__ = [
    "ArgOnceAction",
    "ArgumentParser",
    "explicitly_given",
    "torchxconfig",
    "torchxconfig_list",
    "torchxconfig_run",
]


class ArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line: what is wrong and where to look."""

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every add_argument and would import shutil (and
        # the compression modules it pulls in) for the width; this is the same width.
        formatter_class = self.formatter_class
        if isinstance(formatter_class, type) and issubclass(
            formatter_class, argparse.HelpFormatter
        ):
            return formatter_class(prog=self.prog, width=help_width())
        return super()._get_formatter()

    def error(self, message: str) -> "NoReturn":
        usage_error(self.prog, message)

    def _get_option_tuples(self, option_string: str) -> "list[Any]":
        # an abbreviation matching both spellings of one option is that option
        found: dict[int, Any] = {}
        for option in super()._get_option_tuples(option_string):
            found.setdefault(id(option[0]), option)
        return list(found.values())


def accept_both_spellings(parser: argparse.ArgumentParser) -> None:
    """Lets every ``--long-option`` of ``parser`` also be written ``--long_option`` (and
    the other way round), as users of both upstream's flags and ours type them; help
    shows the declared spelling only."""
    for action in list(parser._actions):
        for flag in list(action.option_strings):
            if not flag.startswith("--"):
                continue
            body = flag[2:]
            for other in ("--" + body.replace("-", "_"), "--" + body.replace("_", "-")):
                parser._option_string_actions.setdefault(other, action)


def did_you_mean(parser: argparse.ArgumentParser, unknown: "list[str]") -> str:
    """`` (did you mean --dryrun?)`` for the first unknown option close to a known one."""

    known = [flag for flag in parser._option_string_actions if flag.startswith("--")]
    for arg in unknown:
        if arg.startswith("--"):
            close = difflib.get_close_matches(arg.split("=", 1)[0], known, n=1, cutoff=0.75)
            if close:
                return (
                    f"; did you mean {parser._option_string_actions[close[0]].option_strings[-1]}?"
                )
    return ""


def _check_once(
    parser: argparse.ArgumentParser,
    namespace: argparse.Namespace,
    action: argparse.Action,
    option_string: "str | None",
) -> None:
    seen: set[str] = getattr(namespace, ONCE_SEEN_ATTR, None) or set()
    if action.dest in seen:
        spelled = "/".join(action.option_strings) or action.dest

        # exit 1, not argparse's 2: upstream's ArgOnceAction ends so, and scripts test it
        message = f"`{option_string or spelled}` is specified more than once"
        usage_error(parser.prog, message, EXIT_FAILURE)
    seen.add(action.dest)
    setattr(namespace, ONCE_SEEN_ATTR, seen)


class ArgOnceAction(argparse.Action):
    """Stores the value like ``store``, but an option may be given at most once."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: "str | Sequence[Any] | None",
        option_string: "str | None" = None,
    ) -> None:
        _check_once(parser, namespace, self, option_string)
        setattr(namespace, self.dest, values)


class torchxconfig(ArgOnceAction):
    """A once-only option whose default comes from ``.torchxconfig [cli:<subcmd>]``."""

    def __init__(
        self,
        subcmd: str,
        dest: str,
        option_strings: "Sequence[str]",
        required: bool = False,
        default: "Any" = None,
        **kwargs: "Any",
    ) -> None:
        configured = cli_config(subcmd)
        if dest in configured:
            default = configured[dest]
            required = False
        super().__init__(
            option_strings=option_strings,
            dest=dest,
            required=required,
            default=default,
            **kwargs,
        )


class torchxconfig_run(torchxconfig):
    """:py:class:`torchxconfig` bound to ``[cli:run]``."""

    def __init__(self, dest: str, option_strings: "Sequence[str]", **kwargs: "Any") -> None:
        super().__init__("run", dest, option_strings, **kwargs)


class torchxconfig_list(torchxconfig):
    """:py:class:`torchxconfig` bound to ``[cli:list]``."""

    def __init__(self, dest: str, option_strings: "Sequence[str]", **kwargs: "Any") -> None:
        super().__init__("list", dest, option_strings, **kwargs)
