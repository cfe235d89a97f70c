"""The ``torchx`` command: finds the subcommand in argv and imports only that one.

Start-up time is a feature (see ``docs/design.md``): built-in subcommands are described by
a static table (module path + one-line help) and plugin subcommands by their entry-point
name, so ``torchx --help`` imports no subcommand module, no ``torchx.specs`` and no
``dataclasses``. A subcommand's module is imported only when it is the one being run.

Plugins register a :py:class:`~torchx.cli.cmd_base.SubCommand` class (or a factory
returning one) in the ``torchx.cli.cmds`` entry-point group; a plugin with the name of a
built-in replaces it.
"""

import os
import sys

from torchx.cli.errors import CliError, Terminated, report_exception

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from argparse import Namespace
    from typing import Any

    from torchx.cli.argparse_util import ArgumentParser
    from torchx.cli.cmd_base import SubCommand
    from torchx.util.entrypoints import EntryPointInfo

__all__ = [
    "BUILTIN_SUBCOMMANDS",
    "CLI_CMDS_GROUP",
    "console_main",
    "create_parser",
    "get_default_sub_cmds",
    "get_sub_cmds",
    "main",
    "run_main",
    "sub_parser_description",
]

CLI_CMDS_GROUP = "torchx.cli.cmds"

BUILTIN_SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "builtins": (
        "torchx.cli.cmd_builtins:CmdBuiltins",
        "list the components `torchx run` knows by name",
    ),
    "cancel": ("torchx.cli.cmd_cancel:CmdCancel", "cancel a running app"),
    "check": (
        "torchx.cli.cmd_check:CmdCheck",
        "say whether each scheduler and tracker is ready, and how to fix what is not",
    ),
    "configure": (
        "torchx.cli.cmd_configure:CmdConfigure",
        "write a .torchxconfig with the schedulers' run options",
    ),
    "delete": ("torchx.cli.cmd_delete:CmdDelete", "delete an app from its scheduler"),
    "describe": ("torchx.cli.cmd_describe:CmdDescribe", "show the AppDef of an app"),
    "list": ("torchx.cli.cmd_list:CmdList", "list the apps of a scheduler"),
    "log": ("torchx.cli.cmd_log:CmdLog", "print or follow the logs of an app"),
    "plugins": (
        "torchx.cli.cmd_plugins:CmdPlugins",
        "list installed torchx distributions, plugins and plugin errors",
    ),
    "run": ("torchx.cli.cmd_run:CmdRun", "launch a component on a scheduler"),
    "runopts": ("torchx.cli.cmd_runopts:CmdRunopts", "show the run options of schedulers"),
    "status": ("torchx.cli.cmd_status:CmdStatus", "show the status of an app"),
    "tracker": ("torchx.cli.cmd_tracker:CmdTracker", "query the experiment tracker"),
}
"""name -> ("module:Class", one-line help) of every built-in subcommand."""

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _import_target(target: str) -> object:
    module_name, _, attr = target.partition(":")
    __import__(module_name)  # importlib.import_module, without importing importlib
    obj: object = sys.modules[module_name]
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _instantiate(factory: object, origin: str) -> "SubCommand":
    if not callable(factory):
        raise TypeError(f"{origin} is a {type(factory).__name__}, not a SubCommand class")
    cmd = factory()
    if not (callable(getattr(cmd, "add_arguments", None)) and callable(getattr(cmd, "run", None))):
        raise TypeError(
            f"{origin} returned a {type(cmd).__name__}, which is not a SubCommand"
            " (needs add_arguments() and run())"
        )
    result: SubCommand = cmd
    return result


def _load_builtin(name: str) -> "SubCommand":
    target = BUILTIN_SUBCOMMANDS[name][0]
    return _instantiate(_import_target(target), target)


def _load_plugin(ep: "EntryPointInfo") -> "SubCommand":
    return _instantiate(ep.load(), f"entry point `{ep.name} = {ep.value}` ({ep.dist})")


