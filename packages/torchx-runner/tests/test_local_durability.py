"""local_cwd apps outlive their launcher: other processes see, follow, cancel and recover them.

Every test uses real processes; "another process" is a fresh ``python -c`` interpreter.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from torchx_testsupport import wait_until

from torchx.schedulers._local import records as st
from torchx.schedulers.api import Stream
from torchx.schedulers.local_scheduler import LocalScheduler, create_scheduler
from torchx.specs.api import AppDef, AppState, Role


@pytest.fixture
def sched(home: Path) -> LocalScheduler:
    return create_scheduler("durable")


def sh_app(script: str, num_replicas: int = 1, name: str = "app") -> AppDef:
    role = Role("sh", "img", entrypoint="sh", args=["-c", script], num_replicas=num_replicas)
    return AppDef(name, [role])


def wait_terminal(sched: LocalScheduler, app_id: str) -> AppState:
    while True:
        desc = sched.describe(app_id)
        assert desc is not None
        if desc.state in (AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED):
            return desc.state
        sched.wait_for_change(app_id, 30)


def python(code: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter (same env, so the same TORCHX_HOME)."""
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        **kwargs,
    )


def live_processes_with(marker: str, comm: str | None = None) -> list[int]:
    """Pids of running (non-zombie) processes whose command line contains ``marker``
    (and whose executable name is ``comm``, when given)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{name}/comm") as f:
                name_of_exe = f.read().strip()
        except OSError:
            continue
        if comm is not None and name_of_exe != comm:
            continue
        if marker in cmdline and st.proc_start_ticks(int(name)) is not None:
            found.append(int(name))
    return found


def unique_sleep() -> str:
    """A ``sleep`` duration nobody else uses, to find our processes in /proc."""
    return f"3600.{uuid.uuid4().int % 10**9:09d}"


def test_status_and_logs_from_a_second_process(sched: LocalScheduler) -> None:
    script = "echo started; while [ ! -e go ]; do sleep 0.01; done; echo finished"
    app_id = sched.submit(sh_app(script), {})
    seen = python(
        f"""
        from torchx.schedulers.local_scheduler import create_scheduler
        s = create_scheduler("other")
        d = s.describe({app_id!r})
        print(d.state.name, d.roles_statuses[0].replicas[0].state.name)
        """
    )
    assert seen.stdout.split() == ["RUNNING", "RUNNING"]
    follower = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from torchx.schedulers.local_scheduler import create_scheduler\n"
            "s = create_scheduler('other')\n"
            f"for line in s.log_iter({app_id!r}, 'sh', should_tail=True):\n"
            "    sys.stdout.write(line); sys.stdout.flush()\n"
            f"print(s.describe({app_id!r}).state.name)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert follower.stdout is not None
    assert follower.stdout.readline() == "started\n"
    Path("go").touch()
    rest, _ = follower.communicate(timeout=120)
    assert rest == "finished\nSUCCEEDED\n"
    assert follower.returncode == 0


def test_app_survives_its_launcher(sched: LocalScheduler) -> None:
    # the launcher's output is captured: if the supervisor kept its pipes open,
    # subprocess.run would not return before the app ends (the app waits for "go")
    launched = python(
        """
        from torchx.schedulers.local_scheduler import create_scheduler
        from torchx.specs.api import AppDef, Role
        script = "while [ ! -e go ]; do sleep 0.01; done; echo done; exit 0"
        role = Role("sh", "img", entrypoint="sh", args=["-c", script], num_replicas=2)
        print(create_scheduler("launcher").submit(AppDef("orphan", [role]), {}))
        """
    )
    app_id = launched.stdout.strip()
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.RUNNING
    Path("go").touch()
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    records = st.read_json(os.path.join(st.app_state_dir(app_id), st.STATE_FILE))["roles"][0]
    assert [r["exit_code"] for r in records] == [0, 0]
    assert list(sched.log_iter(app_id, "sh", 1)) == ["done\n"]


def test_app_survives_a_threaded_launcher(sched: LocalScheduler) -> None:
    # a launcher with threads cannot fork: the supervisor is started with python -m
    launched = python(
        """
        import threading
        from torchx.schedulers.local_scheduler import create_scheduler
        from torchx.specs.api import AppDef, Role
        stop = threading.Event()
        threading.Thread(target=stop.wait, daemon=True).start()
        role = Role("sh", "img", entrypoint="sh", args=["-c", "echo threaded; exit 6"])
        print(create_scheduler("launcher").submit(AppDef("threaded", [role]), {}))
        """
    )
    app_id = launched.stdout.strip()
    assert wait_terminal(sched, app_id) == AppState.FAILED
    assert "exited with code 6" in sched.describe(app_id).msg  # type: ignore[union-attr]
    assert list(sched.log_iter(app_id, "sh")) == ["threaded\n"]


def test_an_app_complete_on_disk_runs_even_if_its_launcher_dies(sched: LocalScheduler) -> None:
    # the launcher dies right after the app's directory is complete, before it hands the
    # app over: the kernel closes its end of "go" and the forked supervisor runs the app
    launched = python(
        """
        import os
        from torchx.schedulers._local import launcher as local_launcher
        from torchx.schedulers.local_scheduler import create_scheduler
        from torchx.specs.api import AppDef, Role

        def die(handover, *app):
            print(os.path.basename(handover.state_dir), flush=True)
            os._exit(0)

        local_launcher.Handover.go = die
        role = Role("sh", "img", entrypoint="sh", args=["-c", "echo ran"])
        create_scheduler("launcher").submit(AppDef("dies", [role]), {})
        """
    )
    app_id = launched.stdout.strip()
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    assert list(sched.log_iter(app_id, "sh")) == ["ran\n"]
    # the launcher died before creating the empty log files: the supervisor does it last
    supervisor = _supervisor_pid(app_id)
    wait_until(lambda: st.proc_start_ticks(supervisor) is None, "the supervisor to exit")
    assert list(sched.log_iter(app_id, "sh", streams=Stream.STDERR)) == []


def test_a_launcher_without_stdio_can_fork_supervisors(sched: LocalScheduler) -> None:
    # a daemon may have closed fds 0-2: the lock and pipes must not end up there
    out = Path("launched").resolve()
    python(
        f"""
        import os
        os.close(0); os.close(1); os.close(2)
        from torchx.schedulers.local_scheduler import create_scheduler
        from torchx.specs.api import AppDef, Role
        role = Role("sh", "img", entrypoint="sh", args=["-c", "echo daemon"])
        app_id = create_scheduler("launcher").submit(AppDef("daemon", [role]), {{}})
        with open({str(out)!r}, "w") as f:
            f.write(app_id)
        """
    )
    app_id = out.read_text()
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    assert list(sched.log_iter(app_id, "sh")) == ["daemon\n"]


def test_the_launcher_reaps_the_supervisors_it_forked(home: Path) -> None:
    sched = create_scheduler("reaper")
    ids = [sched.submit(sh_app("true", name=f"z{i}"), {}) for i in range(3)]
    pids = []
    for app_id in ids:
        assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
        pids.append(_supervisor_pid(app_id))

    def all_reaped() -> bool:  # ended supervisors are this process's children
        sched.close()
        return all(st.proc_start_ticks(pid, zombie_ok=True) is None for pid in pids)

    wait_until(all_reaped, "the ended supervisors to be reaped (no zombies)")


def test_cancel_leaves_no_orphans(sched: LocalScheduler) -> None:
    marker = unique_sleep()
    # a background child in the replica's process group, a grandchild in its own session
    # (escapes killpg) and a double-forked daemon re-parented to the supervisor
    script = f"setsid sleep {marker} & sleep {marker} & (sleep {marker} &) ; wait"
    app_id = sched.submit(sh_app(script, num_replicas=2), {})
    wait_until(lambda: len(live_processes_with(marker, "sleep")) == 6, "6 sleeps to start")
    sched.cancel(app_id)
    assert wait_terminal(sched, app_id) == AppState.CANCELLED
    assert live_processes_with(marker) == []
    desc = sched.describe(app_id)
    assert desc is not None
    assert {r.state for r in desc.roles_statuses[0].replicas} == {AppState.CANCELLED}


def test_leftover_descendants_are_stopped_when_the_app_succeeds(sched: LocalScheduler) -> None:
    marker = unique_sleep()
    app_id = sched.submit(sh_app(f"setsid sleep {marker} & echo main done"), {})
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    assert live_processes_with(marker) == []


def test_cancel_from_another_process(sched: LocalScheduler) -> None:
    marker = unique_sleep()
    app_id = sched.submit(sh_app(f"exec sleep {marker}"), {})
    wait_until(lambda: live_processes_with(marker), "the replica to start")
    python(
        f"""
        from torchx.schedulers.local_scheduler import create_scheduler
        create_scheduler("other").cancel({app_id!r})
        """
    )
    assert wait_terminal(sched, app_id) == AppState.CANCELLED
    assert live_processes_with(marker) == []


def _supervisor_pid(app_id: str) -> int:
    state = st.read_json(os.path.join(st.app_state_dir(app_id), st.STATE_FILE))
    return int(state["supervisor"]["pid"])


def test_kill_9_of_the_supervisor_is_recovered(sched: LocalScheduler) -> None:
    marker = unique_sleep()
    app_id = sched.submit(sh_app(f"exec sleep {marker}", num_replicas=2), {})
    wait_until(lambda: len(live_processes_with(marker, "sleep")) == 2, "the replicas to start")
    os.kill(_supervisor_pid(app_id), signal.SIGKILL)
    # Runner.wait's loop: wait_for_change wakes up (pidfd), describe records what happened
    assert wait_terminal(sched, app_id) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None
    assert "supervisor" in desc.msg and "died" in desc.msg
    assert {r.state for r in desc.roles_statuses[0].replicas} == {AppState.FAILED}
    wait_until(lambda: not live_processes_with(marker), "the orphaned replicas to be stopped")
    seen = python(
        f"""
        from torchx.schedulers.local_scheduler import create_scheduler
        print(create_scheduler("other").describe({app_id!r}).state.name)
        """
    )
    assert seen.stdout.strip() == "FAILED"


def test_cancel_after_the_supervisor_died(sched: LocalScheduler) -> None:
    marker = unique_sleep()
    app_id = sched.submit(sh_app(f"exec sleep {marker}"), {})
    wait_until(lambda: live_processes_with(marker), "the replica to start")
    sup = _supervisor_pid(app_id)
    os.kill(sup, signal.SIGKILL)
    wait_until(lambda: st.proc_start_ticks(sup) is None, "the supervisor to die")
    sched.cancel(app_id)
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.CANCELLED
    wait_until(lambda: not live_processes_with(marker), "the replica to be stopped")


def test_sigterm_to_the_supervisor_cancels_the_app(sched: LocalScheduler) -> None:
    marker = unique_sleep()
    app_id = sched.submit(sh_app(f"exec sleep {marker}"), {})
    wait_until(lambda: live_processes_with(marker), "the replica to start")
    os.kill(_supervisor_pid(app_id), signal.SIGTERM)
    assert wait_terminal(sched, app_id) == AppState.CANCELLED
    assert "SIGTERM" in sched.describe(app_id).msg  # type: ignore[union-attr]
    assert live_processes_with(marker) == []


def test_wait_for_change_returns_when_the_app_ends(sched: LocalScheduler) -> None:
    app_id = sched.submit(sh_app("while [ ! -e go ]; do sleep 0.01; done"), {})
    Path("go").touch()
    # a long timeout: only the supervisor's exit can end this wait early
    sched.wait_for_change(app_id, 240)
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.SUCCEEDED


# ---------------------------------------------------------------------------------------------
# through the Runner (the way users and the CLI drive local_cwd)


def test_runner_run_wait_and_log_lines(home: Path) -> None:
    from torchx.runner import get_runner

    role = Role(
        "echo", "img", entrypoint="sh", args=["-c", "echo hi $TORCHX_JOB_ID"], num_replicas=2
    )
    with get_runner() as runner:
        handle = runner.run(AppDef("hello", [role]), "local_cwd")
        assert handle.startswith("local_cwd://torchx/hello-")
        status = runner.wait(handle, wait_interval=60)
        assert status is not None and status.state == AppState.SUCCEEDED
        app_id = handle.rsplit("/", 1)[1]
        assert list(runner.log_lines(handle, "echo", k=1)) == [f"hi local_cwd://torchx/{app_id}\n"]
        assert [r.app_handle for r in runner.list("local_cwd")] == [handle]
    # the app and its state stay after the runner is closed
    with get_runner() as other:
        status = other.status(handle)
        assert status is not None and status.state == AppState.SUCCEEDED
        described = other.describe(handle)
        assert described is not None and described.roles[0].name == "echo"
        other.delete(handle)
        assert other.status(handle) is None


def test_runner_cancel_from_a_new_runner(home: Path) -> None:
    from torchx.runner import get_runner

    marker = unique_sleep()
    role = Role("s", "img", entrypoint="sleep", args=[marker])
    handle = get_runner().run(AppDef("long", [role]), "local_cwd")
    wait_until(lambda: live_processes_with(marker), "the replica to start")
    runner = get_runner()
    runner.cancel(handle)
    status = runner.wait(handle, wait_interval=60)
    assert status is not None and status.state == AppState.CANCELLED
    assert live_processes_with(marker) == []


@pytest.mark.parametrize("loader", ["_prctl_from_ctypes"])
def test_the_supervisor_adopts_orphaned_descendants(loader: str) -> None:
    """The supervisor becomes a child subreaper through ctypes: a daemonized descendant is
    re-parented to it, not to init."""
    out = python(
        f"""
        import os, time
        from torchx.schedulers._local import supervisor

        prctl = supervisor.{loader}()
        assert prctl is not None
        assert prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
        r, w = os.pipe()
        if os.fork() == 0:  # the child forks the grandchild, then exits: an orphan
            parent = os.getpid()
            if os.fork() == 0:
                deadline = time.monotonic() + 30
                while os.getppid() == parent and time.monotonic() < deadline:
                    time.sleep(0.005)  # until the exited parent's orphan is adopted
                os.write(w, str(os.getppid()).encode())
                os._exit(0)
            os._exit(0)
        os.wait()
        os.close(w)
        print(os.read(r, 64).decode() == str(os.getpid()))
        """
    )
    assert out.stdout.strip() == "True", out.stderr
