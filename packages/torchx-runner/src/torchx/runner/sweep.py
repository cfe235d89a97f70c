"""Sweeps of a component: the :class:`~torchx.specs.sweep.AppArray` of every combination
of the swept values, and the record that lets ``--retry-failed`` submit the failed ones.

The record (``$TORCHX_HOME/sweeps/``, private) keeps how the sweep was asked for, not the
apps it became: a retry calls the component again with each failed element's values, as
the first submission did, from the same directory.
"""

from __future__ import annotations

import json
import os
import shlex

from torchx.runner._requested_as import requested_as
from torchx.runner._requests import check_no_nul, copy_app, fill_event, str_or_none
from torchx.runner.events import log_event
from torchx.specs.api import Workspace, parse_app_handle
from torchx.specs.builders import (
    ComponentArgumentError,
    component_args_from_str,
    materialize_appdef,
)
from torchx.specs.component_params import resolved_annotations
from torchx.specs.finder import get_component
from torchx.specs.sweep import AppArray, ArrayElement, app_array, sweep_values
from torchx.util.startup import fn_params
from torchx.util.strings import check_env_names
from torchx.util.support.atomic import make_private_dirs, write_private
from torchx.util.support.home import torchx_home
from torchx.util.support.host_checks import real_submit
from torchx.util.types import decode_optional

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from torchx.schedulers.api import Scheduler
    from torchx.specs.api import AppDef, AppDryRunInfo, AppHandle, CfgVal, Role, Workspace
    from torchx.specs.status import AppStatus, ArrayStatus

__all__ = ["SweepRecord", "build_sweep", "load_record", "parse_sweep_flags", "save_record"]

_RECORD_VERSION = 1


def parse_sweep_flags(flags: Sequence[str]) -> dict[str, list[str]]:
    """``["lr=0.1,0.01", "bs=8,16"]`` (``--sweep`` flags) as ``{"lr": [...], "bs": [...]}``.

    Raises:
        ValueError: a flag without ``=``, no value, or one argument swept twice.
    """
    sweep: dict[str, list[str]] = {}
    for flag in flags:
        name, sep, values = flag.partition("=")
        name = name.strip().lstrip("-")
        if not sep or not name:
            raise ValueError(f"--sweep {flag!r}: write it ARG=V1,V2,... (e.g. --sweep lr=0.1,0.01)")
        items = [v.strip() for v in values.split(",")]
        if not values.strip() or any(not v for v in items):
            raise ValueError(
                f"--sweep {flag!r}: an empty value; give {name}=V1,V2,... with no empty item"
            )
        if name in sweep:
            raise ValueError(
                f"--sweep {name} is given twice; give all its values in one flag ({name}=V1,V2,...)"
            )
        sweep[name] = items
    return sweep


def build_sweep(
    fn: Callable[..., Any],
    component_args: list[str] | dict[str, Any],
    sweep: Mapping[str, Sequence[object]],
    *,
    defaults: Mapping[str, str] | None,
    max_parallel: int | None,
    indices: Sequence[int] | None = None,
    size: int | None = None,
) -> AppArray:
    """The array of component ``fn`` called once per combination of ``sweep``'s values
    (all of them, or those at ``indices``), each value decoded as the argument's type.

    Raises:
        ValueError: an argument the component does not take, one given both plainly and
            swept, a value that does not parse (named with its argument), apps of
            different shapes.
    """

    if not sweep:
        raise ValueError("a sweep needs at least one swept argument (--sweep ARG=V1,V2)")
    values = {name: [str(v) for v in vals] for name, vals in sweep.items()}
    cli_args = component_args if isinstance(component_args, list) else []
    json_args = dict(component_args) if isinstance(component_args, dict) else {}
    for name in values:
        if _given(name, cli_args) or name in json_args:
            raise ComponentArgumentError(
                f"argument {name!r} is both given and swept; drop --{name} from the"
                " component's arguments or from --sweep"
            )

    word_lists = _list_params(fn, values)
    star = [name for name, joined in word_lists.items() if joined is None]
    if star and _var_args_given(fn, cli_args, defaults):
        raise ComponentArgumentError(
            f"argument {star[0]!r} is both given and swept; drop the component's trailing"
            f" arguments (after --) or --sweep {star[0]}"
        )

    def element(combo: Mapping[str, str]) -> AppDef:
        typed: dict[str, Any] = dict(combo)
        for name, joined in word_lists.items():
            # a list-typed argument's value is split as a shell would split it:
            # `script_args=--lr 0.1` runs `train.py --lr 0.1`
            words = shlex.split(combo[name])
            typed[name] = words if joined is None else joined.join(words)
        return materialize_appdef(fn, cli_args, defaults, {**json_args, **typed})

    first = {name: vals[0] for name, vals in values.items()}
    for name, vals in values.items():  # each value alone first: the error names it
        for value in dict.fromkeys(vals):
            try:
                element({**first, name: value})
            except ValueError as e:
                raise type(e)(f"--sweep {name}={value}: {e}") from None
    combos = sweep_values(values)
    wanted = list(indices) if indices is not None else list(range(len(combos)))
    for index in wanted:
        if not 0 <= index < len(combos):
            raise ValueError(f"element {index} is not in a sweep of {len(combos)} elements")
    apps = [element(combos[i]) for i in wanted]
    return app_array(
        apps,
        max_parallel=max_parallel,
        values=[combos[i] for i in wanted],
        indices=wanted,
        size=size if size is not None else len(combos),
    )


