"""On-disk state of durable ``local_cwd`` apps, shared by the scheduler and the supervisor.

Every app owns ``$TORCHX_HOME/local_cwd/<app_id>/`` holding:

- ``request.json``: everything needed to (re)start the replicas (written once, at schedule);
- ``state.json``: app/replica states, pids, exit codes (rewritten atomically by the supervisor);
- ``supervisor.lock``: exclusively ``flock``-ed by whoever owns the app (the launcher while
  it hands the app over, then the supervisor for its whole life). A lock that can be taken
  means nobody owns the app any more, which is how other processes detect a dead supervisor
  without trusting pids;
- ``cancel``: created by ``cancel()`` from any process;
- ``supervisor.log``: the supervisor's own stderr (tracebacks if it crashes).

This module imports only the standard library (no ``torchx.specs``) so the supervisor stays
cheap to start with ``python -m``.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import time
from collections.abc import Iterable

from torchx.util.support import atomic
from torchx.util.support.atomic import make_private_dirs, write_private
from torchx.util.support.home import torchx_home

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REQUEST_FILE = "request.json"
STATE_FILE = "state.json"
LOCK_FILE = "supervisor.lock"
CANCEL_FILE = "cancel"
SUPERVISOR_LOG = "supervisor.log"
SUCCESS_FILE = "SUCCESS"

STDOUT_LOG = "stdout.log"
STDERR_LOG = "stderr.log"
COMBINED_LOG = "combined.log"
ERROR_FILE = "error.json"

# App and replica states as stored on disk: names of ``torchx.specs.AppState`` members.
PENDING = "PENDING"
RUNNING = "RUNNING"
SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
CANCELLED = "CANCELLED"
TERMINAL_STATES = frozenset({SUCCEEDED, FAILED, CANCELLED})

DIR_MODE = atomic.DIR_MODE
FILE_MODE = atomic.FILE_MODE


def apps_root() -> str:
    """Directory holding one state directory per local_cwd app."""
    return os.path.join(torchx_home(), "local_cwd")


def app_state_dir(app_id: str) -> str:
    """State directory of ``app_id`` (rejecting ids that would escape the apps root)."""
    if not app_id or "/" in app_id or app_id.startswith("."):
        raise ValueError(
            f"invalid local_cwd app id {app_id!r}: expected a name like 'echo-x2b4k' "
            "(no '/', not starting with '.')"
        )
    return os.path.join(apps_root(), app_id)


def ensure_private_dir(path: str) -> None:
    """Creates ``path`` and any missing parents, each with mode 0700."""
    make_private_dirs(path)


def write_json_atomic(path: str, obj: Any, atomic: bool = True) -> None:
    """Writes ``obj`` as JSON so readers see either the old or the new file, never a torn one.

    ``atomic=False`` writes in place: only for files nobody can read yet (a directory that
    is not visible under its final name).
    """

    write_private(path, json.dumps(obj, separators=(",", ":")).encode(), atomic=atomic)


def read_json(path: str) -> Any:
    """The parsed JSON file, or None if it does not exist (or is unreadable garbage)."""

    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except FileNotFoundError:
        return None
    except (ValueError, IsADirectoryError, NotADirectoryError):
        return None


def above_stdio(fd: int, close_original: bool = True) -> int:
    """``fd`` itself, or a duplicate numbered 3 or more (a daemon may have closed 0-2)."""
    if fd > 2:
        return fd

    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    if close_original:
        os.close(fd)
    return high


def pipe_above_stdio() -> tuple[int, int]:
    """``os.pipe()`` with both ends numbered 3 or more."""
    read_fd, write_fd = os.pipe()
    return above_stdio(read_fd), above_stdio(write_fd)


def open_log_fd(path: str) -> int:
    """A private log file opened for appending (created if missing)."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, FILE_MODE)


