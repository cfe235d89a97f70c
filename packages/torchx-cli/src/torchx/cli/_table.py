"""Plain-text tables (the ``tabulate`` "simple" look without the dependency)."""

import os
import sys
import textwrap

from torchx.util.strings import escape_unprintable

__all__ = ["format_table", "terminal_width"]

MIN_LAST_COLUMN = 24
"""The narrowest the wrapped last column gets, however narrow the terminal."""


def terminal_width() -> int | None:
    """``$COLUMNS``, else the terminal's width; None when output goes to a file or pipe
    without ``$COLUMNS`` (there whole lines are easier to search)."""

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else None
    except (AttributeError, OSError, ValueError):
        return None


def _wrapped(rows: "list[list[str]]", headers: "list[str]", width: int) -> "list[list[str]]":
    """``rows`` with the last column's cells wrapped onto rows of their own (the other
    columns empty there) so that every line fits in ``width`` columns."""

    leading = [len(h) for h in headers[:-1]]
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            leading[i] = max(leading[i], len(cell))
    room = max(MIN_LAST_COLUMN, width - sum(leading) - 2 * len(leading))
    out: list[list[str]] = []
    for row in rows:
        pieces = textwrap.wrap(
            row[-1], room, subsequent_indent="  ", break_on_hyphens=False, break_long_words=True
        ) or [""]
        out.append([*row[:-1], pieces[0]])
        out += [[""] * (len(row) - 1) + [piece] for piece in pieces[1:]]
    return out


def format_table(rows: "list[list[str]]", headers: "list[str]", width: int | None = None) -> str:
    """Left-aligned columns separated by two spaces, a dashed rule under the headers; with
    ``width``, the last column wraps so that no line is longer."""

    cells = [[escape_unprintable(str(c)) for c in row] for row in rows]  # a job's words are data
    if width is not None and cells:
        cells = _wrapped(cells, headers, width)
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(values: "list[str]") -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)
