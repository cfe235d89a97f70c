"""The scheduler contract (``torchx.schedulers.api``), ``StructuredOpts`` and the scheduler
registry (``torchx.schedulers``)."""

from __future__ import annotations

import importlib
import json
import linecache
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import write_dist

import torchx.schedulers
from torchx.schedulers import api as scheduler_api
from torchx.schedulers.api import (
    DAYS_IN_2_WEEKS,
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    StructuredOpts,
    filter_regex,
    split_lines,
    split_lines_iterator,
    stream_name,
    whole_lines,
)
from torchx.specs import (
    NULL_RESOURCE,
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    InvalidRunConfigException,
    Resource,
    Role,
    runopts,
)
from torchx.workspace.api import WorkspaceMixin

SPECS_SRC = Path(torchx.schedulers.__file__).resolve().parents[2]


# ---- an in-memory scheduler ---------------------------------------------------------


@dataclass
class K8sGroup(StructuredOpts):
    context: str | None = None
    """kubectl context to use."""


@dataclass
class MemOpts(StructuredOpts):
    queue: str
    """Queue to submit to."""

    log_dir: str | None = None
    """Where logs go.

    Spans two lines."""

    mail_user: str | None = field(default=None, metadata={"cfg_key": "mail-user"})
    """Address notified by mail."""

    retries: int = 0
    tags: list[str] = field(default_factory=list)
    """Tags attached to the job."""

    k8s: K8sGroup = field(default_factory=K8sGroup)


class MemoryScheduler(Scheduler[MemOpts]):
    """Keeps apps in a dict; enough to exercise every default of ``Scheduler``."""

    def __init__(self, session_name: str = "test") -> None:
        super().__init__("memory", session_name)
        self.apps: dict[str, DescribeAppResponse] = {}
        self.cancelled: list[str] = []

    def _run_opts(self) -> runopts:
        return MemOpts.as_runopts()

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        opts = MemOpts.from_cfg(cfg)
        return AppDryRunInfo({"name": app.name, "opts": opts}, lambda r: f"request {r['name']}")

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        app_id = f"{dryrun_info.request['name']}-{len(self.apps)}"
        self.apps[app_id] = DescribeAppResponse(app_id=app_id, state=AppState.RUNNING)
        return app_id

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        return self.apps.get(app_id)

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        return [ListAppResponse(app_id=a, state=d.state) for a, d in self.apps.items()]

    def _cancel_existing(self, app_id: str) -> None:
        self.cancelled.append(app_id)
        self.apps[app_id].state = AppState.CANCELLED


class TaggingRole(Role):
    """A role whose ``pre_proc`` hook rewrites the request."""

    def pre_proc(self, scheduler: str, dryrun_info: AppDryRunInfo[Any]) -> AppDryRunInfo[Any]:
        dryrun_info.request.setdefault("seen", []).append((scheduler, self.name))
        return dryrun_info


def _app(resource: Resource = NULL_RESOURCE) -> AppDef:
    return AppDef(
        name="app",
        roles=[
            TaggingRole(name="a", image="img-a", resource=resource),
            TaggingRole(name="b", image="img-b", resource=resource),
        ],
    )


def test_submit_resolves_cfg_and_schedules() -> None:
    scheduler = MemoryScheduler()
    app_id = scheduler.submit(_app(), {"queue": "q", "logDir": "/logs"})
    assert scheduler.exists(app_id)
    assert not scheduler.exists("unknown")
    assert [r.app_id for r in scheduler.list()] == [app_id]
    with pytest.raises(InvalidRunConfigException, match="queue"):
        scheduler.submit(_app(), {})


