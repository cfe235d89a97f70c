"""The supervisor process of a ``local_cwd`` app: what runs after :mod:`launcher` has
started it (forked, or ``python -m``).

It starts the replicas (each in its own session), pumps their stdout/stderr pipes into
``stdout.log``/``stderr.log``/``combined.log``, reaps them, applies the retry policies and
records every change in ``state.json``. Kept apart from the launcher's side
(:mod:`torchx.schedulers._local.launcher`) so that a launcher never imports what only the
supervisor needs (its signal handling, :mod:`select`, :mod:`ctypes`): a forked supervisor
imports it while the launcher prepares the app.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import signal
import sys
import time

from torchx.schedulers._local import records as st
from torchx.schedulers._local.failure import INTERRUPTIONS, attempt_cause, failure_message
from torchx.settings import ENV_TORCHX_ATTEMPT
from torchx.util.startup import go_pipe
from torchx.util.support.atomic import write_all
from torchx.util.support.programs import find_program
from torchx.util.support.signals import signal_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any

TERMINATE_GRACE_S = 10.0
"""Time between SIGTERM and SIGKILL when stopping replicas and leftover descendants."""

_COMBINED_FLUSH_S = 0.1
"""A partial line waits at most this long before it is written to combined.log anyway."""

_STATE_WRITE_DELAY_S = 0.01
"""Changes are batched for this long before ``state.json`` is rewritten (the first and the
final state are written at once)."""

_READ_SIZE = 1 << 16
_DEFAULT_PIPE_SIZE = 1 << 16
_BIG_PIPE_SIZE = 1 << 20
_BIG_PIPES = 8
"""A replica output pipe found full is grown to ``_BIG_PIPE_SIZE`` (Linux), so a fast
printer wakes the supervisor once per MiB rather than per 64 KiB; at most ``_BIG_PIPES``
per app, as pipe memory counts against a per-user limit."""
_PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# ignored by the Python supervisor, restored for replicas (as ``subprocess`` does)
_DEFAULT_FOR_REPLICAS = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, name)
)


def _print_exc() -> None:
    with contextlib.suppress(BaseException):
        import traceback

        traceback.print_exc()
        sys.stderr.flush()


def detach_stdio(log_fd: int, keep: tuple[int, ...]) -> None:
    """Leaves the launcher's terminal/pipes alone: stdin/stdout to /dev/null, stderr to the
    supervisor log (``log_fd``).

    Every other inherited descriptor is closed, so a launcher whose output is captured
    (``subprocess.run(capture_output=True)``) is not kept waiting for the app to end.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
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


_prctl: Any = None  # libc's prctl once loaded; False where it cannot be


def _load_prctl() -> Any:
    """libc's ``prctl`` as a callable (through :mod:`ctypes`), or None off Linux."""
    global _prctl  # noqa: PLW0603 (a process-wide handle, loaded once)
    if _prctl is None:
        _prctl = False
        if sys.platform.startswith("linux"):
            _prctl = _prctl_from_ctypes() or False
    return _prctl or None


def _prctl_from_ctypes() -> Any:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None


def preload() -> None:
    """Loads what a supervisor needs (``prctl``), in a launcher about to fork several."""
    _load_prctl()


def _become_subreaper() -> None:
    """Orphaned descendants are re-parented to us (not init), so we can find and stop them."""
    prctl = _load_prctl()
    if prctl is not None:
        prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _raise_fd_limit(num_replicas: int) -> None:
    """Makes room for 5 descriptors per replica (2 pipes, 3 logs) when the soft limit is
    too low. Only then: replicas inherit the limit, and some programs mind a huge one."""
    needed = 5 * num_replicas + 64
    try:  # the soft limit, without importing resource
        if os.sysconf("SC_OPEN_MAX") >= needed:
            return
    except (ValueError, OSError):
        pass
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    target = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
    try:  # noqa: SIM105 (contextlib: an import on the way to the replicas' start)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        pass