def create_private_file(path: str) -> None:
    """Creates an empty 0600 file (or leaves an existing one untouched)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, FILE_MODE))


# ---------------------------------------------------------------------------------------------
# process identity: a pid alone may be reused, (pid, start time since boot) may not


_HAVE_PROC = os.path.isdir("/proc/self")


def proc_start_ticks(pid: int, zombie_ok: bool = False) -> int | None:
    """Start time of a process in clock ticks since boot; None if gone (or a zombie,
    unless ``zombie_ok``: a zombie keeps its pid, hence its identity, until reaped).

    Without ``/proc`` (not Linux) start times are unknown: 0 for any live pid.
    """
    if not _HAVE_PROC:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return 0
        return 0
    try:  # os-level I/O: called for every replica on the launch path, no file objects
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        stat = os.read(fd, 4096)  # one line of a few hundred bytes
    except OSError:
        return None
    finally:
        os.close(fd)
    # the command name may contain spaces and parentheses: fields start after the last ')'
    fields = stat[stat.rfind(b")") + 2 :].split()
    if not fields or fields[0] == b"X" or (fields[0] == b"Z" and not zombie_ok):
        return None
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def same_process(pid: int | None, start_ticks: int | None) -> bool:
    """True if ``pid`` is alive and is the very process that was recorded."""
    if not pid or pid <= 0:
        return False
    ticks = proc_start_ticks(pid)
    return ticks is not None and (start_ticks is None or ticks == start_ticks)


def parent_map() -> dict[int, int]:
    """pid -> parent pid of every live process (one pass over /proc; empty without it)."""
    result: dict[int, int] = {}
    if not _HAVE_PROC:
        return result
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[0] not in (b"Z", b"X"):
            result[int(name)] = int(fields[1])
    return result


def descendants(root: int) -> list[int]:
    """Live descendants of ``root`` (children first), found by walking the parent links."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_map().items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    frontier = [root]
    while frontier:
        nxt: list[int] = []
        for pid in frontier:
            for child in children.get(pid, ()):
                found.append(child)
                nxt.append(child)
        frontier = nxt
    return found


