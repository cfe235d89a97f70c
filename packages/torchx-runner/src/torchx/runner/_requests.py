"""What the runner does to an app and its request around a scheduler: copies it before
editing, fills in the macros known once the app exists, keeps the request as submitted
(to tell later whether it was edited), and words where it went, for messages and events."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from torchx.runner._trackers import get_configured_trackers, warn_missing_trackers
from torchx.runner.events import log_event, may_listen
from torchx.schedulers.ids import ENV_REQUEST, ENV_REQUEST_HASH, keyed_ids
from torchx.specs.api import (
    MISSING,
    AppDef,
    AppDryRunInfo,
    AppHandle,
    CfgVal,
    Role,
    macros,
    parse_app_handle,
)
from torchx.specs.sweep import AppArray as _AppArray
from torchx.tracker.api import tracker_config_env_var_name
from torchx.util.session import get_session_id_or_create_new
from torchx.util.startup.lazy_dataclass import deep_copy
from torchx.util.strings import check_env_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.schedulers.api import Scheduler
    from torchx.specs.api import Role


# Names of the environment variables the runner reads and injects (see torchx.settings).
ENV_TRACKERS = "TORCHX_TRACKERS"
ENV_PARENT_RUN_ID = "TORCHX_PARENT_RUN_ID"
ENV_JOB_ID = "TORCHX_JOB_ID"
ENV_SESSION_ID = "TORCHX_INTERNAL_SESSION_ID"
ENV_PREFIX = "torchx_"


ENV_RUN_ID = "TORCHX_RUN_ID"


def scheduler_params_from_env() -> dict[str, str]:
    """Every ``TORCHX_<X>`` env var as scheduler-factory kwarg ``<x>`` (upstream behaviour)."""
    params: dict[str, str] = {}
    for key, value in os.environ.items():
        lower = key.lower()
        if lower.startswith(ENV_PREFIX) and len(lower) > len(ENV_PREFIX):
            params[lower[len(ENV_PREFIX) :]] = value
    return params


def check_no_nul(role: Role) -> None:
    """No process can take a NUL byte in its argv or env: say so before anything starts."""
    values = [role.entrypoint, *role.args, *role.env.keys(), *role.env.values()]
    for value in values:
        if "\0" in value:
            raise ValueError(
                f"role {role.name!r} has a NUL byte in {value!r}: program arguments, env names"
                " and values cannot hold one; remove it"
            )


class Unbuilt:
    """What a dry run that left workspaces unbuilt keeps for :meth:`Runner.schedule`: the
    app before planning, and the request as rendered (to notice edits)."""

    def __init__(self, app: AppDef, rendered: str) -> None:
        self.app = app
        self.rendered = rendered


def copy_app(app: AppDef) -> AppDef:
    """A deep copy of ``app`` whose roles share the original ``overrides`` dicts.

    Overrides hold callables/awaitables that may not be copyable, and resolving one must
    happen at most once, so the copy keeps the very same dict.
    """

    memo: dict[int, Any] = {}
    for role in app.roles:
        memo[id(role.overrides)] = role.overrides
    return deep_copy(app, memo)


def changed_beyond_image(before: Role, after: Role) -> bool:
    """Whether a workspace build wrote to ``after`` more than its ``image`` (compared
    field by field with ``==``: a field without value equality only costs a rebuild)."""
    import dataclasses

    return any(
        getattr(before, f.name) != getattr(after, f.name)
        for f in dataclasses.fields(Role)
        if f.name != "image"
    )


def set_run_id(app: AppDef, run_id: str) -> None:
    """``$TORCHX_RUN_ID`` of every role; each element of a sweep is a run of its own,
    ``RUN_ID[INDEX]`` (its tracker run)."""

    for role in app.roles:
        role.env[ENV_RUN_ID] = run_id
    if isinstance(app, _AppArray):
        for element in app.elements:
            element.env[ENV_RUN_ID] = f"{run_id}[{element.index}]"


def keep_request(app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal] | None) -> None:
    """Keeps, in the env of every role of ``app`` (a copy) submitted with an idempotency
    key, what it was made from: a later run of the key that asks for another is told."""
    from torchx.runner._idempotency import request_env  # with a key only (bench_cli)

    kept = request_env(app, scheduler, cfg)
    for role in app.roles:
        role.env.update(kept)


def kept_request(info: AppDryRunInfo[Any]) -> dict[str, str]:
    """What :func:`keep_request` kept in ``info``'s app (empty: nothing)."""

    env = info._app.roles[0].env if info._app is not None and info._app.roles else {}
    return {k: env[k] for k in (ENV_REQUEST_HASH, ENV_REQUEST) if k in env}


def runcfg_json(cfg: Mapping[str, CfgVal] | None) -> str | None:
    """The run config as JSON for the ``schedule`` event, when anyone may read the event."""
    if not cfg or not may_listen():
        return None

    return json.dumps(dict(cfg), default=str)