def _list_params(fn: Callable[..., Any], swept: Mapping[str, object]) -> dict[str, str | None]:
    """The swept arguments whose values are lists of words: ``{name: None}`` for ``*args``
    (the words themselves), ``{name: ","}`` for a ``list[T]`` (the words joined the way
    its type decodes them)."""

    annotations = resolved_annotations(fn)
    found: dict[str, str | None] = {}
    for param in fn_params.parameters(fn):
        if param.name not in swept:
            continue
        if param.kind == fn_params.VAR_POSITIONAL:
            found[param.name] = None
            continue
        tp = decode_optional(annotations.get(param.name))
        if getattr(tp, "__origin__", None) in (list, tuple):
            found[param.name] = ","
    return found


def _var_args_given(
    fn: Callable[..., Any], cli_args: list[str], defaults: Mapping[str, str] | None
) -> bool:
    """Whether ``cli_args`` already holds trailing arguments for the component's ``*args``."""

    try:
        return bool(component_args_from_str(fn, cli_args, defaults).var_args)
    except ValueError:
        return False  # a required argument is the swept one: the element build says more


def _given(name: str, cli_args: list[str]) -> bool:
    """Whether ``cli_args`` sets ``name`` (``--name V``, ``--name=V``, ``-n V``)."""
    flags = {f"--{name}", f"-{name}"} if len(name) == 1 else {f"--{name}"}
    for word in cli_args:
        if word == "--":
            return False
        if word.split("=", 1)[0] in flags:
            return True
    return False


class SweepRecord:
    """How a sweep was submitted from this host (what ``--retry-failed`` needs)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def workspace(self) -> Workspace | str | None:
        """The workspace the sweep was submitted with."""
        return workspace_from_json(self.data["workspace"])

    def rebuilt(self, indices: list[int], defaults: Mapping[str, str] | None) -> AppArray:
        """The sweep's elements ``indices`` again: its component called with their values
        (``defaults``: the ``.torchxconfig`` defaults of that component)."""

        data = self.data
        return build_sweep(
            get_component(data["component"]).fn,
            data["component_args"],
            data["sweep"],
            defaults=defaults,
            max_parallel=data["max_parallel"],
            indices=indices,
            size=int(data["size"]),
        )

    def save_retry(self, handle: str, array: AppArray) -> None:
        """Keeps the retry ``handle`` (of ``array``) as its sweep was kept, so that its own
        failed elements can be retried in turn."""
        data = self.data
        save_record(
            handle,
            component=data["component"],
            component_args=data["component_args"],
            sweep=data["sweep"],
            scheduler=data["scheduler"],
            cfg=data["cfg"],
            workspace=self.workspace(),
            parent_run_id=data["parent_run_id"],
            max_parallel=data["max_parallel"],
            array=array,
        )


def _records_dir() -> str:
    return os.path.join(torchx_home(), "sweeps")


def _record_path(handle: str) -> str:
    import hashlib  # a sweep's record only: not on `torchx run`'s path (bench_cli)

    digest = hashlib.sha256(handle.encode()).hexdigest()[:40]
    return os.path.join(_records_dir(), f"{digest}.json")


def save_record(
    handle: str,
    *,
    component: str,
    component_args: list[str] | dict[str, Any],
    sweep: Mapping[str, Sequence[object]],
    scheduler: str,
    cfg: Mapping[str, CfgVal] | None,
    workspace: Workspace | str | None,
    parent_run_id: str | None,
    max_parallel: int | None,
    array: AppArray,
) -> None:
    """Keeps how ``handle``'s sweep was made, privately, for ``--retry-failed``."""

    data = {
        "version": _RECORD_VERSION,
        "handle": handle,
        "component": component,
        "component_args": component_args,
        "sweep": {name: [str(v) for v in vals] for name, vals in sweep.items()},
        "scheduler": scheduler,
        "cfg": dict(cfg or {}),
        "workspace": _workspace_json(workspace),
        "parent_run_id": parent_run_id,
        "max_parallel": max_parallel,
        "indices": array.indices(),
        "size": array.size,
        "cwd": os.getcwd(),
    }
    make_private_dirs(_records_dir())
    write_private(_record_path(handle), json.dumps(data, default=str).encode())