def main(argv: list[str] | None = None) -> None:
    """``python -m`` entry: ``STATE_DIR LOCK_FD READY_FD`` (started by :class:`Handover`)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print(
            "usage: python -m torchx.schedulers._local.launcher STATE_DIR LOCK_FD READY_FD",
            file=sys.stderr,
        )
        sys.exit(2)
    state_dir, lock_fd, ready_fd = args[0], int(args[1]), int(args[2])
    # fork once more so the launcher can reap its child right away; we are re-parented
    if os.fork() != 0:
        os._exit(0)
    code = 1
    try:
        code = supervise(state_dir, lock_fd, ready_fd)
    except BaseException:
        _print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def supervise(state_dir: str, lock_fd: int, ready_fd: int, *, go_r: int = -1) -> int:
    """Runs the app of ``state_dir`` to completion; the process exit code.

    With ``go_r`` (fork mode) it gets ready, then receives the app from the launcher's
    "go" pipe; otherwise (spawn mode, or a launcher that died after completing the app
    but before sending it) it reads the app from ``state_dir``.
    """
    supervisor = Supervisor(state_dir, lock_fd, ready_fd)
    request: dict[str, Any] | None = None
    if go_r >= 0:
        sent = go_pipe.receive(go_r)
        if sent is not None:
            request, state = sent
            supervisor.load(request, state)
        elif not os.path.isdir(state_dir):
            return 0  # the launcher gave up before the app was complete: nothing to do
    if request is None:
        request = st.read_json(os.path.join(state_dir, st.REQUEST_FILE))
        if request is None:
            raise RuntimeError(f"no readable {st.REQUEST_FILE} in {state_dir}")
        supervisor.load(request, st.read_json(os.path.join(state_dir, st.STATE_FILE)))
    try:
        supervisor.take_over()
        supervisor.run()
    except BaseException as e:
        _print_exc()
        supervisor.abort(f"the local_cwd supervisor crashed: {type(e).__name__}: {e}")
        return 1
    return 0


# ---------------------------------------------------------------------------------------------
# supervising (runs in the supervisor)


class _Poller:
    """``epoll`` (``poll`` where there is none) over the supervisor's pipes: no per-call
    cost for idle descriptors, and no ``selectors`` machinery per event."""

    def __init__(self) -> None:
        epoll = getattr(select, "epoll", None)
        self._seconds = epoll is not None
        self._impl: Any = epoll() if epoll is not None else select.poll()
        self._data: dict[int, Any] = {}

    def register(self, fd: int, data: Any) -> None:
        self._impl.register(fd, select.POLLIN)
        self._data[fd] = data

    def unregister(self, fd: int) -> None:
        self._impl.unregister(fd)
        del self._data[fd]

    def poll(self, timeout: float | None) -> list[Any]:
        """The data of every descriptor that is readable (or hung up) within ``timeout``."""
        if timeout is None:
            events = self._impl.poll(-1)
        elif self._seconds:
            events = self._impl.poll(timeout)
        else:
            events = self._impl.poll(timeout * 1000.0)
        return [self._data[fd] for fd, _ in events if fd in self._data]


class _Pipe:
    """Read end of one replica stream; keeps its own partial line for combined.log."""

    __slots__ = ("fd", "grown", "partial", "replica", "since", "stream")

    def __init__(self, fd: int, replica: _Replica, stream: int) -> None:
        self.fd = fd
        self.grown = False
        self.replica = replica
        self.stream = stream  # 0 stdout, 1 stderr
        self.partial = bytearray()
        self.since = 0.0  # when ``partial`` became non-empty


class _Replica:
    __slots__ = (
        "env",
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
        self.env: dict[str, str] = {}  # its whole environment, built once (see Supervisor.load)
        self.record = record  # this replica's entry in the state document (mutated in place)
        self.proc: subprocess.Popen[bytes] | None = None  # only when started by Popen
        self.pid = 0
        self.pipes: list[_Pipe] = []
        # stdout, stderr, combined; opened on first write (the launcher created the files)
        self.log_fds = [-1, -1, -1]
        self.stopping = False

    @property
    def running(self) -> bool:
        return self.pid != 0


class Supervisor:
    """Runs one app to completion; every decision is recorded in ``state.json``."""

    def __init__(self, state_dir: str, lock_fd: int, ready_fd: int) -> None:
        """Sets the process up (before the app is known, in fork mode)."""
        self.state_dir = state_dir
        self.lock_fd = lock_fd
        self.ready_fd = ready_fd
        self.state_path = os.path.join(state_dir, st.STATE_FILE)
        os.set_inheritable(lock_fd, False)
        os.set_inheritable(ready_fd, False)
        self.request: dict[str, Any] = {}
        self.state: dict[str, Any] = {}
        self.replicas: list[list[_Replica]] = []
        self.role_restarts: list[int] = []
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
        self.poller = _Poller()
        self.big_pipes_left = _BIG_PIPES
        self.base_env = dict(os.environ)
        try:
            self.cwd: str | None = os.getcwd()
        except OSError:
            self.cwd = None
        self.use_posix_spawn = hasattr(os, "posix_spawn")
        self.programs: dict[tuple[str, str | None], str] = {}
        self.array_limit = 0  # a sweep's max_parallel (0: not a sweep)
        self.waiting: list[_Replica] = []  # a sweep's elements not started yet, in order
        self.wake_r = self._install_signals()
        _become_subreaper()

    def load(self, request: dict[str, Any], state: dict[str, Any] | None) -> None:
        """The app to run: its request and its current state (None: a fresh one)."""
        self.request = request
        roles = request["roles"]
        if state is None:
            state = st.new_state([len(r["replicas"]) for r in roles])
        self.state = state
        self.replicas = [
            [
                _Replica(r, i, params, state["roles"][r][i])
                for i, params in enumerate(role["replicas"])
            ]
            for r, role in enumerate(roles)
        ]
        self.role_restarts = [0] * len(roles)
        array = request.get("array")
        if array is not None:  # a sweep: its elements are role 0's replicas, K at a time
            self.array_limit = int(array.get("max_parallel") or 0) or len(self.replicas[0])
        _raise_fd_limit(sum(len(replicas) for replicas in self.replicas))
        # done before "go" in fork mode, in parallel with the launcher: environments and
        # program paths (a program that is not found fails again, and is reported, at start)
        for replicas in self.replicas:
            for rep in replicas:
                rep.env = {**self.base_env, **rep.params["env"]}
                rep.env.setdefault("PYTHONUNBUFFERED", "x")
                if self._can_posix_spawn(rep):
                    try:  # noqa: SIM105 (as above)
                        self._program(rep.params["args"][0], rep.env)
                    except OSError:
                        pass
        pid = os.getpid()
        state["supervisor"] = {"pid": pid, "start_ticks": st.proc_start_ticks(pid)}

    # -- setup ----------------------------------------------------------------------------------

    def take_over(self) -> None:
        """Becomes the app's owner and starts the replicas, then lets the launcher return.

        The first state written already names the supervisor and the replicas' pids, so a
        ``describe`` once the launcher has settled the app sees it RUNNING (or CANCELLED).
        """
        cancel_file = os.path.join(self.state_dir, st.CANCEL_FILE)
        if os.path.exists(cancel_file):
            self._cancel("cancelled by request")
        else:
            everyone = [rep for replicas in self.replicas for rep in replicas]
            if self.array_limit:
                self.waiting = everyone[self.array_limit :]
                everyone = everyone[: self.array_limit]
            self._start_all(everyone)
            self.state["state"] = st.RUNNING
        self._write_state()
        # A canceller creates the file, then reads the state for our pid: checking the file
        # again after writing the pid, one of us sees the other (a cancel is never lost).
        if self.final is None and os.path.exists(cancel_file):
            self._cancel("cancelled by request")
        try:  # noqa: SIM105 (as above)
            os.write(self.ready_fd, b"ok")
        except OSError:  # a launcher that is gone does not stop the app
            pass

    def _install_signals(self) -> int:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        # writing to a pipe whose reader left must be an error, never the end of the app
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        handled = (signal.SIGCHLD, *_STOP_SIGNALS)
        for sig in handled:
            signal.signal(sig, _ignore_signal)
        # a launcher may have blocked some of them; a fork inherits its signal mask
        signal.pthread_sigmask(signal.SIG_UNBLOCK, handled)
        self.poller.register(wake_r, None)
        return wake_r

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
        for pipe in self.poller.poll(timeout):
            if pipe is None:
                self._on_signals()
            elif pipe.fd >= 0:  # not closed by an earlier event of this batch
                self._pump(pipe)
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
                    self._cancel(f"cancelled: the supervisor received {signal_name(signum)}")
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

    def _start_all(self, reps: list[_Replica]) -> None:
        for rep in reps:
            self._start(rep)

    def _start(self, rep: _Replica) -> None:
        record = rep.record
        record.update(state=st.RUNNING, exit_code=None, started=time.time(), ended=None)
        out_r, out_w = st.pipe_above_stdio()
        err_r, err_w = st.pipe_above_stdio()
        try:
            pid = self._spawn(rep, out_w, err_w)
        except OSError as e:
            for fd in (out_r, err_r):
                os.close(fd)
            role = self.request["roles"][rep.role_idx]["name"]
            msg = f"torchx local_cwd: cannot start replica {role}/{rep.replica_id}: {e}\n".encode()
            _write_all(self._log_fd(rep, 1), msg)
            _write_all(self._log_fd(rep, 2), msg)
            record.update(pid=None, start_ticks=None)
            self.exited.append((rep, 126 if e.errno == errno.EACCES else 127))
            return
        finally:
            os.close(out_w)
            os.close(err_w)
        rep.pid = pid
        rep.stopping = False
        self.by_pid[pid] = rep
        # start_ticks is read when the state is written: reading /proc/<pid>/stat now
        # would block until the child has finished its exec
        record.update(pid=pid, start_ticks=None)
        self.unticked.append(rep)
        for fd, stream in ((out_r, 0), (err_r, 1)):
            os.set_blocking(fd, False)
            pipe = _Pipe(fd, rep, stream)
            rep.pipes.append(pipe)
            self.poller.register(fd, pipe)
        self.dirty = True

    def _can_posix_spawn(self, rep: _Replica) -> bool:
        cwd = rep.params.get("cwd")
        return self.use_posix_spawn and (cwd is None or cwd == self.cwd)

    def _spawn(self, rep: _Replica, out_w: int, err_w: int) -> int:
        """Starts one replica in a new session; its pid.

        ``os.posix_spawn`` (vfork + exec, no Python in between) where the replica runs in
        the supervisor's own working directory; ``subprocess`` where it needs a ``chdir``
        (posix_spawn cannot), which costs a little more per replica.
        """
        args: list[str] = rep.params["args"]
        env = {**rep.env, ENV_TORCHX_ATTEMPT: str(rep.record["attempt"])}
        rep.proc = None
        if self._can_posix_spawn(rep):
            program = self._program(args[0], env)
            try:
                return os.posix_spawn(
                    program,
                    args,
                    env,
                    file_actions=[
                        (os.POSIX_SPAWN_DUP2, self.devnull, 0),
                        (os.POSIX_SPAWN_DUP2, out_w, 1),
                        (os.POSIX_SPAWN_DUP2, err_w, 2),
                    ],
                    setsid=True,
                    setsigdef=_DEFAULT_FOR_REPLICAS,
                )
            except NotImplementedError:  # no POSIX_SPAWN_SETSID here: use subprocess
                self.use_posix_spawn = False
            except OSError as e:
                if e.filename is None:
                    raise OSError(e.errno, e.strerror, args[0]) from None
                raise
        proc = run_local_job(args, env, out_w, err_w, rep.params.get("cwd"), stdin=self.devnull)
        rep.proc = proc
        return proc.pid

    def _program(self, name: str, env: dict[str, str]) -> str:
        """The file to execute for ``name`` with ``env``'s PATH (as the launcher checked)."""
        key = (name, env.get("PATH"))
        found = self.programs.get(key)
        if found is None:
            found = find_program(name, env.get("PATH", os.defpath), self.cwd or ".")
            if found is None:
                raise OSError(errno.ENOENT, os.strerror(errno.ENOENT), name)
            self.programs[key] = found
        return found

    def _process_exits(self) -> None:
        while self.exited:
            rep, code = self.exited.pop(0)
            for pipe in list(rep.pipes):
                self._pump(pipe)  # all the replica wrote is in the pipe: log it before the exit
                self._flush_partial(pipe)
            self._record_exit(rep, code)
        self._start_pending_restarts()
        self._start_waiting()

    def _start_waiting(self) -> None:
        """A sweep starts its next elements as earlier ones end (at most ``max_parallel``
        running or about to restart)."""
        while self.waiting and self.final is None:
            busy = len(self.by_pid) + len(self.pending_restart)
            if busy >= self.array_limit:
                return
            self._start(self.waiting.pop(0))

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
        if self.array_limit:
            self._element_failed(rep, code)
            return
        role = self.request["roles"][rep.role_idx]
        policy = str(role.get("retry_policy", "APPLICATION"))
        if -code in INTERRUPTIONS:  # a stop request from outside, as a preemption sends
            self._record_attempt(code)
            self._restart_after_failure(rep, policy, counted=False)
            return
        if self.role_restarts[rep.role_idx] < int(role.get("max_retries", 0)):
            self._record_attempt(code)
            self._restart_after_failure(rep, policy)
            return
        self.final = (st.FAILED, failure_message(role["name"], rep.replica_id, code))
        self.state["msg"] = self.final[1]
        self._stop([r for replicas in self.replicas for r in replicas])

    def _element_failed(self, rep: _Replica, code: int) -> None:
        """A sweep's element failed: it alone runs again while its ``max_retries`` last
        (an interruption from outside does not spend them); the others go on."""
        retries = int(self.request["roles"][rep.role_idx].get("max_retries", 0))
        record = rep.record
        interrupted = -code in INTERRUPTIONS
        if interrupted or record.get("retries", 0) < retries:
            if not interrupted:
                record["retries"] = record.get("retries", 0) + 1
            self.pending_restart.add(rep)
            record["state"] = st.PENDING

    def _record_attempt(self, code: int) -> None:
        """Keeps the attempt that just failed (``code``: the replica's exit status, a
        negative one a signal) in the state's ``attempts``, for ``status``."""
        now = time.time()
        started = self.state.get("attempt_started")
        if started is None:  # the first attempt: when its first replica started
            starts = [r.record.get("started") for reps in self.replicas for r in reps]
            started = min((t for t in starts if t), default=None)
        attempts = self.state.setdefault("attempts", [])
        attempts.append(
            {
                "attempt": int(self.state["num_restarts"]),
                "start": started,
                "end": now,
                "state": st.FAILED,
                "cause": attempt_cause(code),
                "exit_code": code if code >= 0 else None,
                "signal": signal_name(-code) if code < 0 else None,
            }
        )
        self.state["attempt_started"] = None  # set when the next attempt starts
        self.dirty = True

    def _restart_after_failure(self, rep: _Replica, policy: str, counted: bool = True) -> None:
        """Restarts ``rep``'s group (per ``policy``) as the next attempt; ``counted``: the
        replica's own failure, which spends the role's ``max_retries``."""
        if counted:
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
        self.state["attempt_started"] = time.time()
        self.dirty = True
        self.programs.clear()  # resolve programs again: files or PATH may have changed
        self._start_all(group)

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

    def _log_fd(self, rep: _Replica, index: int) -> int:
        """Descriptor of the replica's stdout (0), stderr (1) or combined (2) log.

        Opened on first use: a replica that writes nothing costs no ``open``.
        """
        fd = rep.log_fds[index]
        if fd < 0:
            path = rep.params[("stdout", "stderr", "combined")[index]]
            try:
                fd = st.open_log_fd(path)
            except OSError as e:  # e.g. its directory was removed: keep supervising
                print(f"torchx local_cwd: cannot open log {path}: {e}", file=sys.stderr)
                fd = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
            rep.log_fds[index] = fd
        return fd

    def _pump(self, pipe: _Pipe) -> None:
        """Moves everything readable right now from ``pipe`` into the log files."""
        rep = pipe.replica
        while True:
            try:
                data = os.read(pipe.fd, _READ_SIZE)
            except BlockingIOError:
                return
            if not data:
                self._flush_partial(pipe)
                self._close_pipe(pipe)
                return
            _write_all(self._log_fd(rep, pipe.stream), data)
            self._write_combined(pipe, data)
            if len(data) >= _DEFAULT_PIPE_SIZE and self.big_pipes_left and not pipe.grown:
                self._grow(pipe)
            if len(data) < _READ_SIZE:
                return

    def _grow(self, pipe: _Pipe) -> None:
        pipe.grown = True

        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(pipe.fd, fcntl.F_SETPIPE_SZ, _BIG_PIPE_SIZE)
            self.big_pipes_left -= 1

    def _write_combined(self, pipe: _Pipe, data: bytes) -> None:
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
        fd = self._log_fd(pipe.replica, 2)
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
            _write_all(self._log_fd(pipe.replica, 2), bytes(pipe.partial))
            pipe.partial.clear()
        self.partials.discard(pipe)

    def _close_pipe(self, pipe: _Pipe) -> None:
        self.poller.unregister(pipe.fd)
        os.close(pipe.fd)
        pipe.fd = -1
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
                for fd in rep.log_fds:
                    if fd >= 0:
                        os.close(fd)
                rep.log_fds = [-1, -1, -1]
        if self.final is None:
            self.final = (st.SUCCEEDED, "")
            failed = [r.replica_id for r in self.replicas[0] if r.record["state"] == st.FAILED]
            if self.array_limit and failed:
                indices = self.request["array"].get("indices") or []
                which = ", ".join(str(indices[i] if i < len(indices) else i) for i in failed)
                total = len(self.replicas[0])
                self.final = (st.FAILED, f"{len(failed)} of {total} elements failed: {which}")
        self._write_final(*self.final)
        self._create_missing_logs()

    def _create_missing_logs(self) -> None:
        """Empty log files for the streams that wrote nothing, where nobody created them.

        A forked supervisor's launcher creates them while the replicas start, but it may
        have died meanwhile. Done after the final state is written and the launcher's
        ``wait`` released: it costs ``wait`` nothing, and normally 3 ``stat`` per replica.
        """
        for replicas in self.replicas:
            for rep in replicas:
                for key in ("stdout", "stderr", "combined"):
                    path = rep.params[key]
                    if not os.path.exists(path):
                        try:  # noqa: SIM105 (as above)
                            os.close(st.open_log_fd(path))
                        except OSError:
                            pass

    def _write_final(self, state: str, msg: str) -> None:
        now = time.time()
        self.state.update(state=state, msg=msg, ended=now, updated=now)
        # SUCCESS first: whoever sees the terminal state.json also finds the SUCCESS file
        st.write_success_file(self.request, self.state)
        self._write_state()
        # end-of-file for a launcher waiting on the ready pipe: the app is over
        if self.ready_fd >= 0:
            os.close(self.ready_fd)
            self.ready_fd = -1

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
    stdin: Any = None,
) -> subprocess.Popen[bytes]:
    """Starts one replica process in its own session (so its whole process group can be
    signalled) with exactly the given environment; stdio as for ``subprocess.Popen``
    (stdin: ``/dev/null`` unless given)."""
    import subprocess

    return subprocess.Popen(
        args,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
    )


def _write_all(fd: int, data: bytes) -> None:
    try:
        write_all(fd, data)
    except OSError as e:  # e.g. disk full: keep supervising, say why logs are short
        print(f"torchx local_cwd: cannot write log (fd {fd}): {e}", file=sys.stderr)


def _ignore_signal(signum: int, frame: object) -> None:
    """Signals are handled through the wake-up fd in the event loop."""