def with_app_id(roles: list[Role], app_id: str) -> list[Role]:
    """``roles`` with the ``${app_id}`` macro of their args and env filled in (it is known
    once the app exists, e.g. in ``TORCHX_JOB_ID``); per-replica macros stay as they are."""
    for role in roles:
        role.args = [a.replace(macros.app_id, app_id) for a in role.args]
        role.env = {k: v.replace(macros.app_id, app_id) for k, v in role.env.items()}
    return roles


def target_of(scheduler: str, cfg: Mapping[str, CfgVal]) -> str:
    """Where an app goes, for messages: the scheduler and the run options that choose it."""
    where = [f"{k}={cfg[k]}" for k in WHERE_OPTIONS if cfg.get(k) not in (None, "")]
    return f"{scheduler} ({', '.join(where)})" if where else scheduler


WHERE_OPTIONS = (
    "namespace",
    "queue",
    "partition",
    "ssh",
    "cluster_name",
    "dashboard_address",
    "context",
)
"""Run options that choose where an app goes (the target of an idempotency key)."""


def str_or_none(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def str_metadata(metadata: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): v if isinstance(v, str) else repr(v) for k, v in metadata.items()}


def fill_event(ctx: log_event, dryrun_info: AppDryRunInfo[Any], handle: AppHandle) -> None:
    event = ctx._torchx_event
    event.scheduler = dryrun_info._scheduler or event.scheduler
    event.app_id = parse_app_handle(handle).app_id
    app = dryrun_info._app
    if app is not None and app.roles:
        event.app_image = app.roles[0].image
        event.app_metadata = str_metadata(app.metadata)


def rendered_request(info: AppDryRunInfo[Any]) -> str:
    """The request as its scheduler's formatter renders it, to see later whether it was
    edited: any value the formatter returns (a formatter of a test or a plugin may not
    return text, where ``repr`` would raise), or the request's own ``repr``."""
    try:
        return str(info._fmt(info.request))
    except Exception:
        return repr(info.request)


def with_key(sched: Scheduler[Any], info: AppDryRunInfo[Any], key: str) -> AppDryRunInfo[Any]:
    """``info`` rendered again for idempotency ``key`` (its name, ``$TORCHX_RUN_ID``)."""

    from torchx.runner._idempotency import check_key  # with a key only (bench_cli)

    check_key(key)
    if info._app is None or info.unbuilt is not None:
        raise ValueError(
            "this request cannot take an idempotency key now; give it to"
            " runner.dryrun(..., idempotency_key=KEY) instead"
        )
    app = copy_app(info._app)
    set_run_id(app, key)
    keep_request(app, str(info._scheduler), info._cfg)
    with keyed_ids(key):
        keyed: AppDryRunInfo[Any] = sched.submit_dryrun(app, info._cfg)
    keyed._scheduler = info._scheduler
    keyed.idempotency_key = key
    return keyed


def inject_env(app: AppDef, handle: str, parent_run_id: str | None, key: str | None = None) -> None:
    """Adds the TorchX identity/tracking env vars to every role of ``app`` (a copy), whose
    handle is ``handle`` (its app id still the macro).

    ``TORCHX_RUN_ID`` is the idempotency key when there is one, else the app handle:
    the same in every attempt of the app, the name of its tracker run."""

    injected: dict[str, str] = {
        ENV_JOB_ID: handle,
        ENV_RUN_ID: key if key is not None else handle,
        ENV_SESSION_ID: get_session_id_or_create_new(),
    }
    if parent_run_id:
        injected[ENV_PARENT_RUN_ID] = parent_run_id
    trackers = get_configured_trackers()
    if trackers:
        warn_missing_trackers(list(trackers))
        injected[ENV_TRACKERS] = ",".join(trackers)
        for name, config in trackers.items():
            if config:
                injected[tracker_config_env_var_name(name)] = config
    for role in app.roles:
        role.env.update(injected)
    set_run_id(app, injected[ENV_RUN_ID])


MAX_REPLICAS = 100_000
"""Most replicas a role may ask for: beyond, the number is a typo, not a job."""


def check_roles(app: AppDef) -> None:
    """Refuses a role that cannot run anywhere: no entrypoint, a refused env name, a NUL
    byte, or a replica count that is not a job's."""
    for role in app.roles:
        if not role.entrypoint or role.entrypoint == MISSING:
            raise ValueError(
                f"role {role.name!r} of app {app.name!r} has no entrypoint; set"
                " Role.entrypoint to the program to run (e.g. entrypoint='python')"
            )
        check_env_names(role.name, role.env)
        check_no_nul(role)
        if role.num_replicas > MAX_REPLICAS:
            raise ValueError(
                f"role {role.name!r} of app {app.name!r} has num_replicas="
                f"{role.num_replicas}; more than {MAX_REPLICAS:,} replicas per role is"
                " refused (a typo?): split the work into several apps"
            )
        if role.num_replicas <= 0:
            raise ValueError(
                f"role {role.name!r} of app {app.name!r} has num_replicas="
                f"{role.num_replicas}; it must be at least 1"
            )