def load_record(handle: str) -> SweepRecord | None:
    """The record of ``handle``'s sweep, if it was submitted from this host."""
    try:
        with open(_record_path(handle), "rb") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    if data.get("version") != _RECORD_VERSION or data.get("handle") != handle:
        return None
    return SweepRecord(data)


def _workspace_json(workspace: Workspace | str | None) -> Any:
    if workspace is None or isinstance(workspace, str):
        return workspace
    return {"projects": dict(workspace.projects)}


def workspace_from_json(value: Any) -> Workspace | str | None:
    """The workspace a record keeps, as ``Runner.run_sweep`` takes it."""
    if value is None or isinstance(value, str):
        return value

    return Workspace(projects=dict(value["projects"]))


def check_sweep(array: AppArray, sched: Scheduler[Any]) -> None:
    """A sweep goes only to a scheduler that runs it as one array, and each element's
    args and env pass the checks a role's do."""
    if not sched.supports_arrays:
        raise ValueError(
            f"scheduler `{sched.backend}` cannot run a sweep as one submission; run it on"
            " a scheduler that can (local_cwd, local_docker, slurm, kubernetes, aws_batch,"
            " ray) or submit the elements one by one"
        )
    if not array.elements:
        raise ValueError("a sweep needs at least one element; give it one value or more")
    if len(array.roles) != 1 or array.role.num_replicas != 1:
        raise ValueError(
            "each element of a sweep must be one role of one replica (a single-node app);"
            " run multi-node apps one by one"
        )
    if array.max_parallel is not None and array.max_parallel < 1:
        raise ValueError(f"max_parallel={array.max_parallel}: it must be at least 1")
    for position in range(len(array.elements)):
        role = array.element_role(position)
        check_env_names(role.name, role.env)
        check_no_nul(role)


def failed_elements(app_handle: str, status: AppStatus | None) -> list[int]:
    """The failed elements' indices of sweep ``app_handle`` (its ``status``), to retry."""
    if status is None:
        raise ValueError(f"no app {app_handle} on its scheduler; check the handle")
    if status.array is None:
        raise ValueError(
            f"{app_handle} is not a sweep; --retry-failed resubmits the failed"
            " elements of a sweep (torchx run --sweep)"
        )
    failed: list[int] = status.array.failed()
    if not failed:
        raise ValueError(
            f"no element of {app_handle} failed ({status.array.line()}); nothing to retry"
        )
    return failed


def record_for_retry(app_handle: str) -> SweepRecord:
    """The record of ``app_handle``'s sweep, from the directory it was submitted from."""
    record = load_record(app_handle)
    if record is None:
        raise ValueError(
            f"{app_handle} was not submitted by torchx run --sweep from this host (no"
            f" record under $TORCHX_HOME/sweeps); pass the apps again:"
            " runner.retry_failed(handle, apps=...)"
        )
    cwd = record.data["cwd"]
    if cwd != os.getcwd():
        raise ValueError(
            f"{app_handle} was submitted from {cwd}; run --retry-failed from"
            " there (its component and workspace paths are read from it)"
        )
    return record


