"""Terminal width for help text, without ``shutil``.

argparse sizes help text with ``shutil.get_terminal_size``; importing ``shutil`` (and the
compression modules it pulls in) costs more than building a parser, and argparse does it
for every ``add_argument``. Parsers that only parse never need the width at all.
"""

import os
import sys

__all__ = ["help_width", "terminal_width"]

_FALLBACK_COLUMNS = 80


def terminal_width() -> int:
    """Columns of the terminal: ``$COLUMNS`` if positive, else stdout's terminal, else 80.

    The same answer as ``shutil.get_terminal_size().columns``.
    """
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    if stdout is None:
        return _FALLBACK_COLUMNS
    try:
        columns = os.get_terminal_size(stdout.fileno()).columns
    except (AttributeError, ValueError, OSError):  # a closed, detached or non-terminal stdout
        columns = 0
    return columns or _FALLBACK_COLUMNS


def help_width() -> int:
    """The ``width`` argparse's ``HelpFormatter`` picks by default (2 less than the terminal)."""
    return terminal_width() - 2
