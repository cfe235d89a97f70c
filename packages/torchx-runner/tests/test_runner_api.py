"""Runner API: dryrun pipeline, env injection, handles and the app lifecycle.

Most tests drive a small in-memory scheduler defined here (the Runner's job is the
plumbing around the scheduler); ``TestLocalCwd`` runs real processes on local_cwd.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from torchx.runner import Runner, get_runner
from torchx.runner.api import get_configured_trackers
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler, Stream
from torchx.specs import (
    MISSING,
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    Resource,
    Role,
    UnknownAppException,
    UnknownSchedulerException,
    Workspace,
    runopts,
)
from torchx.workspace.dir_workspace import TmpDirWorkspaceMixin


class MemoryScheduler(Scheduler[Mapping[str, CfgVal]]):
    """A scheduler that keeps apps in a dict; their state is set by the test."""

    has_event_source = True  # its wait_for_change "sees" the app finish

    def __init__(self, session_name: str, **kwargs: object) -> None:
        super().__init__("memory", session_name)
        self.kwargs = kwargs
        self.apps: dict[str, AppDef] = {}
        self.states: dict[str, AppState] = {}
        self.cancelled: list[str] = []
        self.deleted: list[str] = []
        self.closed = 0
        self.waits: list[float] = []

    def _run_opts(self) -> runopts:
        opts = runopts()
        opts.add("flag", type_=bool, help="a flag", default=False)
        opts.add("queue", type_=str, help="a queue", default="default")
        return opts

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        return AppDryRunInfo(
            {"app": app, "cfg": dict(cfg)}, lambda r: f"request of {r['app'].name}"
        )

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        app: AppDef = dryrun_info.request["app"]
        app_id = f"{app.name}-{len(self.apps)}"
        self.apps[app_id] = app
        self.states[app_id] = AppState.RUNNING
        return app_id

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        if app_id not in self.apps:
            return None
        return DescribeAppResponse(
            app_id=app_id,
            state=self.states[app_id],
            num_restarts=0,
            ui_url=f"memory://{app_id}",
            roles=self.apps[app_id].roles,
            metadata={"k": "v"},
        )

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        return [ListAppResponse(app_id=a, state=s) for a, s in self.states.items()]

    def _cancel_existing(self, app_id: str) -> None:
        self.cancelled.append(app_id)
        self.states[app_id] = AppState.CANCELLED

    def _delete_existing(self, app_id: str) -> None:
        self.deleted.append(app_id)
        del self.apps[app_id]
        del self.states[app_id]

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: Any = None,
        until: Any = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        return [f"{app_id}/{role_name}/{k}\n"]

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        # The "event": the app finishes while the runner waits.
        self.waits.append(timeout)
        self.states[app_id] = AppState.SUCCEEDED

    def close(self) -> None:
        self.closed += 1


class WorkspaceScheduler(TmpDirWorkspaceMixin, MemoryScheduler):
    """MemoryScheduler that builds workspaces by copying them to a temp dir."""


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No TORCHX_* from the outside, no config files, HOME and CWD in a temp dir."""
    for key in list(os.environ):
        if key.upper().startswith("TORCHX"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "torchx_home"))
    monkeypatch.chdir(tmp_path)
    # workspace copies (TmpDirWorkspaceMixin) land here, not in the system temp dir
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def make_runner(**kwargs: Any) -> tuple[Runner, dict[str, MemoryScheduler]]:
    made: dict[str, MemoryScheduler] = {}

    def memory(session_name: str, **kw: object) -> MemoryScheduler:
        made["memory"] = MemoryScheduler(session_name, **kw)
        return made["memory"]

    def workspace(session_name: str, **kw: object) -> WorkspaceScheduler:
        scheduler = WorkspaceScheduler(session_name, **kw)
        made["workspace"] = scheduler
        return scheduler

    runner = Runner("sess", {"memory": memory, "workspace": workspace}, **kwargs)
    return runner, made