def retried_apps(app_handle: str, apps: AppArray | Sequence[AppDef], failed: list[int]) -> AppArray:
    """The ``failed`` elements of ``apps`` (the sweep as first submitted) as a new array."""
    if isinstance(apps, AppArray):
        by_index = {e.index: e for e in apps.elements}
        missing = [i for i in failed if i not in by_index]
        if missing:
            raise ValueError(
                f"the apps given have no element {missing[0]} of {app_handle}; give the"
                " sweep's apps as first submitted"
            )
        array = copy_app(apps)
        assert isinstance(array, AppArray)
        array.elements = [by_index[i] for i in failed]
        array.size = apps.size or len(apps.elements)
        return array
    if any(i >= len(apps) for i in failed):
        raise ValueError(
            f"{len(apps)} apps given, but element {failed[-1]} of {app_handle}"
            " failed; give the sweep's apps as first submitted"
        )
    return app_array([apps[i] for i in failed], indices=failed, size=len(apps))


def sweep_as_described(
    app_id: str, roles: list[Role], metadata: dict[str, str], array: ArrayStatus
) -> AppArray:
    """A sweep's definition as its scheduler keeps it: its role and its elements."""
    return AppArray(
        name=app_id,
        roles=roles[:1],
        metadata=metadata,
        elements=[ArrayElement(index=e.index, values=dict(e.values)) for e in array.elements],
        size=array.size,
    )


