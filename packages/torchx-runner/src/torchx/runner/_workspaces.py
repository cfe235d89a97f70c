"""Workspaces around a dry run: built into images or job directories once for many
submissions, planned by a dry run (nothing built, the roles show the image a build would
give) and built at submission, when the request was not edited in between."""

from __future__ import annotations

from torchx.runner._requests import Unbuilt, changed_beyond_image, copy_app, rendered_request
from torchx.schedulers.api import as_workspace_scheduler
from torchx.schedulers.ids import keyed_ids
from torchx.specs.api import AppDef, AppDryRunInfo, CfgVal, Role, Workspace
from torchx.util.log import get_logger
from torchx.util.startup.lazy_dataclass import deep_copy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from torchx.schedulers.api import Scheduler

__all__ = ["build_planned", "built_images", "prepare_workspaces"]

logger = get_logger(__name__)


def built_images(
    sched: Scheduler[Any],
    app_or_role: AppDef | Role,
    scheduler: str,
    cfg: Mapping[str, CfgVal] | None,
) -> dict[tuple[str, Workspace], str] | str | None:
    """What :meth:`torchx.runner.Runner.build_workspace` returns: each ``(image,
    workspace)`` pair of ``app_or_role`` built into an image by ``sched``."""
    # torchx.schedulers.api loads typing: not on `torchx run --dryrun`'s path (bench_cli)

    written = app_or_role.roles if isinstance(app_or_role, AppDef) else [app_or_role]
    memo: dict[int, Any] = {id(role.overrides): role.overrides for role in written}
    roles: list[Role] = deep_copy(list(written), memo)
    builder = as_workspace_scheduler(sched)
    if builder is None:
        return None if isinstance(app_or_role, Role) else {}
    builder.build_workspaces(roles, sched.run_opts().resolve(cfg or {}))
    built: dict[tuple[str, Workspace], str] = {}
    unpinnable: set[tuple[str, Workspace]] = set()
    for before, after in zip(written, roles, strict=True):
        if not before.workspace:
            continue
        pair = (before.image, before.workspace)
        if changed_beyond_image(before, after):
            logger.warning(
                "role `%s` is rebuilt at each submission: building its workspace on"
                " %s changed more than its image, which pinning cannot carry",
                before.name,
                scheduler,
            )
            unpinnable.add(pair)
        else:
            built[pair] = after.image
    for pair in unpinnable:
        built.pop(pair, None)
    if isinstance(app_or_role, Role):
        ws = app_or_role.workspace
        return built.get((app_or_role.image, ws)) if ws else None
    return built


def prepare_workspaces(
    sched: Scheduler[Any],
    app: AppDef,
    workspace: Workspace | str | None,
    cfg: Mapping[str, CfgVal],
    build: bool,
) -> AppDef | None:
    """Builds (or, when not ``build``, plans) every role's workspace when the
    scheduler supports workspaces.

    A ``workspace`` argument replaces ``roles[0].workspace`` (the pre-per-role API).
    Schedulers without workspace support run the roles as they are. Returns, when the
    builds were only planned, a copy of ``app`` as it was before them (what
    :meth:`schedule` builds), else ``None``.
    """
    # torchx.schedulers.api loads typing: not on `torchx run --dryrun`'s path (bench_cli)

    builder = as_workspace_scheduler(sched)
    if builder is None:
        if workspace:
            logger.debug(
                "scheduler %s does not build workspaces; ignoring workspace %s",
                sched.backend,
                workspace,
            )
        return None
    if workspace:
        ws = Workspace.from_str(workspace) if isinstance(workspace, str) else workspace
        if app.roles[0].workspace:
            logger.info(
                "workspace argument %s replaces the workspace of role %s",
                ws,
                app.roles[0].name,
            )
        app.roles[0].workspace = ws
    if build:
        builder.build_workspaces(app.roles, cfg)
        return None
    if not any(role.workspace for role in app.roles):
        return None
    before = copy_app(app)
    builder.plan_workspaces(app.roles, cfg)
    return before


def build_planned(sched: Scheduler[Any], info: AppDryRunInfo[Any]) -> AppDryRunInfo[Any]:
    """``info``, or, when its dry run left workspaces unbuilt, the request rendered
    again after building them."""
    # torchx.schedulers.api loads typing: not on `torchx run --dryrun`'s path (bench_cli)

    unbuilt = info.unbuilt
    if not isinstance(unbuilt, Unbuilt):
        return info
    if rendered_request(info) != unbuilt.rendered:
        raise ValueError(
            "this request was edited after a dry run that left its workspace unbuilt;"
            " render it with runner.dryrun(..., build_workspaces=True) before editing it"
        )
    builder = as_workspace_scheduler(sched)
    assert builder is not None  # only a workspace scheduler leaves workspaces unbuilt
    app = copy_app(unbuilt.app)
    builder.build_workspaces(app.roles, info._cfg)
    sched._validate(app, sched.backend, info._cfg)
    key = info.idempotency_key
    with keyed_ids(key):
        built = sched.submit_dryrun(app, info._cfg)
    built._scheduler = info._scheduler
    built.idempotency_key = key
    return built