def test_submit_dryrun_runs_pre_proc_and_records_app_and_cfg() -> None:
    scheduler = MemoryScheduler()
    app = _app()
    info = scheduler.submit_dryrun(app, {"queue": "q"})
    assert info.request["seen"] == [("memory", "a"), ("memory", "b")]
    assert info.request["opts"] == MemOpts(queue="q")
    assert info.request["opts"].tags == []  # an unset factory default is not replaced by None
    assert info._app is app
    assert info._cfg["queue"] == "q"
    assert info._cfg["retries"] == 0
    assert repr(info) == "request app"


def test_cancel_and_delete_are_idempotent() -> None:
    scheduler = MemoryScheduler()
    app_id = scheduler.submit(_app(), {"queue": "q"})
    scheduler.cancel("unknown")
    scheduler.delete("unknown")
    assert scheduler.cancelled == []
    scheduler.cancel(app_id)
    scheduler.delete(app_id)  # default delete cancels
    assert scheduler.cancelled == [app_id, app_id]
    assert scheduler.apps[app_id].state == AppState.CANCELLED


def test_defaults_of_optional_hooks() -> None:
    scheduler = MemoryScheduler()
    with pytest.raises(NotImplementedError, match=r"MemoryScheduler.*log iteration"):
        scheduler.log_iter("x", "role")
    assert scheduler.describe_native("x") is None
    scheduler.wait_for_change("x", 0)  # returns (the default sleeps at most the timeout)
    scheduler.close()
    scheduler.close()


def test_validate_requires_a_resource_per_role() -> None:
    scheduler = MemoryScheduler()
    with pytest.raises(ValueError, match=r"role `a` \(image `img-a`\)"):
        scheduler._validate(_app(), "memory", {})
    scheduler._validate(_app(Resource(cpu=1, gpu=0, memMB=128)), "memory", {})
    scheduler._pre_build_validate(_app(), "memory", {})


def test_workspace_needs_a_workspace_scheduler() -> None:
    with pytest.raises(ValueError, match="scheduler `memory` does not support workspaces"):
        MemoryScheduler().submit(_app(), {"queue": "q"}, workspace="/tmp/project")


class WorkspaceScheduler(MemoryScheduler, WorkspaceMixin[None]):
    def workspace_opts(self) -> runopts:
        opts = runopts()
        opts.add("image_repo", type_=str, help="where images go", default="repo")
        return opts

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        role.image = f"{cfg['image_repo']}/{workspace.strip('/').replace('/', '_')}"


def test_workspace_is_built_for_the_first_role() -> None:
    scheduler = WorkspaceScheduler()
    assert scheduler_api.as_workspace_scheduler(scheduler) is scheduler
    assert scheduler_api.as_workspace_scheduler(MemoryScheduler()) is None
    assert [key for key, _ in scheduler.run_opts()][-1] == "image_repo"
    app = _app()
    scheduler.submit(app, {"queue": "q"}, workspace="/tmp/project")
    assert app.roles[0].image == "repo/tmp_project"
    assert app.roles[1].image == "img-b"


def test_module_helpers() -> None:
    assert DAYS_IN_2_WEEKS == 14
    assert [s.value for s in Stream] == ["stdout", "stderr", "combined"]
    assert list(filter_regex("err", ["an error\n", "fine\n", "stderr\n"])) == [
        "an error\n",
        "stderr\n",
    ]
    assert split_lines("a\nb\n") == ["a\n", "b\n"]
    assert split_lines("a\r\nb") == ["a\r\n", "b"]
    assert split_lines("") == []
    assert list(split_lines_iterator(["a\nb", "c\n"])) == ["a\n", "b", "c\n"]


def test_whole_lines_of_a_chunked_stream() -> None:
    """Lines are rejoined across chunks, also inside a multi-byte character."""
    text = "ünï\ncode 日本\r progress\rbar\nlast".encode()
    for size in (1, 2, 3, 7, len(text)):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert list(whole_lines(chunks)) == [
            "ünï\n".encode(),
            "code 日本\r progress\rbar\n".encode(),
            b"last",
        ]
    assert list(whole_lines([])) == []


