"""Base classes of ``torchx`` subcommands (built-in and plugins alike).

A plugin registers a ``SubCommand`` subclass (or a factory returning an instance) in the
``torchx.cli.cmds`` entry-point group; ``torchx`` calls it with no arguments.
"""

import abc

from torchx.cli._option_table import defaults

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import ClassVar, NoReturn

    from torchx.cli._option_table import Option
    from torchx.runner import Runner

__all__ = ["AppHandleSubCommand", "SubCommand"]


class SubCommand(abc.ABC):
    """One ``torchx <name>`` subcommand: declares its arguments, then runs.

    A command line that :py:meth:`parse_plain` reads is answered without importing
    argparse: by default ``torchx <name> POSITIONALS...`` with no option, when the
    subcommand's own class declares its options in :py:attr:`OPTIONS` (``None`` there, or
    not restated by a subclass: always parse) and its positional arguments, in order, in
    :py:attr:`POSITIONALS`.
    """

    OPTIONS: "ClassVar[Sequence[Option] | None]" = None
    """The options :py:meth:`add_arguments` adds (:func:`torchx.cli._option_table.add_options`),
    declared once for argparse and the plain reader."""
    POSITIONALS: "ClassVar[tuple[str, ...]]" = ()
    """The ``dest`` of each positional argument :py:meth:`add_arguments` adds, in order."""

    @abc.abstractmethod
    def add_arguments(self, subparser: "argparse.ArgumentParser") -> None:
        """Adds this subcommand's flags and positionals to ``subparser``."""

    def parse_plain(self, words: "list[str]") -> "dict[str, object] | None":
        """``{dest: value}``, as argparse would parse ``torchx <name> WORDS...``, when the
        words are in a form this class reads itself; ``None`` lets argparse parse them."""
        options = vars(type(self)).get("OPTIONS")
        positionals = type(self).POSITIONALS
        if options is None or len(words) != len(positionals):
            return None
        if any(word.startswith("-") for word in words):
            return None

        return {**dict(zip(positionals, words, strict=True)), **defaults(options)}

    @abc.abstractmethod
    def run(self, args: "argparse.Namespace") -> None:
        """Executes the subcommand; raise (or ``sys.exit``) to fail."""


class AppHandleSubCommand(SubCommand):
    """A subcommand acting on one app: ``torchx <name> SCHEDULER://SESSION/APP_ID``.

    Validates the handle and its scheduler before any scheduler is created, runs
    :py:meth:`run_with_runner` inside ``with get_runner()`` and closes the runner after.

    ``torchx <name> APP_HANDLE`` with no option is what scripts poll with: a subclass
    that declares its options in :py:attr:`OPTIONS` is answered without
    argparse (see :py:class:`SubCommand`).
    """

    POSITIONALS = ("app_handle",)

    def add_arguments(self, subparser: "argparse.ArgumentParser") -> None:
        subparser.add_argument(
            "app_handle",
            type=str,
            help="app handle, e.g. local_cwd://torchx/echo-abc123 (printed by `torchx run`)",
        )

    def run(self, args: "argparse.Namespace") -> None:
        from torchx.cli._handles import check_app_handle
        from torchx.runner import get_runner

        check_app_handle(args.app_handle)
        with get_runner() as runner:
            self.run_with_runner(args, runner)

    @abc.abstractmethod
    def run_with_runner(self, args: "argparse.Namespace", runner: "Runner") -> None:
        """Executes the subcommand with an open runner."""

    def exit_missing_app(self, app_handle: str) -> "NoReturn":
        """Fails with the one-line "app not found" error (exit code 1)."""
        from torchx.cli._handles import missing_app_error

        raise missing_app_error(app_handle)
