"""Small private caches under ``$TORCHX_HOME/cache/`` that make start-up cheap.

Four questions are expensive and their answers rarely change: which plugins are installed
(``entrypoints``), which components there are (``components``, for ``torchx builtins``),
the run options of every scheduler (``runopts``) and the linter's verdict on a component
file (``lint``). Each keeps its answer in one ``marshal`` file per interpreter, with
private permissions, and all follow one rule: an answer is stored with a key (the code
that answers: versions, interpreter, import path) and the stamps (mtime, size) of the
files and directories it was read from, and is used while the key is equal and no stamp
has changed (a path that was missing must still be missing). ``marshal`` because it is
built in and loads in microseconds; a cache is only ever a shortcut, so an unreadable,
foreign or stale file is a miss and a read-only home just means no cache.

``TORCHX_NO_ENTRYPOINT_CACHE=1`` turns them all off; a comma-separated list of the names
above turns off those (benchmarks/bench_cli.py measures each cache so).
"""

import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "ENV_NO_CACHE",
    "cache_disabled",
    "cache_file",
    "file_stamp",
    "interpreter_tag",
    "read",
    "read_checked",
    "write",
    "write_checked",
]

ENV_NO_CACHE = "TORCHX_NO_ENTRYPOINT_CACHE"
_FAMILIES = frozenset({"entrypoints", "components", "runopts", "lint"})
"""Set to ``1`` to compute everything every time instead of using the caches."""


def cache_disabled(name: str = "") -> bool:
    """True when ``$TORCHX_NO_ENTRYPOINT_CACHE`` turns off every cache, or the one called
    ``name`` (its family: ``runopts-slurm`` is ``runopts``)."""
    value = os.environ.get(ENV_NO_CACHE, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    names = {part.strip() for part in value.split(",")}
    if names.isdisjoint(_FAMILIES):
        return True  # 1, true, yes, or anything else: all off
    return name.partition("-")[0] in names


def interpreter_tag() -> str:
    """Eight hex digits naming this interpreter (executable and version) in cache file names.

    A 32-bit FNV-1a hash, computed here because ``zlib.crc32`` would mean loading an
    extension module on every start.
    """
    value = 0x811C9DC5
    for byte in f"{sys.executable}\0{sys.version}".encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{value:08x}"


def cache_file(name: str) -> str:
    """``$TORCHX_HOME/cache/<name>-<interpreter tag>.marshal`` (TORCHX_HOME: ``~/.torchx``)."""
    from torchx.util.support.home import torchx_home  # loaded with the cache, not at import

    return os.path.join(torchx_home(), "cache", f"{name}-{interpreter_tag()}.marshal")


def read(path: str) -> "Any":
    """The value stored at ``path``, or None when there is none that can be read."""
    try:
        with open(path, "rb") as f:
            # Our own 0600 file in the user's private cache dir, not untrusted input.
            return marshal.load(f)  # noqa: S302
    except (OSError, EOFError, ValueError, TypeError):
        return None


def write(path: str, value: "Any") -> bool:
    """Stores ``value`` atomically with private permissions; False when it could not."""
    from torchx.util.support.atomic import try_write_private

    try:
        data = marshal.dumps(value)
    except ValueError:  # not marshal-able: nothing to cache
        return False
    return try_write_private(path, data)


def file_stamp(path: str) -> "tuple[int, int] | None":
    """(mtime in ns, size) of ``path``; None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def read_checked(name: str, key: "Any") -> "Any":
    """The value :func:`write_checked` stored as ``name`` for ``key``, while none of the
    files it was computed from has changed; None otherwise, or when caching is off."""
    if cache_disabled(name):
        return None
    stored = read(cache_file(name))
    if not (isinstance(stored, tuple) and len(stored) == 3) or stored[0] != key:
        return None
    for path, stamp in stored[1]:
        if file_stamp(path) != stamp:
            return None
    return stored[2]


def write_checked(name: str, key: "Any", paths: "Iterable[str]", value: "Any") -> None:
    """Stores ``value`` as ``name`` for ``key`` with the stamps of ``paths`` (the files
    and directories it was computed from); best effort."""
    if cache_disabled(name):
        return
    # a path that is missing now is watched too: the answer is stale once it appears
    watched = tuple((path, file_stamp(path)) for path in sorted(set(paths)))
    write(cache_file(name), (key, watched, value))