def signal_group(pgid: int, sig: int) -> bool:
    """Sends ``sig`` to a process group; False if the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


def signal_pid(pid: int, sig: int) -> None:
    try:  # noqa: SIM105 (contextlib costs every local_cwd command its import)
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def terminate_groups(groups: Iterable[int], grace: float) -> None:
    """SIGTERM each process group, wait up to ``grace`` s for the leaders, then SIGKILL.

    Used only by processes that are not the groups' parent (recovery after the supervisor
    died), so nothing here reaps. The final SIGKILL goes to every group, so members that
    outlived their leader are stopped too.
    """

    groups = [g for g in groups if signal_group(g, signal.SIGTERM)]
    deadline = time.monotonic() + grace
    delay = 0.005
    leaders = list(groups)
    while leaders and time.monotonic() < deadline:
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
        leaders = [g for g in leaders if proc_start_ticks(g) is not None]
    for g in groups:
        signal_group(g, signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# ownership lock


def open_lock(state_dir: str) -> int:
    return os.open(
        os.path.join(state_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE
    )


def is_owned(state_dir: str) -> bool:
    """True if a launcher or supervisor currently owns the app (holds its lock)."""
    try:
        fd = os.open(os.path.join(state_dir, LOCK_FILE), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)
    return False


class orphan_lock:
    """``with orphan_lock(state_dir) as got``: ``got`` is True while this process holds the
    lock of an app nobody else owns.

    False when the app is owned (alive supervisor) or another process is already
    recovering it; callers then leave the app alone. (A class, not a
    ``contextlib.contextmanager``: :mod:`contextlib` costs every command its import.)
    """

    def __init__(self, state_dir: str) -> None:
        self._state_dir = state_dir
        self._fd = -1

    def __enter__(self) -> bool:
        try:
            fd = open_lock(self._state_dir)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return False
            raise
        self._fd = fd
        return True

    def __exit__(self, *exc_info: object) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


# ---------------------------------------------------------------------------------------------
# state document helpers


def new_state(num_replicas: list[int]) -> dict[str, Any]:
    """Initial state of a freshly scheduled app: every replica PENDING, no supervisor yet."""
    now = time.time()
    return {
        "state": PENDING,
        "msg": "",
        "num_restarts": 0,
        "supervisor": None,
        "cancel_requested": False,
        "created": now,
        "updated": now,
        "ended": None,
        "roles": [
            [
                {
                    "state": PENDING,
                    "pid": None,
                    "start_ticks": None,
                    "exit_code": None,
                    "attempt": 0,
                    "started": None,
                    "ended": None,
                }
                for _ in range(n)
            ]
            for n in num_replicas
        ],
    }


def success_document(request: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """The upstream-compatible ``SUCCESS`` file content (written once the app is terminal)."""
    roles: dict[str, list[dict[str, Any]]] = {}
    for role, replicas in zip(request["roles"], state["roles"], strict=True):
        roles[role["name"]] = [
            {
                "replica_id": i,
                "pid": rep["pid"],
                "exitcode": rep["exit_code"],
                "stdout": params["stdout"],
                "stderr": params["stderr"],
                "error_file": params["env"].get("TORCHELASTIC_ERROR_FILE", "<N/A>"),
            }
            for i, (rep, params) in enumerate(zip(replicas, role["replicas"], strict=True))
        ]
    return {
        "app_id": request["app_id"],
        "log_dir": request["log_dir"],
        "final_state": state["state"],
        "last_updated": state["updated"],
        "roles": roles,
    }


def write_success_file(request: dict[str, Any], state: dict[str, Any]) -> None:
    """Best effort: a vanished log dir must not turn a finished app into an error."""
    log_dir = request["log_dir"]
    if os.path.isdir(log_dir):  # never re-create a log dir the user removed
        try:
            import json

            data = json.dumps(success_document(request, state), indent=2, default=str).encode()
            write_private(os.path.join(log_dir, SUCCESS_FILE), data)
        except OSError:
            pass


def recover_orphaned(state_dir: str, cancelled: bool) -> dict[str, Any] | None:
    """Finalizes an app whose supervisor is gone; returns the (now terminal) state.

    Kills replica process groups that are still running (verified by pid + start time),
    marks unfinished replicas and the app terminal: CANCELLED if ``cancelled`` else FAILED
    with a message that says the supervisor died. Returns None if the app is owned by a
    live supervisor (nothing to do) or vanished.
    """
    with orphan_lock(state_dir) as got:
        if not got:
            return None
        state = read_json(os.path.join(state_dir, STATE_FILE))
        request = read_json(os.path.join(state_dir, REQUEST_FILE))
        if state is None or request is None:
            return None
        if state["state"] in TERMINAL_STATES:
            return dict(state)
        running = [
            rep["pid"]
            for replicas in state["roles"]
            for rep in replicas
            if rep["state"] == RUNNING and same_process(rep["pid"], rep["start_ticks"])
        ]
        terminate_groups(running, grace=2.0)
        final = CANCELLED if cancelled else FAILED
        now = time.time()
        for replicas in state["roles"]:
            for rep in replicas:
                if rep["state"] not in TERMINAL_STATES:
                    rep["state"] = final
                    rep["ended"] = now
        sup = state.get("supervisor") or {}
        if cancelled:
            state["msg"] = "cancelled (the supervisor was not running; replicas were stopped)"
        elif sup.get("pid"):
            state["msg"] = (
                f"the local_cwd supervisor (pid {sup['pid']}) died while the app was running;"
                " its replicas were stopped and their exit codes are unknown"
            )
        else:
            state["msg"] = "the local_cwd supervisor never started (the launcher died first)"
        state["state"] = final
        state["cancel_requested"] = state.get("cancel_requested") or cancelled
        state["ended"] = now
        state["updated"] = now
        write_json_atomic(os.path.join(state_dir, STATE_FILE), state)
        write_success_file(request, state)
        return dict(state)