def test_whole_lines_closes_its_source_when_the_reader_stops() -> None:
    closed: list[bool] = []

    def source() -> Iterator[bytes]:
        try:
            yield from (b"a\n", b"b\n", b"c\n")
        finally:
            closed.append(True)

    lines = whole_lines(source())
    assert next(lines) == b"a\n"
    lines.close()
    assert closed == [True]


def test_response_dataclasses() -> None:
    described = DescribeAppResponse()
    assert described.app_id == "<NOT_SET>"
    assert described.state == AppState.UNSUBMITTED
    assert described.num_restarts == -1
    assert described.roles == []
    assert described.roles_statuses == []
    assert DescribeAppResponse().metadata is not described.metadata
    a = ListAppResponse(app_id="x", state=AppState.RUNNING)
    b = ListAppResponse(app_id="x", state=AppState.RUNNING, name="other")
    assert hash(a) == hash(b)
    assert a.app_handle == "<NOT_SET>"
    assert len({a, ListAppResponse(app_id="x", state=AppState.RUNNING)}) == 1


# ---- StructuredOpts -----------------------------------------------------------------


def test_as_runopts_schema_and_help_from_attribute_docstrings() -> None:
    opts = MemOpts.as_runopts()
    assert [key for key, _ in opts] == [
        "queue",
        "log_dir",
        "mail-user",
        "retries",
        "tags",
        "k8s.context",
    ]
    queue = opts.get("queue")
    assert queue is not None
    assert queue.is_required
    assert queue.help == "Queue to submit to."
    log_dir = opts.get("log_dir")
    assert log_dir is not None
    assert log_dir.opt_type is str
    assert not log_dir.is_required
    assert log_dir.help == "Where logs go.\n\nSpans two lines."
    retries = opts.get("retries")
    assert retries is not None
    assert (retries.default, retries.help) == (0, "retries")
    tags = opts.get("tags")
    assert tags is not None
    assert tags.default is None
    assert not tags.is_required
    assert tags.is_type_list_of_str
    nested = opts.get("k8s.context")
    assert nested is not None
    assert nested.help == "kubectl context to use."


def test_get_docstrings() -> None:
    assert MemOpts.get_docstrings() == {
        "queue": "Queue to submit to.",
        "log_dir": "Where logs go.\n\nSpans two lines.",
        "mail_user": "Address notified by mail.",
        "retries": "retries",
        "tags": "Tags attached to the job.",
        "k8s.context": "kubectl context to use.",
    }


def test_from_cfg_accepts_every_spelling() -> None:
    opts = MemOpts.from_cfg(
        {
            "queue": "q",
            "logDir": "/l",
            "mail-user": "a@b",
            "k8s.context": "ctx",
            "unknown": "ignored",
        }
    )
    assert opts == MemOpts(queue="q", log_dir="/l", mail_user="a@b", k8s=K8sGroup("ctx"))
    assert MemOpts.from_cfg(opts) is opts
    assert MemOpts.from_cfg({"queue": "q", "mail_user": "m"}).mail_user == "m"
    with pytest.raises(InvalidRunConfigException, match=r"log_dir.*twice"):
        MemOpts.from_cfg({"queue": "q", "log_dir": "/a", "logDir": "/b"})
    assert MemOpts.from_cfg({"queue": "q", "log_dir": "/a", "logDir": "/a"}).log_dir == "/a"
    with pytest.raises(TypeError):
        MemOpts.from_cfg({})


def test_mapping_protocol() -> None:
    opts = MemOpts(queue="q", log_dir="/l", k8s=K8sGroup("ctx"))
    assert opts["queue"] == "q"
    assert opts["logDir"] == "/l"
    assert opts["mail-user"] is None
    assert opts["mail_user"] is None
    assert opts["k8s.context"] == "ctx"
    assert list(opts) == ["queue", "log_dir", "mail-user", "retries", "tags", "k8s.context"]
    assert len(opts) == 6
    assert "logDir" in opts
    assert "as_runopts" not in opts
    not_a_key: object = 3
    assert not_a_key not in opts
    assert opts.get("nope", "d") == "d"
    with pytest.raises(KeyError, match="`nope` is not an option of MemOpts"):
        opts["nope"]
    assert dict(opts)["k8s.context"] == "ctx"


