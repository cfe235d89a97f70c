"""The per-app supervisor of durable ``local_cwd`` apps, and how a launcher starts one.

One supervisor process owns one app from ``schedule()`` until the app is terminal. It starts
the replicas (each in its own session), pumps their stdout/stderr pipes into
``stdout.log``/``stderr.log``/``combined.log``, reaps them, applies the retry policies and
records every change in ``state.json`` (batched over at most 10 ms). It is a child
subreaper, so descendants that daemonize are re-parented to it and stopped when the app
ends: an app never leaves orphans.

Why a separate process: the launcher (``torchx run``, a notebook, a test) may exit or be
killed while the app runs; any later process reads the state from disk.

Started either by forking the launcher (Linux, launcher has one thread: no interpreter
start-up cost) or as ``python -m torchx.schedulers.local_supervisor STATE_DIR LOCK_FD
READY_FD``. Either way the launcher hands over the app's ``flock``-ed lock and waits for a
readiness byte, so once ``schedule()`` returns the supervisor owns the app.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import selectors
import signal
import subprocess
import sys
import time
import traceback
from typing import Any

from torchx.schedulers import local_state as st

ENV_START_METHOD = "TORCHX_LOCAL_CWD_SUPERVISOR"
"""``fork`` or ``spawn`` forces how the supervisor is started (default: ``auto``)."""

TERMINATE_GRACE_S = 10.0
"""Time between SIGTERM and SIGKILL when stopping replicas and leftover descendants."""

_COMBINED_FLUSH_S = 0.1
"""A partial line waits at most this long before it is written to combined.log anyway."""

_STATE_WRITE_DELAY_S = 0.01
"""Changes are batched for this long before ``state.json`` is rewritten (the first and the
final state are written at once)."""

_READ_SIZE = 1 << 16
_PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


# ---------------------------------------------------------------------------------------------
# launching (runs in the launcher)


def launch(state_dir: str, request: dict[str, Any], lock_fd: int) -> None:
    """Starts the supervisor of the prepared app in ``state_dir``; returns once it owns it.

    ``lock_fd`` is the launcher's ``flock``-ed lock of the app; the supervisor inherits the
    same open file description, so the app is never unowned during the hand-over.
    Raises RuntimeError (with the supervisor's own error output) if it failed to start.
    """
    method = os.environ.get(ENV_START_METHOD, "auto")
    if method not in ("auto", "fork", "spawn"):
        raise ValueError(
            f"{ENV_START_METHOD}={method!r} is not supported: use 'auto', 'fork' or 'spawn'"
        )
    # the supervisor's stdin/stdout/stderr are replaced: keep the lock out of fds 0-2
    high_lock_fd = _above_stdio(lock_fd, close_original=False)
    try:
        if method == "fork" or (method == "auto" and can_fork()):
            _fork_supervisor(state_dir, request, high_lock_fd)
        else:
            _spawn_supervisor(state_dir, high_lock_fd)
    finally:
        if high_lock_fd != lock_fd:
            os.close(high_lock_fd)


def _above_stdio(fd: int, close_original: bool = True) -> int:
    """``fd`` itself, or a duplicate numbered 3 or more (a daemon may have closed 0-2)."""
    if fd > 2:
        return fd
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    if close_original:
        os.close(fd)
    return high


def _pipe() -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    return _above_stdio(read_fd), _above_stdio(write_fd)


def can_fork() -> bool:
    """Forking is only safe on Linux from a process with a single (OS-level) thread."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _fork_supervisor(state_dir: str, request: dict[str, Any], lock_fd: int) -> None:
    # loaded before forking, so every supervisor after the first one gets them for free
    _load_prctl()
    import resource  # noqa: F401

    ready_r, ready_w = _pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked child, which never returns
        code = 1
        try:
            os.close(ready_r)
            os.setsid()
            if os.fork() == 0:
                gc.freeze()  # never finalize launcher objects (they may own reused fd numbers)
                _detach_stdio(state_dir, keep=(lock_fd, ready_w))
                code = _run_supervisor(state_dir, request, lock_fd, ready_w)
            else:
                code = 0
        except BaseException:
            with contextlib.suppress(BaseException):
                traceback.print_exc()
        finally:
            os._exit(code)
    os.close(ready_w)
    try:
        _wait_ready(ready_r, state_dir)
    finally:
        os.close(ready_r)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _spawn_supervisor(state_dir: str, lock_fd: int) -> None:
    ready_r, ready_w = _pipe()
    log_fd = os.open(
        os.path.join(state_dir, st.SUPERVISOR_LOG),
        os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
        st.FILE_MODE,
    )
    try:
        proc = subprocess.Popen(
            [
                sys.executable or "python3",
                "-m",
                "torchx.schedulers.local_supervisor",
                state_dir,
                str(lock_fd),
                str(ready_w),
            ],
            pass_fds=(lock_fd, ready_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log_fd,
            start_new_session=True,
        )
    finally:
        os.close(ready_w)
        os.close(log_fd)
    try:
        _wait_ready(ready_r, state_dir)
    finally:
        os.close(ready_r)
        proc.wait()


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


def _detach_stdio(state_dir: str, keep: tuple[int, ...]) -> None:
    """Leaves the launcher's terminal/pipes alone: stdin/stdout to /dev/null, stderr to a log.

    Every other inherited descriptor is closed, so a launcher whose output is captured
    (``subprocess.run(capture_output=True)``) is not kept waiting for the app to end.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    log_fd = os.open(
        os.path.join(state_dir, st.SUPERVISOR_LOG),
        os.O_WRONLY | os.O_CREAT | os.O_APPEND,
        st.FILE_MODE,
    )
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.dup2(log_fd, 2)
    keep_set = sorted({0, 1, 2, *keep})
    max_fd = os.sysconf("SC_OPEN_MAX")
    low = 3
    for fd in keep_set:
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, max_fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115


_prctl: Any = None


def _load_prctl() -> Any:
    global _prctl  # noqa: PLW0603 (a process-wide handle, loaded once)
    if _prctl is None:
        import ctypes

        _prctl = ctypes.CDLL(None, use_errno=True).prctl
    return _prctl


def _become_subreaper() -> None:
    """Orphaned descendants are re-parented to us (not init), so we can find and stop them."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        _load_prctl()(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _raise_fd_limit(num_replicas: int) -> None:
    """Makes room for 5 descriptors per replica (2 pipes, 3 logs) when the soft limit is
    too low. Only then: replicas inherit the limit, and some programs mind a huge one."""
    import resource

    needed = 5 * num_replicas + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    target = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def main(argv: list[str] | None = None) -> None:
    """``python -m`` entry: ``STATE_DIR LOCK_FD READY_FD`` (started by ``launch``)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print(
            "usage: python -m torchx.schedulers.local_supervisor STATE_DIR LOCK_FD READY_FD",
            file=sys.stderr,
        )
        sys.exit(2)
    state_dir, lock_fd, ready_fd = args[0], int(args[1]), int(args[2])
    # fork once more so the launcher can reap its child right away; we are re-parented
    if os.fork() != 0:
        os._exit(0)
    code = 1
    try:
        request = st.read_json(os.path.join(state_dir, st.REQUEST_FILE))
        if request is None:
            raise RuntimeError(f"no readable {st.REQUEST_FILE} in {state_dir}")
        code = _run_supervisor(state_dir, request, lock_fd, ready_fd)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def _run_supervisor(state_dir: str, request: dict[str, Any], lock_fd: int, ready_fd: int) -> int:
    supervisor = Supervisor(state_dir, request, lock_fd)
    try:
        supervisor.take_over(ready_fd)
        supervisor.run()
    except BaseException as e:
        traceback.print_exc()
        supervisor.abort(f"the local_cwd supervisor crashed: {type(e).__name__}: {e}")
        return 1
    return 0


# ---------------------------------------------------------------------------------------------
# supervising (runs in the supervisor)


class _Pipe:
    """Read end of one replica stream; keeps its own partial line for combined.log."""

    __slots__ = ("fd", "partial", "replica", "since", "stream")

    def __init__(self, fd: int, replica: _Replica, stream: int) -> None:
        self.fd = fd
        self.replica = replica
        self.stream = stream  # 0 stdout, 1 stderr
        self.partial = bytearray()
        self.since = 0.0  # when ``partial`` became non-empty


class _Replica:
    __slots__ = (
        "log_fds",
        "params",
        "pid",
        "pipes",
        "proc",
        "record",
        "replica_id",
        "role_idx",
        "stopping",
    )

    def __init__(
        self, role_idx: int, replica_id: int, params: dict[str, Any], record: dict[str, Any]
    ) -> None:
        self.role_idx = role_idx
        self.replica_id = replica_id
        self.params = params
        self.record = record  # this replica's entry in the state document (mutated in place)
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0
        self.pipes: list[_Pipe] = []
        self.log_fds: tuple[int, int, int] | None = None
        self.stopping = False

    @property
    def running(self) -> bool:
        return self.pid != 0


class Supervisor:
    """Runs one app to completion; every decision is recorded in ``state.json``."""

    def __init__(self, state_dir: str, request: dict[str, Any], lock_fd: int) -> None:
        self.state_dir = state_dir
        self.request = request
        self.lock_fd = lock_fd
        self.state_path = os.path.join(state_dir, st.STATE_FILE)
        state = st.read_json(self.state_path)
        roles = request["roles"]
        if state is None:
            state = st.new_state([len(r["replicas"]) for r in roles])
        self.state: dict[str, Any] = state
        self.replicas: list[list[_Replica]] = [
            [
                _Replica(r, i, params, state["roles"][r][i])
                for i, params in enumerate(role["replicas"])
            ]
            for r, role in enumerate(roles)
        ]
        self.role_restarts = [0] * len(roles)
        self.by_pid: dict[int, _Replica] = {}
        self.exited: list[tuple[_Replica, int]] = []
        self.pending_restart: set[_Replica] = set()
        self.final: tuple[str, str] | None = None  # (state, msg) once the outcome is decided
        self.kill_deadline: float | None = None
        self.dirty = False
        self.partials: set[_Pipe] = set()
        self.unticked: list[_Replica] = []
        self.write_at: float | None = None
        self.devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        self.selector = selectors.DefaultSelector()
        self.base_env = dict(os.environ)
        self.wake_r = -1

    # -- setup ----------------------------------------------------------------------------------

    def take_over(self, ready_fd: int) -> None:
        """Becomes the app's owner and starts the replicas, then lets the launcher return.

        The first state written already names the supervisor and the replicas' pids, so a
        ``describe`` right after ``schedule()`` sees the app RUNNING (or CANCELLED).
        """
        os.set_inheritable(self.lock_fd, False)
        self._install_signals()
        _become_subreaper()
        _raise_fd_limit(sum(len(replicas) for replicas in self.replicas))
        pid = os.getpid()
        self.state["supervisor"] = {"pid": pid, "start_ticks": st.proc_start_ticks(pid)}
        if os.path.exists(os.path.join(self.state_dir, st.CANCEL_FILE)):
            self._cancel("cancelled by request")
        else:
            for replicas in self.replicas:
                for rep in replicas:
                    self._start(rep)
            self.state["state"] = st.RUNNING
        self._write_state()
        os.write(ready_fd, b"ok")
        os.close(ready_fd)

    def _install_signals(self) -> None:
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        for sig in (signal.SIGCHLD, *_STOP_SIGNALS):
            signal.signal(sig, _ignore_signal)
        self.selector.register(self.wake_r, selectors.EVENT_READ, None)

    # -- main loop ------------------------------------------------------------------------------

    def run(self) -> None:
        """Supervises until every replica is done; then stops leftovers, writes the end."""
        while True:
            self._process_exits()
            if not self.by_pid and not self.pending_restart and not self.exited:
                break  # the final write follows at once
            if self.dirty:
                now = time.monotonic()
                if self.write_at is None:
                    self.write_at = now + _STATE_WRITE_DELAY_S
                elif now >= self.write_at:
                    self._write_state()
            self._wait_for_events(self._timeout())
            self._check_kill_deadline()
        self._finish()

    def _timeout(self) -> float | None:
        timeouts: list[float] = []
        if self.partials:
            timeouts.append(_COMBINED_FLUSH_S)
        if self.kill_deadline is not None:
            timeouts.append(max(0.0, self.kill_deadline - time.monotonic()))
        if self.write_at is not None:
            timeouts.append(max(0.0, self.write_at - time.monotonic()))
        return min(timeouts) if timeouts else None

    def _wait_for_events(self, timeout: float | None) -> None:
        events = self.selector.select(timeout)
        for key, _ in events:
            if key.data is None:
                self._on_signals()
            else:
                self._pump(key.data)
        if self.partials:
            too_old = time.monotonic() - _COMBINED_FLUSH_S
            for pipe in [p for p in self.partials if p.since <= too_old]:
                self._flush_partial(pipe)

    def _on_signals(self) -> None:
        try:
            data = os.read(self.wake_r, 4096)
        except BlockingIOError:
            data = b""
        for signum in data:
            if signum in _STOP_SIGNALS:
                if os.path.exists(os.path.join(self.state_dir, st.CANCEL_FILE)):
                    self._cancel("cancelled by request")
                else:
                    self._cancel(
                        f"cancelled: the supervisor received {signal.Signals(signum).name}"
                    )
        self._reap()

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            rep = self.by_pid.pop(pid, None)
            if rep is not None:
                code = os.waitstatus_to_exitcode(status)
                if rep.proc is not None:
                    rep.proc.returncode = code  # we reaped it; keep Popen from waiting again
                self.exited.append((rep, code))

    # -- replica lifecycle ----------------------------------------------------------------------

    def _start(self, rep: _Replica) -> None:
        params = rep.params
        record = rep.record
        if rep.log_fds is None:
            rep.log_fds = (
                _open_log(params["stdout"]),
                _open_log(params["stderr"]),
                _open_log(params["combined"]),
            )
        now = time.time()
        record.update(state=st.RUNNING, exit_code=None, started=now, ended=None)
        env = {**self.base_env, **params["env"]}
        env.setdefault("PYTHONUNBUFFERED", "x")
        out_r, out_w = _pipe()
        err_r, err_w = _pipe()
        try:
            proc = run_local_job(
                params["args"], env, out_w, err_w, params.get("cwd"), stdin=self.devnull
            )
        except OSError as e:
            for fd in (out_r, err_r):
                os.close(fd)
            role = self.request["roles"][rep.role_idx]["name"]
            msg = f"torchx local_cwd: cannot start replica {role}/{rep.replica_id}: {e}\n".encode()
            _write_all(rep.log_fds[1], msg)
            _write_all(rep.log_fds[2], msg)
            record.update(pid=None, start_ticks=None)
            self.exited.append((rep, 126 if e.errno == errno.EACCES else 127))
            return
        finally:
            os.close(out_w)
            os.close(err_w)
        rep.proc = proc
        rep.pid = proc.pid
        rep.stopping = False
        self.by_pid[proc.pid] = rep
        # start_ticks is read when the state is written: reading /proc/<pid>/stat now
        # would block until the child has finished its exec
        record.update(pid=proc.pid, start_ticks=None)
        self.unticked.append(rep)
        for fd, stream in ((out_r, 0), (err_r, 1)):
            os.set_blocking(fd, False)
            pipe = _Pipe(fd, rep, stream)
            rep.pipes.append(pipe)
            self.selector.register(fd, selectors.EVENT_READ, pipe)
        self.dirty = True

    def _process_exits(self) -> None:
        while self.exited:
            rep, code = self.exited.pop(0)
            for pipe in list(rep.pipes):
                self._pump(pipe)  # all the replica wrote is in the pipe: log it before the exit
                self._flush_partial(pipe)
            self._record_exit(rep, code)
        self._start_pending_restarts()

    def _record_exit(self, rep: _Replica, code: int) -> None:
        record = rep.record
        was_stopped = rep.stopping
        rep.pid = 0
        rep.proc = None
        rep.stopping = False
        record.update(exit_code=code, ended=time.time())
        self.dirty = True
        if rep in self.pending_restart:
            record["state"] = st.PENDING
            return
        if code == 0:
            record["state"] = st.SUCCEEDED
            return
        if was_stopped:  # stopped by us (cancel, or another replica failed)
            record["state"] = st.CANCELLED
            return
        record["state"] = st.FAILED
        if self.final is not None:
            return
        role = self.request["roles"][rep.role_idx]
        if self.role_restarts[rep.role_idx] < int(role.get("max_retries", 0)):
            self._restart_after_failure(rep, str(role.get("retry_policy", "APPLICATION")))
            return
        self.final = (st.FAILED, _failure_msg(role["name"], rep.replica_id, code))
        self.state["msg"] = self.final[1]
        self._stop([r for replicas in self.replicas for r in replicas])

    def _restart_after_failure(self, rep: _Replica, policy: str) -> None:
        self.role_restarts[rep.role_idx] += 1
        self.state["num_restarts"] += 1
        if policy == "REPLICA":
            group = [rep]
        elif policy == "ROLE":
            group = list(self.replicas[rep.role_idx])
        else:
            group = [r for replicas in self.replicas for r in replicas]
        for r in group:
            self.pending_restart.add(r)
            if not r.running:
                r.record["state"] = st.PENDING
        self._stop(group)

    def _start_pending_restarts(self) -> None:
        if not self.pending_restart or any(r.running for r in self.pending_restart):
            return
        group = sorted(self.pending_restart, key=lambda r: (r.role_idx, r.replica_id))
        self.pending_restart.clear()
        for rep in group:
            rep.record["attempt"] += 1
            self._start(rep)

    def _cancel(self, msg: str) -> None:
        self.state["cancel_requested"] = True
        self.dirty = True
        if self.final is not None:
            return
        self.final = (st.CANCELLED, msg)
        self.state["msg"] = msg
        self.pending_restart.clear()
        for replicas in self.replicas:
            for rep in replicas:
                if not rep.running and rep.record["state"] == st.PENDING:
                    rep.record["state"] = st.CANCELLED
        self._stop([r for replicas in self.replicas for r in replicas])

    def _stop(self, reps: list[_Replica]) -> None:
        """SIGTERM the process groups of running replicas; SIGKILL follows after the grace."""
        signalled = False
        for rep in reps:
            if rep.running and not rep.stopping:
                rep.stopping = True
                st.signal_group(rep.pid, signal.SIGTERM)
                signalled = True
        if signalled and self.kill_deadline is None:
            self.kill_deadline = time.monotonic() + TERMINATE_GRACE_S

    def _check_kill_deadline(self) -> None:
        if self.kill_deadline is None or time.monotonic() < self.kill_deadline:
            return
        for rep in self.by_pid.values():
            if rep.stopping:
                st.signal_group(rep.pid, signal.SIGKILL)
        self.kill_deadline = None
        stragglers = [r for r in self.by_pid.values() if r.stopping]
        if stragglers:  # SIGKILL is not ignorable: wait for the reaps without a deadline
            self.kill_deadline = time.monotonic() + TERMINATE_GRACE_S

    # -- logs -----------------------------------------------------------------------------------

    def _pump(self, pipe: _Pipe) -> None:
        """Moves everything readable right now from ``pipe`` into the log files."""
        fds = pipe.replica.log_fds
        assert fds is not None
        while True:
            try:
                data = os.read(pipe.fd, _READ_SIZE)
            except BlockingIOError:
                return
            if not data:
                self._flush_partial(pipe)
                self._close_pipe(pipe)
                return
            _write_all(fds[pipe.stream], data)
            self._write_combined(pipe, data, fds[2])
            if len(data) < _READ_SIZE:
                return

    def _write_combined(self, pipe: _Pipe, data: bytes, fd: int) -> None:
        # whole lines only, so stdout and stderr lines never interleave mid-line
        cut = data.rfind(b"\n") + 1
        partial = pipe.partial
        if not partial:
            pipe.since = time.monotonic()
        if cut == 0:
            partial += data
            if len(partial) >= _READ_SIZE:
                self._flush_partial(pipe)
            else:
                self.partials.add(pipe)
            return
        if partial:
            partial += data[:cut]
            _write_all(fd, bytes(partial))
            partial.clear()
        else:
            _write_all(fd, data[:cut] if cut < len(data) else data)
        if cut < len(data):
            partial += data[cut:]
            pipe.since = time.monotonic()
            self.partials.add(pipe)
        else:
            self.partials.discard(pipe)

    def _flush_partial(self, pipe: _Pipe) -> None:
        if pipe.partial:
            fds = pipe.replica.log_fds
            assert fds is not None
            _write_all(fds[2], bytes(pipe.partial))
            pipe.partial.clear()
        self.partials.discard(pipe)

    def _close_pipe(self, pipe: _Pipe) -> None:
        self.selector.unregister(pipe.fd)
        os.close(pipe.fd)
        pipe.replica.pipes.remove(pipe)

    # -- the end --------------------------------------------------------------------------------

    def _finish(self) -> None:
        self._stop_leftovers()
        self._drain_all(deadline=time.monotonic() + 1.0)
        for replicas in self.replicas:
            for rep in replicas:
                for pipe in list(rep.pipes):
                    self._flush_partial(pipe)
                    self._close_pipe(pipe)
                if rep.log_fds is not None:
                    for fd in rep.log_fds:
                        os.close(fd)
                    rep.log_fds = None
        if self.final is None:
            self.final = (st.SUCCEEDED, "")
        self._write_final(*self.final)

    def _write_final(self, state: str, msg: str) -> None:
        now = time.time()
        self.state.update(state=state, msg=msg, ended=now, updated=now)
        # SUCCESS first: whoever sees the terminal state.json also finds the SUCCESS file
        st.write_success_file(self.request, self.state)
        self._write_state()

    def _stop_leftovers(self) -> None:
        """Stops descendants that outlived their replica (daemons, ``cmd &``)."""
        if not self._has_children():
            return
        me = os.getpid()
        signalled: set[int] = set()
        deadline = time.monotonic() + TERMINATE_GRACE_S
        sig = signal.SIGTERM
        while True:
            self._reap()
            tree = st.descendants(me)
            if not tree:
                return
            if time.monotonic() >= deadline:
                sig = signal.SIGKILL
                signalled.clear()
            for pid in tree:
                if pid not in signalled:
                    st.signal_pid(pid, sig)
                    signalled.add(pid)
            # keep pumping: leftovers may hold the replicas' pipes
            self._wait_for_events(0.05)

    def _has_children(self) -> bool:
        me = os.getpid()
        try:
            with open(f"/proc/{me}/task/{me}/children", "rb") as f:
                return bool(f.read().strip())
        except OSError:
            return bool(st.descendants(me))

    def _drain_all(self, deadline: float) -> None:
        while any(rep.pipes for replicas in self.replicas for rep in replicas):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._wait_for_events(remaining)

    def abort(self, msg: str) -> None:
        """Last resort after an internal error: stop everything and record FAILED."""
        with contextlib.suppress(BaseException):
            groups = [r.pid for replicas in self.replicas for r in replicas if r.running]
            for pid in groups:
                st.signal_group(pid, signal.SIGKILL)
            for pid in st.descendants(os.getpid()):
                st.signal_pid(pid, signal.SIGKILL)
            for replicas in self.state["roles"]:
                for rec in replicas:
                    if rec["state"] not in st.TERMINAL_STATES:
                        rec["state"] = st.FAILED
            self._write_final(st.FAILED, msg)

    def _write_state(self) -> None:
        for rep in self.unticked:
            if rep.record["pid"] == rep.pid and rep.pid:
                rep.record["start_ticks"] = st.proc_start_ticks(rep.pid, zombie_ok=True)
        self.unticked.clear()
        self.state["updated"] = time.time()
        st.write_json_atomic(self.state_path, self.state)
        self.dirty = False
        self.write_at = None


def run_local_job(
    args: list[str],
    env: dict[str, str],
    stdout: Any,
    stderr: Any,
    cwd: str | None = None,
    *,
    stdin: Any = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """Starts one replica process in its own session (so its whole process group can be
    signalled) with exactly the given environment; stdio as for ``subprocess.Popen``."""
    return subprocess.Popen(
        args,
        env=env,
        cwd=cwd,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
    )


def _failure_msg(role: str, replica_id: int, code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"replica {role}[{replica_id}] was killed by {name}"
    return f"replica {role}[{replica_id}] exited with code {code}"


def _open_log(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, st.FILE_MODE)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except OSError as e:  # e.g. disk full: keep supervising, say why logs are short
            print(f"torchx local_cwd: cannot write log (fd {fd}): {e}", file=sys.stderr)
            return


def _ignore_signal(signum: int, frame: object) -> None:
    """Signals are handled through the wake-up fd in the event loop."""


if __name__ == "__main__":
    main()
