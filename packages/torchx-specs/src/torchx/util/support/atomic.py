"""Private, atomic file writes for the caches and state files under ``TORCHX_HOME``.

Readers in other processes must see the old file or the new one, never a torn one, and
nothing torchx writes there may be readable by other users. Only ``os`` is imported: the
entry-point cache uses this on the start-up path.
"""

import os
import stat

DIR_MODE = 0o700
FILE_MODE = 0o600


def write_all(fd: int, data: bytes) -> None:
    """Writes all of ``data`` to ``fd`` (``os.write`` may write part of it: pipes, signals)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def make_private_dirs(path: str) -> None:
    """``mkdir -p`` where every directory created gets mode 0700.

    ``os.makedirs(mode=...)`` applies the mode to the last directory only.
    """
    missing = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise


def check_private(path: str, top: str) -> None:
    """Refuses (``PermissionError``, one line) to reuse ``path`` unless it and every
    directory from ``top`` down to it is this user's own, no link, and not writable by
    others: a loose directory made earlier, or by someone else, could have its files
    swapped. What does not exist yet is fine (it will be made private)."""
    top = os.path.abspath(top)
    current = os.path.abspath(path)
    chain = [current]
    while current != top and os.path.dirname(current) != current:
        current = os.path.dirname(current)
        chain.append(current)
    for item in reversed(chain):
        try:
            info = os.lstat(item)
        except FileNotFoundError:
            continue
        problem = ""
        if stat.S_ISLNK(info.st_mode):
            problem = "is a link"
        elif info.st_uid != os.getuid():
            problem = f"belongs to another user (uid {info.st_uid})"
        elif info.st_mode & 0o022:
            problem = f"is writable by others (mode {stat.S_IMODE(info.st_mode):04o})"
        if problem:
            raise PermissionError(
                f"{item} {problem}; torchx keeps private state there: remove it, or make it"
                f" yours with mode 0700 (chmod 700 {item})"
            )


def write_private(path: str, data: bytes, *, atomic: bool = True) -> None:
    """Writes ``data`` to ``path`` (mode 0600), creating missing parents with mode 0700.

    ``atomic=False`` writes in place: only for files nobody can read yet (inside a
    directory that is not visible under its final name).
    """
    make_private_dirs(os.path.dirname(path) or ".")
    tmp = f"{path}.{os.getpid()}.tmp" if atomic else path
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        if atomic:
            os.replace(tmp, path)
    except BaseException:
        if atomic:
            try:  # noqa: SIM105 (contextlib costs start-up time)
                os.unlink(tmp)
            except OSError:
                pass
        raise


def try_write_private(path: str, data: bytes) -> bool:
    """``write_private`` for caches: a read-only home only costs the cache, never an error."""
    try:
        write_private(path, data)
    except OSError:
        return False
    return True