def trainer_app() -> AppDef:
    return AppDef(
        name="trainer",
        roles=[
            Role(
                name="worker",
                image="img",
                entrypoint="python",
                args=["-m", "train"],
                env={"MINE": "1"},
                num_replicas=2,
                resource=Resource(cpu=1, gpu=0, memMB=512),
            ),
            Role(name="ps", image="img", entrypoint="ps_main", resource=Resource(1, 0, 64)),
        ],
        metadata={"team": "x"},
    )


class TestDryrun:
    def test_injects_env_into_a_copy_and_leaves_the_app_alone(self, clean_env: Path) -> None:
        runner, _ = make_runner()
        app = trainer_app()
        before = repr(app)
        info = runner.dryrun(app, "memory", parent_run_id="parent-1")
        assert repr(app) == before
        copied = info.app
        assert copied is not None and copied is not app
        from torchx.util.session import get_session_id_or_create_new

        for role in copied.roles:
            assert role.env["TORCHX_JOB_ID"] == "memory://sess/${app_id}"
            assert role.env["TORCHX_INTERNAL_SESSION_ID"] == get_session_id_or_create_new()
            assert role.env["TORCHX_PARENT_RUN_ID"] == "parent-1"
            assert "TORCHX_TRACKERS" not in role.env
        assert copied.roles[0].env["MINE"] == "1"
        assert info._scheduler == "memory"
        assert info.request["cfg"] == {"flag": False, "queue": "default"}
        assert str(info) == "request of trainer"

    def test_role_overrides_are_shared_with_the_copy(self, clean_env: Path) -> None:
        runner, _ = make_runner()
        app = trainer_app()
        calls: list[int] = []

        def resolve_image() -> str:
            calls.append(1)
            return "resolved"

        app.roles[0].overrides["image"] = resolve_image
        info = runner.dryrun(app, "memory")
        assert info.app is not None
        assert info.app.roles[0].overrides is app.roles[0].overrides
        assert info.app.roles[0].image == "resolved"
        assert app.roles[0].image == "resolved"
        assert calls == [1]

    def test_parent_run_id_from_env_wins(
        self, clean_env: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("TORCHX_PARENT_RUN_ID", "from-env")
        runner, _ = make_runner()
        info = runner.dryrun(trainer_app(), "memory", parent_run_id="from-arg")
        assert info.app is not None
        assert info.app.roles[1].env["TORCHX_PARENT_RUN_ID"] == "from-env"

    def test_trackers_from_env(self, clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("TORCHX_TRACKERS", "fsspec,mine")
        monkeypatch.setenv("TORCHX_TRACKER_FSSPEC_CONFIG", "/tmp/tracker_data")
        runner, _ = make_runner()
        info = runner.dryrun(trainer_app(), "memory")
        assert info.app is not None
        env = info.app.roles[0].env
        assert env["TORCHX_TRACKERS"] == "fsspec,mine"
        assert env["TORCHX_TRACKER_FSSPEC_CONFIG"] == "/tmp/tracker_data"
        assert "TORCHX_TRACKER_MINE_CONFIG" not in env

    def test_trackers_from_config_file_with_env_override(
        self, clean_env: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (clean_env / ".torchxconfig").write_text(
            textwrap.dedent(
                """\
                [torchx:tracker]
                fsspec =
                other =

                [tracker:fsspec]
                config = /data/file_conf

                [tracker:other]
                config = other://db
                """
            )
        )
        assert get_configured_trackers() == {"fsspec": "/data/file_conf", "other": "other://db"}
        monkeypatch.setenv("TORCHX_TRACKER_OTHER_CONFIG", "other://env")
        assert get_configured_trackers() == {"fsspec": "/data/file_conf", "other": "other://env"}
        monkeypatch.setenv("TORCHX_TRACKERS", "other")
        assert get_configured_trackers() == {"other": "other://env"}
        runner, _ = make_runner()
        info = runner.dryrun(trainer_app(), "memory")
        assert info.app is not None
        assert info.app.roles[0].env["TORCHX_TRACKERS"] == "other"
        assert "TORCHX_TRACKER_FSSPEC_CONFIG" not in info.app.roles[0].env

    @pytest.mark.parametrize("entrypoint", ["", MISSING])
    def test_role_without_entrypoint_is_rejected(self, clean_env: Path, entrypoint: str) -> None:
        runner, _ = make_runner()
        app = AppDef("a", roles=[Role(name="r", image="i", entrypoint=entrypoint)])
        with pytest.raises(ValueError, match="role 'r' of app 'a' has no entrypoint"):
            runner.dryrun(app, "memory")

    def test_role_without_replicas_is_rejected(self, clean_env: Path) -> None:
        runner, _ = make_runner()
        app = AppDef("a", roles=[Role(name="r", image="i", entrypoint="x", num_replicas=0)])
        with pytest.raises(ValueError, match="num_replicas=0"):
            runner.dryrun(app, "memory")

    def test_app_without_roles_is_rejected(self, clean_env: Path) -> None:
        runner, _ = make_runner()
        with pytest.raises(ValueError, match="has no roles"):
            runner.dryrun(AppDef("empty"), "memory")

    def test_unknown_scheduler_lists_the_installed_ones(self, clean_env: Path) -> None:
        runner, _ = make_runner()
        with pytest.raises(UnknownSchedulerException) as e:
            runner.dryrun(trainer_app(), "nope")
        assert "nope" in str(e.value)
        assert "memory" in str(e.value) and "workspace" in str(e.value)
        with pytest.raises(UnknownSchedulerException):
            runner.status("nope://sess/app")

    def test_run_with_dryrun_true_submits_nothing(self, clean_env: Path) -> None:
        runner, made = make_runner()
        info = runner.run(trainer_app(), "memory", cfg={"flag": True}, dryrun=True)
        assert isinstance(info, AppDryRunInfo)
        assert info.request["cfg"]["flag"] is True
        assert made["memory"].apps == {}

    def test_bad_cfg_type_is_rejected(self, clean_env: Path) -> None:
        runner, _ = make_runner()
        with pytest.raises(Exception, match="flag"):
            runner.dryrun(trainer_app(), "memory", cfg={"flag": "yes-please"})

    def test_workspace_argument_replaces_role0_workspace(self, clean_env: Path) -> None:
        project = clean_env / "project"
        project.mkdir()
        (project / "train.py").write_text("print('hi')\n")
        (project / "skip.log").write_text("x")
        (project / ".torchxignore").write_text("*.log\n")
        other = clean_env / "other"
        other.mkdir()
        (other / "ps.py").write_text("")
        runner, _ = make_runner()
        app = trainer_app()
        app.roles[0].workspace = Workspace({str(other): ""})
        app.roles[1].workspace = Workspace({str(other): ""})
        info = runner.dryrun(app, "workspace", workspace=str(project), build_workspaces=True)
        assert info.app is not None
        built0, built1 = (Path(r.image) for r in info.app.roles)
        assert (built0 / "train.py").read_text() == "print('hi')\n"
        assert not (built0 / "skip.log").exists()
        assert (built1 / "ps.py").exists()
        assert app.roles[0].image == "img"  # the caller's app is untouched

    def test_dry_run_plans_workspaces_and_schedule_builds_them(self, clean_env: Path) -> None:
        """A dry run builds and copies nothing (no Docker daemon, no job_dir needed): the
        roles show what would be built from which folder; schedule builds it."""
        project = clean_env / "project"
        project.mkdir()
        (project / "train.py").write_text("print('hi')\n")
        runner, made = make_runner()
        before = set(clean_env.iterdir())
        info = runner.dryrun(trainer_app(), "workspace", workspace=str(project))
        assert info.app is not None
        assert info.app.roles[0].image == f"<img + workspace {project}>"
        assert set(clean_env.iterdir()) == before  # nothing copied
        handle = runner.schedule(info)
        submitted = made["workspace"].apps[handle.rsplit("/", 1)[1]]
        assert (Path(submitted.roles[0].image) / "train.py").exists()
        assert set(clean_env.iterdir()) != before

    def test_editing_an_unbuilt_request_is_refused(self, clean_env: Path) -> None:
        project = clean_env / "project"
        project.mkdir()
        runner, made = make_runner()
        info = runner.dryrun(trainer_app(), "workspace", workspace=str(project))
        info.request["app"].name = "edited"  # changes what the request prints
        with pytest.raises(ValueError, match="build_workspaces=True"):
            runner.schedule(info)
        assert made["workspace"].apps == {}

    def test_workspace_is_ignored_by_schedulers_without_workspaces(self, clean_env: Path) -> None:
        runner, _ = make_runner()
        info = runner.dryrun(trainer_app(), "memory", workspace=str(clean_env))
        assert info.app is not None and info.app.roles[0].image == "img"


class TestLifecycle:
    def test_run_status_wait_describe_logs(self, clean_env: Path) -> None:
        runner, made = make_runner()
        handle = runner.run(trainer_app(), "memory")
        assert handle == "memory://sess/trainer-0"
        status = runner.status(handle)
        assert status is not None and status.state == AppState.RUNNING
        assert status.ui_url == "memory://trainer-0"
        final = runner.wait(handle, wait_interval=0.5)
        assert final is not None and final.state == AppState.SUCCEEDED
        # a scheduler with an event source may block a minute: it returns at the change,
        # so the short interval would only cost calls
        assert made["memory"].waits == [60.0]
        described = runner.describe(handle)
        assert described is not None and described.name == "trainer"
        assert described.roles[0].env["TORCHX_JOB_ID"] == "memory://sess/${app_id}"
        assert list(runner.log_lines(handle, "worker", k=1)) == ["trainer-0/worker/1\n"]

    def test_polling_schedulers_are_polled_every_wait_interval(self, clean_env: Path) -> None:
        class Polling(MemoryScheduler):
            has_event_source = False

        made: list[Polling] = []

        def polling(session_name: str, **kwargs: object) -> Polling:
            made.append(Polling(session_name, **kwargs))
            return made[-1]

        runner = Runner("sess", {"polling": polling})
        handle = runner.run(trainer_app(), "polling")
        final = runner.wait(handle, wait_interval=0.5)
        assert final is not None and final.state == AppState.SUCCEEDED
        assert made[0].waits == [0.5]

    def test_handles_from_another_runner_work(self, clean_env: Path) -> None:
        runner, made = make_runner()
        handle = runner.run(trainer_app(), "memory")

        def same_scheduler(session_name: str, **kwargs: object) -> MemoryScheduler:
            return made["memory"]

        other = Runner("other-session", {"memory": same_scheduler})
        described = other.describe(handle)
        assert described is not None
        assert described.name == "trainer-0"  # rebuilt from the scheduler's answer
        assert described.metadata == {"k": "v"}
        assert other.status(handle) is not None
        assert [a.app_handle for a in other.list("memory")] == ["memory://other-session/trainer-0"]

    def test_unknown_app(self, clean_env: Path) -> None:
        runner, _ = make_runner()
        handle = "memory://sess/ghost"
        assert runner.status(handle) is None
        assert runner.wait(handle) is None
        assert runner.describe(handle) is None
        runner.cancel(handle)
        runner.delete(handle)
        with pytest.raises(UnknownAppException, match="ghost"):
            runner.log_lines(handle, "worker")

    def test_cancel_only_running_apps_and_delete(self, clean_env: Path) -> None:
        runner, made = make_runner()
        handle = runner.run(trainer_app(), "memory")
        runner.cancel(handle)
        runner.cancel(handle)  # already CANCELLED: no second request
        assert made["memory"].cancelled == ["trainer-0"]
        with pytest.warns(PendingDeprecationWarning):
            runner.stop(handle)
        runner.delete(handle)
        assert made["memory"].deleted == ["trainer-0"]
        assert runner.status(handle) is None
        assert runner.describe(handle) is None

    def test_list_passes_cfg(self, clean_env: Path) -> None:
        runner, _ = make_runner()
        runner.run(trainer_app(), "memory")
        apps = runner.list("memory", cfg={"queue": "q"})
        assert [(a.app_id, a.app_handle) for a in apps] == [
            ("trainer-0", "memory://sess/trainer-0")
        ]

    def test_schedule_rejects_foreign_dryrun_info(self, clean_env: Path) -> None:
        runner, _ = make_runner()
        with pytest.raises(ValueError, match=r"Runner\.dryrun"):
            runner.schedule(AppDryRunInfo({}, repr))

    def test_context_manager_closes_schedulers_once(self, clean_env: Path) -> None:
        runner, made = make_runner()
        with pytest.raises(RuntimeError, match="boom"), runner:
            runner.run(trainer_app(), "memory")
            raise RuntimeError("boom")
        assert made["memory"].closed == 1
        runner.close()
        assert made["memory"].closed == 1

    def test_introspection(self, clean_env: Path) -> None:
        runner, _ = make_runner()
        assert runner.name() == "sess"
        assert runner.scheduler_backends() == ["memory", "workspace"]
        assert [k for k, _ in runner.scheduler_run_opts("memory")] == ["flag", "queue"]
        assert runner.cfg_from_str("memory", "flag=true,queue=a", "queue=b") == {
            "flag": True,
            "queue": "b",
        }
        runner.run(trainer_app(), "memory")
        assert repr(runner) == (
            "Runner(name='sess', schedulers=['memory', 'workspace'],"
            " apps=['memory://sess/trainer-0'])"
        )


class TestSchedulerParams:
    def test_torchx_env_vars_become_factory_kwargs(
        self, clean_env: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("TORCHX_FOO_BAR", "env")
        monkeypatch.setenv("TORCHX_BAZ", "env")
        runner, made = make_runner(scheduler_params={"baz": "explicit"})
        runner.status("memory://sess/x")
        kwargs = made["memory"].kwargs
        assert kwargs["foo_bar"] == "env"
        assert kwargs["baz"] == "explicit"

    def test_get_runner_session_name(self, clean_env: Path) -> None:
        runner = get_runner()
        assert runner.name() == "torchx"
        with pytest.warns(FutureWarning, match="session names"):
            assert get_runner("custom").name() == "custom"

    def test_runner_defaults_discover_installed_schedulers(self, clean_env: Path) -> None:
        runner = Runner()
        assert runner.name() == ""
        assert "local_cwd" in runner.scheduler_backends()


class TestComponents:
    def test_dryrun_component_uses_component_defaults(self, clean_env: Path) -> None:
        runner, _ = make_runner(component_defaults={"utils.echo": {"msg": "from defaults"}})
        info = runner.dryrun_component("utils.echo", [], "memory")
        assert info.app is not None and info.app.roles[0].args == ["from defaults"]
        info = runner.dryrun_component("utils.echo", ["--msg", "cli"], "memory")
        assert info.app is not None and info.app.roles[0].args == ["cli"]
        info = runner.dryrun_component("utils.echo", {"msg": "json"}, "memory")
        assert info.app is not None and info.app.roles[0].args == ["json"]

    def test_run_component(self, clean_env: Path) -> None:
        runner, made = make_runner()
        handle = runner.run_component("utils.sh", ["echo", "hi"], "memory")
        assert handle == "memory://sess/sh-0"
        assert made["memory"].apps["sh-0"].roles[0].args == ["-c", "exec echo hi"]


def _modules_after(code: str, env: dict[str, str]) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    return set(out.split())


HEAVY = {"pydantic", "fsspec", "yaml", "configparser"}


def test_runner_import_is_light(clean_env: Path) -> None:
    env = {**os.environ, "TORCHXCONFIG": ""}
    loaded = _modules_after("from torchx.runner import get_runner, Runner", env)
    assert "torchx.runner.api" in loaded
    assert not HEAVY & loaded


def test_local_dryrun_without_config_is_light(clean_env: Path) -> None:
    code = textwrap.dedent(
        """
        from torchx.runner import get_runner
        from torchx.components.utils import echo
        with get_runner() as runner:
            print(runner.dryrun(echo(), "local_cwd"))
        """
    )
    loaded = _modules_after(code, dict(os.environ))
    assert "torchx.schedulers.local_scheduler" in loaded
    assert not HEAVY & loaded


def test_dryrun_without_config_files_stays_light(clean_env: Path) -> None:
    """No config file to read: neither configparser nor pydantic get imported."""
    code = textwrap.dedent(
        """
        from torchx.runner import Runner
        from torchx.schedulers.api import Scheduler
        from torchx.specs import AppDef, AppDryRunInfo, Role

        class Tiny(Scheduler):
            def _submit_dryrun(self, app, cfg):
                return AppDryRunInfo(app, repr)
            def schedule(self, info): ...
            def describe(self, app_id): ...
            def list(self, cfg=None): ...
            def _cancel_existing(self, app_id): ...
            def _validate(self, app, scheduler, cfg): ...

        runner = Runner("s", {"tiny": lambda session_name, **kw: Tiny("tiny", session_name)})
        app = AppDef("a", roles=[Role(name="r", image="i", entrypoint="e")])
        info = runner.dryrun(app, "tiny")
        assert info.app.roles[0].env["TORCHX_JOB_ID"] == "tiny://s/${app_id}"
        """
    )
    loaded = _modules_after(code, dict(os.environ))
    assert "torchx.runner.config" in loaded
    assert not HEAVY & loaded


@pytest.fixture
def local_runner(clean_env: Path) -> Iterator[Runner]:
    with get_runner() as runner:
        yield runner


class TestLocalCwd:
    """Real processes through the local_cwd scheduler."""

    def test_echo_run_wait_logs(self, local_runner: Runner) -> None:
        handle = local_runner.run_component("utils.echo", ["--msg", "hello runner"], "local_cwd")
        status = local_runner.wait(handle, wait_interval=5)
        assert status is not None and status.state == AppState.SUCCEEDED
        assert list(local_runner.log_lines(handle, "echo")) == ["hello runner\n"]

    def test_job_env_is_visible_to_the_app(self, local_runner: Runner) -> None:
        app = AppDef(
            "envcheck",
            roles=[
                Role(
                    name="sh",
                    image="",
                    entrypoint="sh",
                    args=["-c", 'echo "$TORCHX_JOB_ID"'],
                )
            ],
        )
        handle = local_runner.run(app, "local_cwd")
        status = local_runner.wait(handle, wait_interval=5)
        assert status is not None and status.state == AppState.SUCCEEDED
        app_id = handle.rsplit("/", 1)[1]
        assert list(local_runner.log_lines(handle, "sh")) == [f"local_cwd://torchx/{app_id}\n"]

    def test_another_runner_sees_and_cancels_the_app(self, local_runner: Runner) -> None:
        handle = local_runner.run_component("utils.sh", ["sleep", "60"], "local_cwd")
        with get_runner() as other:
            status = other.status(handle)
            assert status is not None and not status.is_terminal()
            described = other.describe(handle)
            assert described is not None and described.roles[0].name == "sh"
            assert handle in [a.app_handle for a in other.list("local_cwd")]
            other.cancel(handle)
            final = other.wait(handle, wait_interval=5)
        assert final is not None and final.state == AppState.CANCELLED
        local_runner.delete(handle)
        assert local_runner.status(handle) is None

    def test_env_names_a_shell_cannot_use_reach_the_process(self, local_runner: Runner) -> None:
        show = "import os; print(os.environ['TORCH_CUDA_SANITIZER'], os.environ['MY-VAR'])"
        role = Role(
            name="py",
            image="",
            entrypoint=sys.executable,
            args=["-c", show],
            env={"TORCH_CUDA_SANITIZER=1": "1", "MY-VAR": "$(touch pwned)"},
        )
        handle = local_runner.run(AppDef("names", roles=[role]), "local_cwd")
        status = local_runner.wait(handle, wait_interval=5)
        assert status is not None and status.state == AppState.SUCCEEDED
        assert list(local_runner.log_lines(handle, "py")) == ["1=1 $(touch pwned)\n"]
        assert not Path("pwned").exists()

    def test_failed_app(self, local_runner: Runner) -> None:
        handle = local_runner.run_component("utils.sh", ["false"], "local_cwd")
        status = local_runner.wait(handle, wait_interval=5)
        assert status is not None and status.state == AppState.FAILED


@pytest.mark.parametrize(
    ("name", "problem"), [("=1", "is empty before its first '='"), ("A\0B", "contains a NUL")]
)
def test_env_names_no_backend_can_set_are_refused(clean_env: Path, name: str, problem: str) -> None:
    runner, made = make_runner()
    app = trainer_app()
    app.roles[0].env[name] = "x"
    with pytest.raises(ValueError, match=problem) as refused:
        runner.dryrun(app, "memory")
    assert "\n" not in str(refused.value)
    assert made["memory"].apps == {}


def test_env_names_a_shell_cannot_use_are_carried_as_data(
    clean_env: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Upstream passed such names on; a real project's typo ``TORCH_CUDA_SANITIZER=1`` as a
    name works as it did on upstream's Slurm. The user's AppDef is left as it was."""
    runner, _ = make_runner()
    app = trainer_app()
    app.roles[0].env.update({"TORCH_CUDA_SANITIZER=1": "1", "MY-VAR": "secret-value"})
    sent = runner.dryrun(app, "memory").request["app"].roles[0].env
    assert sent["TORCH_CUDA_SANITIZER"] == "1=1" and sent["MY-VAR"] == "secret-value"
    assert "TORCH_CUDA_SANITIZER=1" not in sent
    assert "TORCH_CUDA_SANITIZER=1" in app.roles[0].env
    warned = [r.getMessage() for r in caplog.records if r.name == "torchx.env"]
    assert len(warned) == 2 and not any("secret-value" in w for w in warned)
    both = trainer_app()
    both.roles[0].env.update({"X=1": "a", "X": "b"})
    with pytest.raises(ValueError, match="both set X"):
        runner.dryrun(both, "memory")


def test_an_unknown_component_argument_is_refused_through_the_api() -> None:
    """`run_component("utils.echo", {"mgs": "hi"})` ran the default "hello world"."""
    import pytest

    from torchx.runner import get_runner
    from torchx.specs.builders import ComponentArgumentError

    with get_runner() as runner:
        with pytest.raises(
            ComponentArgumentError, match=r"unknown argument\(s\) 'mgs' \(did you mean 'msg'\?\)"
        ):
            runner.dryrun_component("utils.echo", {"mgs": "hi"}, "local_cwd")
        info = runner.dryrun_component("utils.echo", {"msg": "hi"}, "local_cwd")
        assert info._app is not None and info._app.roles[0].args[-1] == "hi"


def test_threads_share_one_instance_of_a_scheduler() -> None:
    """`torchx list --progress` and `torchx ui` read statuses from several threads: the
    first calls, side by side, make one scheduler, not one each (the others never closed)."""
    import threading
    import time

    made: list[MemoryScheduler] = []

    def slow_factory(session_name: str, **kw: object) -> MemoryScheduler:
        time.sleep(0.05)  # a client that takes a moment to build: the threads overlap
        made.append(MemoryScheduler(session_name, **kw))
        return made[-1]

    runner = Runner("sess", {"memory": slow_factory})
    start = threading.Barrier(8)

    def first_call() -> None:
        start.wait()
        runner.list("memory")

    threads = [threading.Thread(target=first_call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1
    runner.close()
