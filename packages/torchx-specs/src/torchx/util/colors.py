"""ANSI colour codes for terminal output; empty strings when stdout is not a terminal.

Set ``NO_COLOR`` (any value) to turn colours off even on a terminal.
"""

import os
import sys

__all__ = ["BLUE", "ENDC", "GRAY", "GREEN", "ORANGE", "RED", "YELLOW", "use_color"]


def use_color() -> bool:
    """Whether stdout is a terminal and ``NO_COLOR`` is unset."""
    stream = sys.stdout
    try:
        return stream is not None and stream.isatty() and "NO_COLOR" not in os.environ
    except (AttributeError, ValueError):  # a replaced or closed stdout
        return False


_ON = use_color()

ENDC = "\033[0m" if _ON else ""
GREEN = "\033[32m" if _ON else ""
BLUE = "\033[34m" if _ON else ""
ORANGE = "\033[38;5;208m" if _ON else ""
GRAY = "\033[2m" if _ON else ""
RED = "\033[31m" if _ON else ""
YELLOW = "\033[33m" if _ON else ""
