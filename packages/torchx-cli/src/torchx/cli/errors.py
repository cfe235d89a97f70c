"""How ``torchx`` reports failures: one line on stderr, a meaningful exit code.

User mistakes (unknown component, bad ``-cfg``, malformed handle, ...) are expected and
get their message only; anything else is a bug or an environment problem and gets its
type plus a hint to rerun with ``--log_level debug``, which prints the traceback.
"""

import sys


class Terminated(BaseException):
    """SIGTERM arrived (``timeout``, CI, a service manager stopping torchx)."""


TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = [
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "CliError",
    "error_line",
    "report_exception",
    "usage_error",
]

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

_DEBUG_HINT = "rerun with `torchx --log_level debug ...` for the traceback"


class CliError(Exception):
    """A failure whose message is already written for the user.

    ``exit_code`` is 2 for usage errors (what argparse would report) and 1 otherwise.
    """

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def usage_error(prog: str, message: str, exit_code: int = EXIT_USAGE) -> "NoReturn":
    """Exits 2 (or ``exit_code``) with the one-line usage error of ``prog`` (``torchx
    run``, say), as the command's argument parser reports one."""
    print(f"torchx: error: {message} (see `{prog} --help`)", file=sys.stderr, flush=True)
    raise SystemExit(exit_code)


# Builtin exception types whose message is the whole story when raised by torchx or by a
# component (e.g. ``ValueError("exactly one of --script, -m, -c")``).
_USER_FACING_BUILTINS = (
    ValueError,
    KeyError,
    LookupError,
    FileNotFoundError,
    FileExistsError,
    NotADirectoryError,
    IsADirectoryError,
    PermissionError,
)


def one_line(text: str) -> str:
    """Collapses a multi-line message into one line (blank lines dropped)."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def error_line(error: BaseException) -> str:
    """The error's message on one line of at most 300 characters (its type when it has
    none), credentials masked, for a place that shows it beside others (``torchx check``,
    ``torchx ui``)."""
    from torchx.util.support.secrets import mask_text

    return mask_text(one_line(str(error)))[:300] or type(error).__name__


def _message_of(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        return exc.args[0]  # str(KeyError) would wrap the message in quotes
    return str(exc)


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` describes a mistake of the user rather than a bug."""
    if isinstance(exc, (CliError, *_USER_FACING_BUILTINS)):
        return True
    # torchx's own exception types (InvalidRunConfigException, UnknownAppException,
    # ComponentNotFoundException, ...) are raised on purpose with a readable message.
    return any(cls.__module__.startswith("torchx.") for cls in type(exc).__mro__)


def report_exception(exc: BaseException, debug: bool) -> int:
    """Prints ``exc`` for the user and returns the exit code to use."""
    from torchx.util.support.secrets import mask_text  # an error never shows a credential

    if debug:
        import traceback

        print(mask_text("".join(traceback.format_exception(exc))), end="", file=sys.stderr)
    message = mask_text(one_line(_message_of(exc)))
    if is_user_error(exc):
        line = f"torchx: error: {message or type(exc).__name__}"
    else:
        kind = type(exc).__name__
        line = f"torchx: error: {kind}: {message}" if message else f"torchx: error: {kind}"
        if not debug:
            line = f"{line} ({_DEBUG_HINT})"
    print(line, file=sys.stderr, flush=True)
    return exc.exit_code if isinstance(exc, CliError) else EXIT_FAILURE