def test_merge_operator() -> None:
    opts = MemOpts(queue="q")
    merged = opts | {"queue": "z", "extra": 1}
    assert type(merged) is dict
    assert merged["queue"] == "z"
    assert merged["extra"] == 1
    assert list(merged)[:2] == ["queue", "log_dir"]
    # dict.__or__ declines a non-dict, so Python calls MemOpts.__ror__ (mypy cannot see it)
    reverse = {"queue": "z", "extra": 1} | opts  # type: ignore[operator]
    assert reverse["queue"] == "q"
    assert reverse["extra"] == 1


def test_resolve_accepts_a_structured_opts_instance() -> None:
    resolved = MemoryScheduler().run_opts().resolve(MemOpts(queue="q", retries=2))
    assert resolved["queue"] == "q"
    assert resolved["retries"] == 2


def test_class_without_source_falls_back_to_field_names() -> None:
    namespace: dict[str, Any] = {"StructuredOpts": StructuredOpts, "dataclass": dataclass}
    exec(  # source not available to inspect: help falls back to the field name
        "@dataclass\nclass Dyn(StructuredOpts):\n    x: int = 1\n    '''doc'''\n", namespace
    )
    assert namespace["Dyn"].get_docstrings() == {"x": "x"}


@dataclass
class HelpOpts(StructuredOpts):
    from_metadata: int = field(default=1, metadata={"help": "Help from metadata."})
    """A docstring the metadata help wins over."""

    from_docstring: str = "x"
    """Help from the docstring."""

    undocumented: bool = False


@dataclass
class MetadataOnlyOpts(StructuredOpts):
    first: int = field(default=1, metadata={"help": "First option."})
    second: str | None = field(default=None, metadata={"help": "Second option."})


def test_metadata_help_wins_then_docstring_then_name() -> None:
    assert HelpOpts.get_docstrings() == {
        "from_metadata": "Help from metadata.",
        "from_docstring": "Help from the docstring.",
        "undocumented": "undocumented",
    }
    helps = {key: opt.help for key, opt in HelpOpts.as_runopts()}
    assert helps == {
        "from_metadata": "Help from metadata.",
        "from_docstring": "Help from the docstring.",
        "undocumented": "undocumented",
    }


def test_metadata_help_needs_no_source() -> None:
    namespace: dict[str, Any] = {
        "StructuredOpts": StructuredOpts,
        "dataclass": dataclass,
        "field": field,
    }
    exec(
        "@dataclass\nclass Dyn(StructuredOpts):\n"
        "    x: int = field(default=1, metadata={'help': 'the x'})\n",
        namespace,
    )
    assert namespace["Dyn"].get_docstrings() == {"x": "the x"}
    assert MetadataOnlyOpts.get_docstrings() == {
        "first": "First option.",
        "second": "Second option.",
    }
    # Every option has metadata help, so the (slow) source read never happened.
    assert MetadataOnlyOpts not in scheduler_api._DOCSTRINGS


def _import_source(tmp_path: Path, source: str) -> Any:
    """Imports ``source`` as a new module from a real file (so its source can be read)."""
    module_name = f"opts_mod_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{module_name}.py").write_text(textwrap.dedent(source))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(module_name)
    finally:
        sys.path.remove(str(tmp_path))