class SweepMethods:
    """The :class:`~torchx.runner.Runner`'s sweep methods: a sweep submitted as one array,
    its dry run, and its failed elements submitted again."""

    if TYPE_CHECKING:  # what the Runner gives them
        _component_defaults: dict[str, dict[str, str]]

        def dryrun(
            self,
            app: AppDef,
            scheduler: str,
            cfg: Mapping[str, CfgVal] | None = None,
            workspace: Workspace | str | None = None,
            parent_run_id: str | None = None,
            *,
            build_workspaces: bool = False,
            idempotency_key: str | None = None,
        ) -> AppDryRunInfo[Any]: ...

        def schedule(
            self, dryrun_info: AppDryRunInfo[Any], *, idempotency_key: str | None = None
        ) -> AppHandle: ...

        def status(
            self, app_handle: AppHandle, *, progress: bool = True, element_progress: bool = False
        ) -> AppStatus | None: ...

    def run_sweep(  # noqa: PLR0917 (the order of run_component, plus the sweep)
        self,
        component: str,
        component_args: list[str] | dict[str, Any],
        sweep: Mapping[str, Sequence[object]],
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
        *,
        max_parallel: int | None = None,
        idempotency_key: str | None = None,
    ) -> AppHandle:
        """Runs ``component`` once per combination of ``sweep``'s values, as one array
        submission (a Slurm job array, a Kubernetes Indexed Job, an AWS Batch array job...),
        and returns its one handle.

        ``sweep`` maps some of the component's own arguments to their values:
        ``{"lr": [0.1, 0.01], "batch_size": [8, 16]}`` is four elements, the Cartesian
        product (the first argument varying slowest). Element ``i`` is the component
        called with its values; it sees ``$TORCHX_ARRAY_INDEX`` (``i``) and
        ``$TORCHX_ARRAY_SIZE``. ``status`` shows the elements (``AppStatus.array``);
        :meth:`retry_failed` submits the failed ones again.

        Args:
            component: a registered name or ``path/to/file.py:function``.
            component_args: the component's other arguments, CLI-style or as a dict.
            sweep: the swept arguments and their values.
            scheduler: the scheduler's name.
            cfg: run options; ``.torchxconfig`` fills in what is not given.
            workspace: local code to ship with the sweep (built once for every element).
            parent_run_id: the tracker run the elements' runs descend from.
            max_parallel: at most this many elements run at once.
            idempotency_key: submit at most once per key and target (see
                :meth:`run_component`).

        Returns:
            The sweep's handle.

        Raises:
            ComponentArgumentError: a swept argument the component does not take, or a
                value that does not parse (named with its argument); nothing is submitted.
            ValueError: the scheduler cannot run a sweep, elements of different shapes,
                an element of several roles or replicas.
        """
        with log_event("run_sweep", scheduler, workspace=str_or_none(workspace)) as ctx:
            with real_submit():
                dryrun_info = self.dryrun_sweep(
                    component,
                    component_args,
                    sweep,
                    scheduler,
                    cfg=cfg,
                    workspace=workspace,
                    parent_run_id=parent_run_id,
                    max_parallel=max_parallel,
                    idempotency_key=idempotency_key,
                )
                handle = self.schedule(dryrun_info)
            array = dryrun_info._app
            assert isinstance(array, AppArray)
            save_record(
                handle,
                component=component,
                component_args=component_args,
                sweep=sweep,
                scheduler=scheduler,
                cfg=cfg,
                workspace=workspace,
                parent_run_id=parent_run_id,
                max_parallel=max_parallel,
                array=array,
            )
            fill_event(ctx, dryrun_info, handle)
            return handle

    def dryrun_sweep(  # noqa: PLR0917 (the order of dryrun_component, plus the sweep)
        self,
        component: str,
        component_args: list[str] | dict[str, Any],
        sweep: Mapping[str, Sequence[object]],
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
        *,
        max_parallel: int | None = None,
        idempotency_key: str | None = None,
        indices: Sequence[int] | None = None,
    ) -> AppDryRunInfo[Any]:
        """The one request :meth:`run_sweep` would submit, without submitting it.

        Args:
            component: a registered name or ``path/to/file.py:function``.
            component_args: the component's other arguments, CLI-style or as a dict.
            sweep: the swept arguments and their values.
            scheduler: the scheduler's name.
            cfg: run options; ``.torchxconfig`` fills in what is not given.
            workspace: local code to ship with the sweep.
            parent_run_id: the tracker run the elements' runs would descend from.
            max_parallel: at most this many elements would run at once.
            idempotency_key: the key :meth:`schedule` will submit it with.
            indices: only these elements of the sweep (what :meth:`retry_failed` uses).

        Returns:
            The rendered request (``info.app`` is the :class:`~torchx.specs.AppArray`).
        """

        component_def = get_component(component)
        array = build_sweep(
            component_def.fn,
            component_args,
            sweep,
            defaults=self._component_defaults.get(component),
            max_parallel=max_parallel,
            indices=indices,
        )
        sweeps = [f"--sweep={name}={','.join(map(str, values))}" for name, values in sweep.items()]
        words = sweeps + component_args if isinstance(component_args, list) else component_args
        with requested_as(component, words):
            return self.dryrun(
                array,
                scheduler,
                cfg=cfg,
                workspace=workspace,
                parent_run_id=parent_run_id,
                idempotency_key=idempotency_key,
            )

    def retry_failed(
        self, app_handle: AppHandle, *, apps: AppArray | Sequence[AppDef] | None = None
    ) -> AppHandle:
        """Submits the failed elements of sweep ``app_handle`` again, with their values
        and indices, as one new array; returns its handle.

        A sweep made by :meth:`run_sweep` on this host is rebuilt from its record (the
        component called again with each failed element's values, from the directory it
        was first run from). A sweep submitted as apps (:func:`~torchx.specs.app_array`)
        needs them again: ``apps``, as first given.

        Raises:
            ValueError: no such app, not a sweep, no failed element, no record of how it
                was made (pass ``apps``).
        """
        failed = failed_elements(app_handle, self.status(app_handle, progress=False))
        if apps is not None:
            array = retried_apps(app_handle, apps, failed)
            with real_submit():
                return self.schedule(
                    self.dryrun(array, parse_app_handle(app_handle).scheduler_backend)
                )
        record = record_for_retry(app_handle)
        data = record.data
        with real_submit():
            array = record.rebuilt(failed, self._component_defaults.get(data["component"]))
            info = self.dryrun(
                array,
                data["scheduler"],
                cfg=data["cfg"],
                workspace=record.workspace(),
                parent_run_id=data["parent_run_id"],
            )
            handle = self.schedule(info)
        record.save_retry(handle, array)
        return handle


def element_position(array: ArrayStatus, index: int) -> int:
    """Where element ``index`` of a sweep is in its submission (the scheduler's replica)."""
    position = array.position_of(index)
    if position is None:
        indices = ", ".join(str(e.index) for e in array.elements)
        raise ValueError(f"this sweep has no element {index}; its elements: {indices}")
    return position
