"""Linter verdicts on component functions, cached by the identity of their source file.

Why: linting a component means importing ``ast`` and parsing its whole module, about
5 ms of every ``torchx run`` (half a bare interpreter start), for files that rarely
change. Verdicts under the default validators are kept in ``$TORCHX_HOME/cache/`` keyed
by the file's path, mtime and size, and by the torchx version (which ships the rules).
"""

from torchx.util.startup import disk_cache
from torchx.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["lint"]

_FORMAT = 1
_MAX_FILES = 256  # a bound on the file's size; the oldest entries go first

# {path: (mtime_ns, size, {function: [errors]})}, loaded once per process and cache file.
_Table = dict[str, tuple[int, int, dict[str, list[str]]]]
_memo: "dict[str, _Table]" = {}


def _header() -> "tuple[int, str]":
    return (_FORMAT, __version__)


def _table(cache_file: str) -> _Table:
    table = _memo.get(cache_file)
    if table is None:
        stored = disk_cache.read(cache_file)
        valid = isinstance(stored, tuple) and len(stored) == 2 and stored[0] == _header()
        table = stored[1] if valid and isinstance(stored[1], dict) else {}
        _memo[cache_file] = table
    return table


def lint(
    path: str,
    functions: "Sequence[str]",
    compute: "Callable[[], dict[str, list[str]]]",
) -> "dict[str, list[str]]":
    """``{function: errors}`` for ``functions`` of the file at ``path``.

    ``compute`` lints the file (default validators only); its answer is cached until the
    file changes.
    """
    if disk_cache.cache_disabled("lint"):
        return compute()
    stamp = disk_cache.file_stamp(path)
    if stamp is None:
        return compute()
    cache_file = disk_cache.cache_file("lint")
    table = _table(cache_file)
    entry = table.get(path)
    known = entry[2] if entry and entry[:2] == stamp else {}
    if all(name in known for name in functions):
        return {name: list(known[name]) for name in functions}
    verdicts = compute()
    table.pop(path, None)
    table[path] = (*stamp, {**known, **verdicts})
    while len(table) > _MAX_FILES:
        del table[next(iter(table))]
    disk_cache.write(cache_file, (_header(), table))
    return verdicts
