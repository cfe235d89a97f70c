"""A command's options declared once, as a table that feeds both argparse and the plain
reader.

Why: ``torchx run`` reads its common command lines without argparse
(:mod:`torchx.util.startup.plain_args`); both readers take the spellings, destinations and
defaults from the same :class:`Option` rows, so they cannot drift apart.
"""

from __future__ import annotations

from torchx.cli._cli_defaults import ONCE_SEEN_ATTR, cli_config

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = ["Option", "add_options", "defaults", "read_plain", "scheduler_options"]


class Option:
    """One option of a command.

    ``flag`` options are ``store_true``; the others take one value and may be given once.
    ``default`` is a value or a function that returns it (computed when parsing);
    ``configured`` takes the default from ``[cli:<subcmd>]`` of ``.torchxconfig`` (by
    ``dest``). ``hidden`` options work but are not shown in help and add no default of
    their own (an alias of another row's ``dest``). ``plain`` is False for an option the
    plain reader leaves to argparse. ``once`` refuses an option given twice (else the last
    one wins, argparse's ``store``). ``repeat`` collects every value given, in order, in a
    list (argparse's ``append``; left to argparse).
    """

    __slots__ = (
        "configured",
        "default",
        "dest",
        "flag",
        "help",
        "hidden",
        "metavar",
        "once",
        "plain",
        "repeat",
        "spellings",
    )

    def __init__(
        self,
        spellings: tuple[str, ...],
        dest: str,
        help: str | Callable[[], str] = "",
        *,
        flag: bool = False,
        default: object = None,
        configured: bool = False,
        hidden: bool = False,
        plain: bool = True,
        once: bool = True,
        repeat: bool = False,
        metavar: str | None = None,
    ) -> None:
        self.spellings = spellings
        self.dest = dest
        self.help = help
        self.flag = flag
        self.default = False if flag and default is None else default
        self.configured = configured
        self.hidden = hidden
        self.plain = plain and not repeat
        self.once = once and not repeat
        self.repeat = repeat
        self.metavar = metavar

    def default_value(self) -> object:
        return self.default() if callable(self.default) else self.default


def scheduler_options(subcmd: str, purpose: str, default: Callable[[], str | None]) -> list[Option]:
    """``-s SCHEDULER`` (default: ``[cli:SUBCMD] scheduler``) and ``-cfg K=V,...``, the
    block ``torchx run`` and ``torchx list`` share."""

    def scheduler_help() -> str:
        from torchx.cli._handles import installed_schedulers

        names = ", ".join(installed_schedulers()) or "<none installed>"
        return (
            f"scheduler to {purpose}, one of: {names}"
            f" (default: [cli:{subcmd}] scheduler in .torchxconfig, else local_cwd)"
        )

    return [
        Option(
            ("-s", "--scheduler"), "scheduler", scheduler_help, default=default, configured=True
        ),
        Option(
            ("-cfg", "--scheduler_args"),
            "scheduler_args",
            "scheduler run options as KEY=VALUE,KEY2=VALUE2 (see `torchx runopts`)",
        ),
    ]


def add_options(parser: argparse.ArgumentParser, subcmd: str, options: Sequence[Option]) -> None:
    """Declares ``options`` on ``parser`` (a ``torchx SUBCMD`` subparser)."""
    import argparse

    from torchx.cli.argparse_util import ArgOnceAction, torchxconfig_list, torchxconfig_run

    configured_actions = {"run": torchxconfig_run, "list": torchxconfig_list}
    for option in options:
        kwargs: dict[str, Any] = {"dest": option.dest}
        if option.flag:
            kwargs.update(action="store_true", default=option.default_value())
        else:
            if option.configured:
                kwargs["action"] = configured_actions[subcmd]
            elif option.repeat:
                kwargs["action"] = "append"
            elif option.once:
                kwargs["action"] = ArgOnceAction
            kwargs["type"] = str
            if option.metavar:
                kwargs["metavar"] = option.metavar
            kwargs["default"] = argparse.SUPPRESS if option.hidden else option.default_value()
        if option.hidden:
            kwargs["help"] = argparse.SUPPRESS
        else:
            kwargs["help"] = option.help() if callable(option.help) else option.help
        parser.add_argument(*option.spellings, **kwargs)


def defaults(options: Sequence[Option]) -> dict[str, object]:
    """``{dest: default}`` of ``options``, as argparse sets them before reading a line."""
    return {option.dest: option.default_value() for option in options if not option.hidden}


def read_plain(
    words: Sequence[str], subcmd: str, options: Sequence[Option], rest_dest: str
) -> dict[str, object] | None:
    """What argparse would make of a plain ``torchx SUBCMD`` command line (options, then the
    positional words, kept under ``rest_dest``); ``None`` for any other line."""
    from torchx.util.startup.plain_args import split_options

    plain = [option for option in options if option.plain]
    flags = {s: o.dest for o in plain if o.flag for s in o.spellings}
    valued = {s: o.dest for o in plain if not o.flag for s in o.spellings}
    split = split_options(words, flags, valued)
    if split is None:
        return None
    given, rest = split
    configured = cli_config(subcmd)
    values: dict[str, object] = {}
    for option in options:
        if option.hidden:
            continue
        if option.configured and option.dest in configured:
            values[option.dest] = configured[option.dest]
        else:
            values[option.dest] = option.default_value()
    values.update(given)
    values[rest_dest] = rest
    once = {dest for dest in given if dest in valued.values()}
    if once:
        values[ONCE_SEEN_ATTR] = once
    return values