def test_as_runopts_is_computed_once_and_returns_fresh_copies(tmp_path: Path) -> None:
    module = _import_source(
        tmp_path,
        """
        from dataclasses import dataclass
        from torchx.schedulers.api import StructuredOpts

        @dataclass
        class FileOpts(StructuredOpts):
            depth: int = 3
            \"\"\"How deep to go.\"\"\"
        """,
    )
    first = module.FileOpts.as_runopts()
    assert first.get("depth").help == "How deep to go."
    # The source is gone now; the schema computed on the first call is still served.
    Path(module.__file__).unlink()
    linecache.clearcache()
    first.add("extra", str, "added by the caller")
    first.get("depth").help = "changed by the caller"
    second = module.FileOpts.as_runopts()
    assert [key for key, _ in second] == ["depth"]
    assert second.get("depth").help == "How deep to go."
    docs = module.FileOpts.get_docstrings()
    docs["depth"] = "changed"
    assert module.FileOpts.get_docstrings() == {"depth": "How deep to go."}


def test_attribute_docstrings_of_classes_inside_statements(tmp_path: Path) -> None:
    module = _import_source(
        tmp_path,
        """
        import sys
        from dataclasses import dataclass
        from torchx.schedulers.api import StructuredOpts

        if sys.platform:
            @dataclass
            class InIf(StructuredOpts):
                mode: str = "fast"
                \"\"\"Mode, defined under an if.\"\"\"

        try:
            @dataclass
            class InTry(StructuredOpts):
                retries: int = 0
                \"\"\"Retries, defined in a try.\"\"\"
        except ImportError:
            pass

        class Outer:
            @dataclass
            class Inner(StructuredOpts):
                size: int = 1
                \"\"\"Size, of a nested class.\"\"\"
        """,
    )
    assert module.InIf.get_docstrings() == {"mode": "Mode, defined under an if."}
    assert module.InTry.get_docstrings() == {"retries": "Retries, defined in a try."}
    assert module.Outer.Inner.get_docstrings() == {"size": "Size, of a nested class."}


def test_attribute_docstrings_of_a_class_defined_in_a_function() -> None:
    @dataclass
    class LocalOpts(StructuredOpts):
        level: int = 0
        """Level of detail."""

    assert LocalOpts.get_docstrings() == {"level": "Level of detail."}


# ---- registry (real entry points, fresh interpreters) ----------------------------------


def _install(site: Path, dist: str, schedulers: dict[str, str]) -> None:
    write_dist(site, dist, {"torchx.schedulers": schedulers})


REGISTRY = """
    import json
    from torchx.schedulers import get_default_scheduler_name, get_scheduler_factories
    try:
        default = get_default_scheduler_name()
    except RuntimeError as e:
        default = "error: " + str(e)
    print(json.dumps({"names": list(get_scheduler_factories()), "default": default}))
"""