def _plugin_entry_points() -> "dict[str, EntryPointInfo]":
    from torchx.util.entrypoints import entry_points

    return {ep.name: ep for ep in entry_points(CLI_CMDS_GROUP)}


def get_default_sub_cmds() -> "dict[str, SubCommand]":
    """Every built-in subcommand, instantiated (imports all their modules)."""
    return {name: _load_builtin(name) for name in BUILTIN_SUBCOMMANDS}


def get_sub_cmds() -> "dict[str, SubCommand]":
    """Built-ins updated with the ``torchx.cli.cmds`` plugins (a plugin wins a name clash).

    A plugin that fails to load is reported on stderr and skipped.
    """
    cmds = get_default_sub_cmds()
    for name, ep in _plugin_entry_points().items():
        try:
            cmds[name] = _load_plugin(ep)
        except Exception as e:
            _warn(f"skipping subcommand `{name}` from {ep.dist}: {type(e).__name__}: {e}")
    return cmds


def _warn(message: str) -> None:
    print(f"torchx: warning: {message}", file=sys.stderr, flush=True)


sub_parser_description = "subcommands (e.g. `torchx run utils.echo`); `torchx SUBCOMMAND --help`"
"""Description of the subcommand group in ``torchx --help`` (upstream's public name)."""
_DESCRIPTION = "torchx CLI: launch and manage apps on any scheduler"
_EPILOG = "Run `torchx SUBCOMMAND --help` for the options of a subcommand."
_LOG_LEVEL_HELP = (
    "Python logging level: DEBUG (also shows tracebacks), INFO, WARNING, ERROR"
    " (default: $LOGLEVEL or INFO)"
)


def _version_string() -> str:
    from torchx.util.support.provenance import version_line

    return version_line()


def _root_parser() -> "ArgumentParser":
    from torchx.cli.argparse_util import ArgumentParser

    parser = ArgumentParser(prog="torchx", description=_DESCRIPTION, epilog=_EPILOG)
    parser.add_argument(
        "--log_level",
        type=str,
        default=os.environ.get("LOGLEVEL", "INFO"),
        help=_LOG_LEVEL_HELP,
    )
    from argparse import SUPPRESS, Action

    class VersionAction(Action):
        """``--version``, its text made only when asked (it reads installed metadata)."""

        def __call__(
            self, parser: "Any", namespace: "Any", values: "Any", opt: "Any" = None
        ) -> None:
            print(_version_string(), flush=True)
            parser.exit()

    parser.add_argument(
        "--version",
        action=VersionAction,
        nargs=0,
        default=SUPPRESS,
        help="print the torchx version and exit",
    )
    return parser


PLUGGED_SUBCOMMANDS: dict[tuple[str, str], str] = {
    ("ui", "torchx-ui"): "open a local web dashboard of your apps on every scheduler",
}
"""The purpose of subcommands that TorchX's own distributions plug in, by (name,
distribution): ``torchx --help`` says it without importing them."""


def _plugin_purpose(name: str, ep: "EntryPointInfo") -> "str | None":
    return PLUGGED_SUBCOMMANDS.get((name, ep.dist))


def _subcommand_helps(plugins: "dict[str, EntryPointInfo]") -> "dict[str, str]":
    helps = {name: text for name, (_, text) in BUILTIN_SUBCOMMANDS.items()}
    for name, ep in plugins.items():
        origin = f"{ep.dist} {ep.version}".strip()
        purpose = _plugin_purpose(name, ep)
        if name in helps:
            helps[name] = f"{helps[name]} (replaced by {origin})"
        else:
            helps[name] = f"{purpose} (from {origin})" if purpose else f"(from {origin})"
    return {name: helps[name] for name in sorted(helps)}


