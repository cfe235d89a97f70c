"""The launcher's side of durable ``local_cwd`` apps: how a launcher starts an app's
supervisor and hands the app over to it.

One supervisor process owns one app from ``schedule()`` until the app is terminal. It starts
the replicas (each in its own session), pumps their stdout/stderr pipes into
``stdout.log``/``stderr.log``/``combined.log``, reaps them, applies the retry policies and
records every change in ``state.json`` (batched over at most 10 ms). It is a child
subreaper, so descendants that daemonize are re-parented to it and stopped when the app
ends: an app never leaves orphans.

Why a separate process: the launcher (``torchx run``, a notebook, a test) may exit or be
killed while the app runs; any later process reads the state from disk.

How it starts (see :class:`Handover`): on Linux, from a launcher with one thread, the
supervisor is forked (no interpreter start-up) *before* the launcher writes the app's files,
gets ready while the launcher writes them, and takes the app over once the launcher closes
the "go" pipe. Otherwise it is started with ``python -m torchx.schedulers._local.launcher
STATE_DIR LOCK_FD READY_FD`` after the files are written. Either way it inherits the app's
``flock``-ed lock and writes ``ok`` to the ready pipe once it owns the app and has recorded
the replicas as RUNNING; a forked supervisor closes that pipe once the app's final state is
written, which is how its launcher's ``wait`` learns about the end without polling.

This module is the launcher's side; what runs in the supervisor is
:mod:`torchx.schedulers._local.supervisor`, which only the supervisor imports.
"""

from __future__ import annotations

import gc
import os
import sys

from torchx.schedulers._local import records as st
from torchx.schedulers._local import supervisor

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any, NoReturn

ENV_START_METHOD = "TORCHX_LOCAL_CWD_SUPERVISOR"
"""``fork`` or ``spawn`` forces how the supervisor is started (default: ``auto``)."""

_forked: set[int] = set()
"""Supervisors this process forked and has not reaped yet (see :func:`reap_exited`)."""
_forked_before = False


# ---------------------------------------------------------------------------------------------
# launching (runs in the launcher)


def start_method() -> str:
    """``fork`` or ``spawn``: how a supervisor is started from this process right now."""
    method = os.environ.get(ENV_START_METHOD, "auto")
    if method not in ("auto", "fork", "spawn"):
        raise ValueError(
            f"{ENV_START_METHOD}={method!r} is not supported: use 'auto', 'fork' or 'spawn'"
        )
    if method == "auto":
        return "fork" if can_fork() else "spawn"
    return method