def _registry(pythonpath: str, home: Path, *python_args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, *python_args, "-c", textwrap.dedent(REGISTRY)],
        env={**os.environ, "PYTHONPATH": pythonpath, "TORCHX_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_third_party_scheduler_adds_to_the_builtins(tmp_path: Path) -> None:
    site = tmp_path / "site"
    # A stand-in for torchx-runner's registration, so the test needs only torchx-specs.
    _install(site, "torchx-runner-standin", {"local_cwd": "standin:create_scheduler"})
    _install(site, "acme-sched", {"acme": "acme.sched:create_scheduler"})
    pythonpath = f"{site}{os.pathsep}{SPECS_SRC}"
    result = _registry(pythonpath, tmp_path / "home", "-S")  # -S: only this site is visible
    assert set(result["names"]) == {"acme", "local_cwd"}
    assert result["default"] == "local_cwd"


def test_default_is_first_scheduler_without_local_cwd(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install(site, "zz-sched", {"zeta": "zz:create"})
    _install(site, "aa-sched", {"beta": "aa:create", "alpha": "aa:create"})
    pythonpath = f"{site}{os.pathsep}{SPECS_SRC}"
    result = _registry(pythonpath, tmp_path / "home", "-S")  # -S: torchx-runner not visible
    assert result["names"] == ["alpha", "beta", "zeta"]
    assert result["default"] == "alpha"


def test_no_scheduler_installed_is_a_clear_error(tmp_path: Path) -> None:
    result = _registry(str(SPECS_SRC), tmp_path / "home", "-S")
    assert result["names"] == []
    assert result["default"].startswith("error: no scheduler is installed")
    assert "torchx-runner" in result["default"]


def test_importing_the_registry_is_cheap(tmp_path: Path) -> None:
    code = """
        import json, sys
        import torchx.schedulers as s
        cheap = not any(m in sys.modules for m in ("torchx.specs", "importlib.metadata"))
        from torchx.schedulers.api import Scheduler
        print(json.dumps({"cheap": cheap, "same": s.Scheduler is Scheduler,
                          "compat": s.DEFAULT_SCHEDULER_MODULES}))
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, "TORCHX_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(proc.stdout) == {"cheap": True, "same": True, "compat": {}}


def test_lazy_scheduler_attribute() -> None:
    assert torchx.schedulers.Scheduler is Scheduler
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        torchx.schedulers.Nope  # noqa: B018


def test_stream_name_defaults_to_combined_and_rejects_others() -> None:
    assert stream_name(None) == "combined"
    assert stream_name(Stream.STDERR) == "stderr"
    assert stream_name("stdout") == "stdout"
    with pytest.raises(
        ValueError, match="unknown log stream 'both'; use stdout, stderr or combined"
    ):
        stream_name("both")


# -- log_iter: one template over a _log_lines hook ------------------------------------------


class HookedLogScheduler(MemoryScheduler):
    """Implements only the hook: every query it gets is kept for the test to read."""

    log_time_bounds = False

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[scheduler_api.LogQuery] = []

    def _log_lines(self, query: scheduler_api.LogQuery) -> Iterator[str]:
        self.queries.append(query)
        return iter(["epoch 1 loss 0.5\n", "saving checkpoint\n", "epoch 2 loss 0.25\n"])


class OverridingLogScheduler(MemoryScheduler):
    """A plugin written against upstream's contract: it overrides log_iter itself."""

    def log_iter(self, app_id: str, role_name: str, k: int = 0, *args: Any, **kw: Any) -> Any:
        return iter([f"{app_id}/{role_name}/{k}: own lines\n"])


def test_log_iter_filters_what_the_hook_returns_and_hands_it_the_query() -> None:
    sched = HookedLogScheduler()
    lines = sched.log_iter(
        "app", "trainer", 1, regex=r"loss", should_tail=True, streams=Stream.STDERR
    )
    assert list(lines) == ["epoch 1 loss 0.5\n", "epoch 2 loss 0.25\n"]
    assert sched.queries == [
        scheduler_api.LogQuery("app", "trainer", 1, stream="stderr", follow=True)
    ]
    assert list(sched.log_iter("app", "trainer")) == [
        "epoch 1 loss 0.5\n", "saving checkpoint\n", "epoch 2 loss 0.25\n",
    ]  # fmt: skip
    assert sched.queries[-1].stream == "combined"


def test_log_iter_refuses_an_unknown_stream_before_asking_the_backend() -> None:
    sched = HookedLogScheduler()
    with pytest.raises(
        ValueError, match="unknown log stream 'both'; use stdout, stderr or combined"
    ):
        sched.log_iter("app", "trainer", streams="both")  # type: ignore[arg-type]
    assert sched.queries == []


def test_log_iter_warns_once_where_the_backend_keeps_no_times() -> None:
    import datetime as dt

    since = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    with pytest.warns(UserWarning, match="keeps no times with its log lines") as caught:
        lines = list(HookedLogScheduler().log_iter("app", "trainer", since=since))
    assert len(caught) == 1 and len(lines) == 3


def test_a_plugin_overriding_log_iter_keeps_working() -> None:
    assert list(OverridingLogScheduler().log_iter("app", "r", 2, "ignored")) == [
        "app/r/2: own lines\n"
    ]