def _overview_help(plugins: "dict[str, EntryPointInfo]") -> str:
    """``torchx --help`` without argparse: importing it alone is ~2/3 of the budget."""
    helps = _subcommand_helps(plugins)
    width = max([len(name) for name in helps] + [10]) + 4
    commands = "\n".join(f"  {name.ljust(width)}{text}" for name, text in helps.items())
    return (
        "usage: torchx [-h] [--log_level LOG_LEVEL] [--version] SUBCOMMAND ...\n\n"
        f"{_DESCRIPTION}\n\n"
        "options:\n"
        "  -h, --help            show this help message and exit\n"
        "  --log_level LOG_LEVEL\n"
        "                        Python logging level: DEBUG (also shows tracebacks),\n"
        "                        INFO, WARNING, ERROR (default: $LOGLEVEL or INFO)\n"
        "  --version             print the torchx version and exit\n\n"
        f"sub-commands:\n{commands}\n\n"
        f"{_EPILOG}"
    )


def _add_subparsers(parser: "ArgumentParser") -> "argparse._SubParsersAction[ArgumentParser]":
    return parser.add_subparsers(
        title="sub-commands",
        description=sub_parser_description,
        dest="subcmd",
        metavar="SUBCOMMAND",
    )


def _add_command(
    subparsers: "argparse._SubParsersAction[ArgumentParser]",
    name: str,
    cmd: "SubCommand",
    help_text: "str | None" = None,
) -> "ArgumentParser":
    subparser = subparsers.add_parser(name, help=help_text, description=help_text)
    from torchx.cli.argparse_util import accept_both_spellings

    cmd.add_arguments(subparser)
    accept_both_spellings(subparser)
    subparser.set_defaults(func=cmd.run)
    return subparser


def create_parser(subcmds: "dict[str, SubCommand]") -> "ArgumentParser":
    """The full parser for already-instantiated ``subcmds`` (API kept from upstream)."""
    parser = _root_parser()
    subparsers = _add_subparsers(parser)
    for name, cmd in subcmds.items():
        help_text = BUILTIN_SUBCOMMANDS[name][1] if name in BUILTIN_SUBCOMMANDS else None
        _add_command(subparsers, name, cmd, help_text)
    return parser


def _overview_parser(plugins: "dict[str, EntryPointInfo]") -> "ArgumentParser":
    """Root parser listing every subcommand by name and help, importing none of them."""
    parser = _root_parser()
    subparsers = _add_subparsers(parser)
    for name, text in _subcommand_helps(plugins).items():
        subparsers.add_parser(name, help=text)
    return parser