def can_fork() -> bool:
    """Forking is only safe on Linux from a process with a single (OS-level) thread."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


class Handover:
    """Starts the supervisor of one app and hands the app over to it.

    Create it once the app's lock is held, before the app is prepared and its files are
    written in ``work_dir`` (the directory later renamed to ``state_dir``); call :meth:`go`
    with the app once ``state_dir`` is complete, then :meth:`wait`; or :meth:`abort` after
    removing it.

    Fork mode forks right here, so the child's set-up (its code, signal handlers, the
    subreaper) overlaps the launcher's work on the app; the child then reads the app
    (request and state, in :mod:`marshal` form) from the "go" pipe until the launcher
    closes it. A launcher killed after completing ``state_dir`` but before sending the
    app still gets it run: the child reads the app's files then. Spawn mode (threads in
    the launcher) starts ``python -m`` at :meth:`go`, after every file is in place.
    """

    def __init__(
        self,
        method: str,
        state_dir: str,
        work_dir: str,
        *,
        lock_fd: int,
    ) -> None:
        """``method`` is :func:`start_method`'s answer (asked before anything is created)."""
        self.method = method
        self.state_dir = state_dir
        self.launcher_pid = os.getpid()  # the ready pipe is this process's to read
        self._go_w = -1
        self._ready_r = -1
        self._proc: subprocess.Popen[bytes] | None = None
        # the supervisor's stdin/stdout/stderr are replaced: keep its descriptors above 2
        self._lock_fd = st.above_stdio(lock_fd, close_original=False)
        self._own_lock_fd = self._lock_fd != lock_fd
        self._log_fd = st.above_stdio(st.open_log_fd(os.path.join(work_dir, st.SUPERVISOR_LOG)))
        if self.method == "fork":
            try:
                self._fork()
            except BaseException:
                self.abort()
                raise

    def _fork(self) -> None:
        global _forked_before  # noqa: PLW0603 (process-wide: has this launcher forked yet)
        if _forked_before:
            # a launcher of several apps: the supervisor's code, loaded here once, comes
            # with every later fork; the first supervisor loads it while we prepare the app

            supervisor.preload()
        go_r, go_w = st.pipe_above_stdio()
        ready_r, ready_w = st.pipe_above_stdio()
        try:
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the forked child, which never returns
                _forked_child(
                    self.state_dir,
                    lock_fd=self._lock_fd,
                    log_fd=self._log_fd,
                    go_r=go_r,
                    ready_w=ready_w,
                )
        except BaseException:
            for fd in (go_r, go_w, ready_r, ready_w):
                os.close(fd)
            raise
        _forked.add(pid)
        _forked_before = True
        os.close(go_r)
        os.close(ready_w)
        self._go_w, self._ready_r = go_w, ready_r
        self._close_launcher_fds()

    def go(self, request: dict[str, Any], state: dict[str, Any]) -> None:
        """Lets the supervisor take the (now complete) app over: fork mode sends it the app
        and closes "go", spawn mode starts the interpreter (which reads the app's files).
        :meth:`wait` then waits until it owns the app."""
        try:
            if self.method == "spawn":
                self._spawn()
            else:
                from torchx.util.startup import go_pipe

                go_w, self._go_w = self._go_w, -1
                go_pipe.send(go_w, request, state)
        except BaseException:
            self.abort()
            raise

    def wait(self) -> int:
        """Returns once the supervisor owns the app and has recorded its replicas.

        Returns a descriptor that reaches end-of-file when the supervisor has written the
        app's final state (or died), for :meth:`LocalScheduler.wait_for_change`; -1 in
        spawn mode. Raises RuntimeError (with the supervisor's error output) if it failed.
        """
        try:
            _wait_ready(self._ready_r, self.state_dir)
        except BaseException:
            self.abort()
            raise
        self._reap_spawner()
        done_fd, self._ready_r = self._ready_r, -1
        if self.method == "spawn":
            os.close(done_fd)
            return -1
        return done_fd

    def abort(self) -> None:
        """Gives the hand-over up; a supervisor still waiting for "go" exits without
        touching anything (the caller removes ``state_dir`` first)."""
        for name in ("_go_w", "_ready_r"):
            fd = getattr(self, name)
            if fd >= 0:
                setattr(self, name, -1)
                os.close(fd)
        self._close_launcher_fds()
        self._reap_spawner()
        reap_exited()

    def _spawn(self) -> None:
        import subprocess

        ready_r, ready_w = st.pipe_above_stdio()
        self._ready_r = ready_r
        try:
            self._proc = subprocess.Popen(
                [
                    sys.executable or "python3",
                    "-m",
                    "torchx.schedulers._local.launcher",
                    self.state_dir,
                    str(self._lock_fd),
                    str(ready_w),
                ],
                pass_fds=(self._lock_fd, ready_w),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log_fd,
                start_new_session=True,
            )
        finally:
            os.close(ready_w)
            self._close_launcher_fds()

    def _close_launcher_fds(self) -> None:
        if self._log_fd >= 0:
            os.close(self._log_fd)
            self._log_fd = -1
        if self._own_lock_fd:
            os.close(self._lock_fd)
            self._own_lock_fd = False

    def _reap_spawner(self) -> None:
        # the spawned interpreter forks the real supervisor and exits at once
        if self._proc is not None:
            self._proc.wait()
            self._proc = None


def reap_exited() -> None:
    """Collects forked supervisors that have exited, so none stays a zombie.

    A forked supervisor is this process's child until this process exits (then init
    adopts it): the scheduler calls this whenever it learns that an app ended.
    """
    for pid in list(_forked):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else, or this is a forked copy
            done = pid
        if done:
            _forked.discard(pid)


def _wait_ready(ready_r: int, state_dir: str) -> None:
    data = b""
    while True:
        chunk = os.read(ready_r, 64)
        if not chunk:
            break
        data += chunk
        if data.startswith(b"ok"):
            return
    log_path = os.path.join(state_dir, st.SUPERVISOR_LOG)
    try:
        with open(log_path, errors="replace") as f:
            detail = f.read()[-2000:].strip()
    except OSError:
        detail = ""
    raise RuntimeError(
        "the local_cwd supervisor exited before taking over the app"
        + (f": {detail}" if detail else "")
    )


# ---------------------------------------------------------------------------------------------
# the supervisor's entry points: what they run lives in ``supervisor`` (imported there only)


def _forked_child(
    state_dir: str,
    *,
    lock_fd: int,
    log_fd: int,
    go_r: int,
    ready_w: int,
) -> NoReturn:  # pragma: no cover - runs in the forked child
    code = 1
    try:
        os.setsid()  # not the launcher's terminal, nor its process group
        gc.freeze()  # never finalize launcher objects (they may own reused fd numbers)
        from torchx.schedulers._local import supervisor

        supervisor.detach_stdio(log_fd, keep=(lock_fd, go_r, ready_w))
        code = supervisor.supervise(state_dir, lock_fd, ready_w, go_r=go_r)
    except BaseException:
        try:  # to the supervisor's log, for the launcher's error message
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:  # noqa: S110 (nowhere left to report it)
            pass
    finally:
        os._exit(code)


def main(argv: list[str] | None = None) -> None:
    """``python -m`` entry: ``STATE_DIR LOCK_FD READY_FD`` (started by :class:`Handover`)."""

    supervisor.main(argv)


if __name__ == "__main__":
    main()
