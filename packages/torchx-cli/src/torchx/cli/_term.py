"""Colours decided per output stream (a log prefix on stderr, a table on stdout).

:py:mod:`torchx.util.colors` decides once, for stdout; the CLI writes to both streams,
and a stream redirected to a file must never receive escape codes.
"""

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["Palette", "palette_for"]


class Palette:
    """ANSI codes for one stream; all empty when that stream is not a terminal."""

    __slots__ = ("BLUE", "ENDC", "GRAY", "GREEN", "RED", "YELLOW")

    def __init__(self, enabled: bool) -> None:
        self.ENDC = "\033[0m" if enabled else ""
        self.GREEN = "\033[32m" if enabled else ""
        self.BLUE = "\033[34m" if enabled else ""
        self.GRAY = "\033[2m" if enabled else ""
        self.RED = "\033[31m" if enabled else ""
        self.YELLOW = "\033[33m" if enabled else ""


def palette_for(stream: "TextIO | None") -> Palette:
    """Colours for ``stream``: on only for a terminal, and never when ``NO_COLOR`` is set."""
    if stream is None or "NO_COLOR" in os.environ:
        return Palette(False)
    try:
        return Palette(bool(stream.isatty()))
    except (AttributeError, ValueError):  # a replaced or closed stream
        return Palette(False)