def _subcommand_index(argv: "list[str]") -> "int | None":
    """Index of the subcommand in ``argv``: the first arg that is no root option."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return None
        if arg == "--log_level":
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        return i
    return None


def _unknown_subcommand(name: str, known: "list[str]") -> int:
    import difflib

    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    print(
        f"torchx: error: unknown subcommand '{name}'{hint}; available: {', '.join(known)}"
        " (see `torchx --help`)",
        file=sys.stderr,
        flush=True,
    )
    return 2


def _resolve(name: str, plugins: "dict[str, EntryPointInfo]") -> "SubCommand":
    ep = plugins.get(name)
    if ep is not None:
        try:
            return _load_plugin(ep)
        except Exception as e:
            if name not in BUILTIN_SUBCOMMANDS:
                from torchx.cli.errors import CliError

                raise CliError(
                    f"subcommand `{name}` from {ep.dist} failed to load:"
                    f" {type(e).__name__}: {e} (see `torchx plugins`)"
                ) from e
            _warn(
                f"plugin subcommand `{name}` from {ep.dist} failed to load"
                f" ({type(e).__name__}: {e}); using the built-in one"
            )
    return _load_builtin(name)


def _parse_log_level(value: str) -> "int | str":
    text = value.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    upper = text.upper()
    if upper == "WARN":
        upper = "WARNING"
    if upper not in _LOG_LEVELS:
        raise CliError(
            f"unknown log level '{value}'; use one of {', '.join(_LOG_LEVELS)}", exit_code=2
        )
    return upper


def _is_debug(level: "int | str") -> bool:
    return level == "DEBUG" or (isinstance(level, int) and level <= 10)


def _configure_logging(level: "int | str") -> None:
    """Configures the root logger for the command (its level, the masked format): now if
    ``logging`` is loaded, else when a torchx logger is first used or an SDK or plugin is
    about to log (:func:`torchx.util.log.ensure_configured`); most commands log nothing and
    never load ``logging``."""
    if "logging" in sys.modules:
        _basic_config(level)
        return
    from torchx.util.log import configure_on_first_use, set_root_level_before_import

    set_root_level_before_import(level)
    configure_on_first_use(lambda: _basic_config(level))


def _basic_config(level: "int | str") -> None:
    import logging

    from torchx.cli._term import palette_for

    c = palette_for(sys.stderr)
    from torchx.cli._masking import MaskingFormatter

    handler = logging.StreamHandler()
    handler.setFormatter(
        MaskingFormatter(
            f"{c.BLUE}torchx{c.ENDC} {c.GRAY}%(asctime)s %(levelname)-8s{c.ENDC} %(message)s",
            "%Y-%m-%d %H:%M:%S",
        )
    )
    logging.basicConfig(level=level, handlers=[handler])


def _plain_warnings() -> None:
    """Shows Python warnings (``warnings.warn`` by torchx or a plugin) as one plain line,
    ``torchx: warning: MESSAGE``, without the source path and line that Python adds (kept
    with ``--log_level debug``)."""
    import warnings

    def show(message: "Warning | str", category: type, *_: object, **__: object) -> None:
        from torchx.util.support.secrets import mask_text

        text = mask_text(" ".join(str(message).split()))
        print(f"torchx: warning: {text}", file=sys.stderr, flush=True)

    warnings.showwarning = show


def _stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (OSError, ValueError):
        return False


def _unwind_on_sigterm() -> None:
    """Makes SIGTERM unwind the command as an exception, so that what it was making (a
    ``job_dir`` copy, a merged workspace, an image build context) is removed as on
    Ctrl-C. Unlike Ctrl-C it does not cancel an app ``torchx run`` waits on."""
    import signal

    def terminated(signum: int, frame: object) -> None:
        raise Terminated

    try:
        signal.signal(signal.SIGTERM, terminated)
    except ValueError:  # not the main thread (run_main called from a thread): leave it
        return


def _dispatch(args: "argparse.Namespace") -> int:
    """Runs the parsed subcommand; returns the exit code (errors are reported here)."""

    debug = False
    _unwind_on_sigterm()
    try:
        level = _parse_log_level(args.log_level)
        debug = _is_debug(level)
        _configure_logging(level)
        if not getattr(args.func, "__module__", "").startswith("torchx.cli."):
            from torchx.util.log import ensure_configured

            ensure_configured()  # a plugin's subcommand may log through logging itself
        if not debug:
            _plain_warnings()
        args.func(args)
        sys.stdout.flush()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        print("torchx: interrupted", file=sys.stderr, flush=True)
        return 130
    except Terminated:
        print("torchx: terminated", file=sys.stderr, flush=True)
        return 143
    except BrokenPipeError as e:
        if not _stdout_gone():
            # a pipe of our own broke (a child that exited early): an error like any other
            return report_exception(e, debug)
        # The reader went away (e.g. `torchx log ... | head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as e:
        return report_exception(e, debug)
    return 0


def run_main(
    subcmds: "dict[str, SubCommand] | None" = None, argv: "list[str] | None" = None
) -> None:
    """Parses ``argv`` and runs the chosen subcommand; exits non-zero on failure.

    With ``subcmds`` (upstream's signature) exactly those commands are offered; without,
    the built-ins and ``torchx.cli.cmds`` plugins are offered and only the chosen one is
    imported.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if subcmds is not None:
        parser = create_parser(subcmds)
        args = parser.parse_args(argv)
        if getattr(args, "func", None) is None:
            parser.print_help()
            raise SystemExit(1)
        code = _dispatch(args)
        if code:
            raise SystemExit(code)
        return

    plugins = _plugin_entry_points()
    index = _subcommand_index(argv)
    root_flags = argv if index is None else argv[:index]
    if root_flags in (["-h"], ["--help"], []) and index is None:
        # The common cases, answered without importing argparse.
        print(_overview_help(plugins), flush=True)
        raise SystemExit(0 if root_flags else 1)
    if root_flags == ["--version"]:
        print(_version_string(), flush=True)
        raise SystemExit(0)
    if index is None or any(a in ("-h", "--help", "--version") for a in root_flags):
        overview = _overview_parser(plugins)
        overview.parse_args(argv)  # prints help/version or a usage error, and exits
        overview.print_help()
        raise SystemExit(1)

    name = argv[index]
    if name not in BUILTIN_SUBCOMMANDS and name not in plugins:
        raise SystemExit(_unknown_subcommand(name, sorted({*BUILTIN_SUBCOMMANDS, *plugins})))
    try:
        cmd = _resolve(name, plugins)
        fast = _args_without_parser(cmd, name, argv) if index == 0 else None
        if fast is not None:
            code = _dispatch(fast)
            if code:
                raise SystemExit(code)
            return
        parser = _root_parser()
        help_text = BUILTIN_SUBCOMMANDS[name][1] if name in BUILTIN_SUBCOMMANDS else None
        if name in plugins:
            help_text = _plugin_purpose(name, plugins[name]) or help_text
        subparser = _add_command(_add_subparsers(parser), name, cmd, help_text)
    except Exception as e:
        # Building the parser may read .torchxconfig or scheduler registries.
        from torchx.cli.errors import report_exception

        raise SystemExit(report_exception(e, debug=_early_debug(root_flags))) from None
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # point at the help of the command whose options were wrong
        wrong = parser if any(arg in root_flags for arg in unknown) else subparser
        from torchx.cli.argparse_util import did_you_mean

        hint = did_you_mean(wrong, unknown)
        wrong.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    code = _dispatch(args)
    if code:
        raise SystemExit(code)


def _args_without_parser(cmd: "SubCommand", name: str, argv: "list[str]") -> "Namespace | None":
    """The parsed args of ``torchx NAME WORDS...`` when the subcommand reads them itself
    (:py:meth:`SubCommand.parse_plain`), built without argparse; ``None`` otherwise."""
    parse_plain = getattr(cmd, "parse_plain", None)  # a duck-typed plugin may lack it
    values = parse_plain(argv[1:]) if parse_plain is not None else None
    if values is None:
        return None
    from types import SimpleNamespace

    return SimpleNamespace(  # type: ignore[return-value]  # argparse.Namespace's duck type
        log_level=os.environ.get("LOGLEVEL", "INFO"),
        subcmd=name,
        **values,
        func=cmd.run,
    )


def _early_debug(root_flags: "list[str]") -> bool:
    """Whether ``--log_level`` (or $LOGLEVEL) asks for debug, before argv is parsed."""
    level = os.environ.get("LOGLEVEL", "INFO")
    for i, arg in enumerate(root_flags):
        if arg == "--log_level" and i + 1 < len(root_flags):
            level = root_flags[i + 1]
        elif arg.startswith("--log_level="):
            level = arg.partition("=")[2]
    try:
        return _is_debug(_parse_log_level(level))
    except Exception:
        return False


# Collect the youngest generation every this many allocations instead of CPython's 700.
_GC_YOUNG_THRESHOLD = 10_000


def main(argv: "list[str] | None" = None) -> None:
    """Console-script entry point (``torchx = torchx.cli.main:main``).

    It owns the process, so it tunes the garbage collector for a short command: start-up
    creates tens of thousands of long-lived objects (modules, classes, functions) and
    hardly any garbage cycles, so frequent young-generation passes are overhead.
    Collections still happen, only less often; the exit is Python's own (every finalizer
    runs).
    """
    import gc

    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(young, _GC_YOUNG_THRESHOLD), older, oldest)
    try:
        run_main(argv=argv)
    except BrokenPipeError:
        # the reader went away (`torchx builtins | head`): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None


def console_main() -> None:
    """What the installed ``torchx`` command runs: :func:`main`, then Python's own exit
    (threads joined, ``atexit`` handlers and finalizers run, output flushed)."""
    main()


if __name__ == "__main__":
    console_main()
