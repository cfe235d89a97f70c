"""Plain-text tables (the ``tabulate`` "simple" look without the dependency)."""

__all__ = ["format_table"]


def format_table(rows: "list[list[str]]", headers: "list[str]") -> str:
    """Left-aligned columns separated by two spaces, a dashed rule under the headers."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(values: "list[str]") -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)
