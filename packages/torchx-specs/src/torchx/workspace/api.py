"""Workspaces: ship local code changes with a job without rebuilding its image by hand.

A scheduler that supports workspaces mixes in :class:`WorkspaceMixin`. Before submitting,
the runner calls :meth:`WorkspaceMixin.build_workspaces`, which builds every role's
``Role.workspace`` (a :class:`~torchx.specs.Workspace`) into something the scheduler can
run, typically a patched image whose name replaces ``role.image``.
"""

from __future__ import annotations

import abc
import tempfile
import warnings
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from torchx.specs import AppDef, CfgVal, Role, Workspace, runopts
from torchx.util.log import get_logger
from torchx.util.startup.lazy_dataclass import dataclass
from torchx.workspace._files import (
    DEFAULT_WORKSPACE_MAX_MB,
    ENV_WORKSPACE_MAX_MB,
    TORCHX_IGNORE,
    LocalFileSystem,
    WorkspaceProgress,
    WorkspaceTooLargeError,
    walk_workspace,
)

__all__ = [
    "DEFAULT_WORKSPACE_MAX_MB",
    "ENV_WORKSPACE_MAX_MB",
    "TORCHX_IGNORE",
    "LocalFileSystem",
    "MultiWorkspaceMixin",
    "PkgInfo",
    "Workspace",
    "WorkspaceBuilder",
    "WorkspaceMixin",
    "WorkspaceProgress",
    "WorkspaceTooLargeError",
    "pin_workspace_images",
    "walk_workspace",
]

logger = get_logger(__name__)


T = TypeVar("T")
PackageType = TypeVar("PackageType")
WorkspaceConfigType = TypeVar("WorkspaceConfigType")


@dataclass
class PkgInfo(Generic[PackageType]):
    """Deprecated: the result of a :class:`WorkspaceBuilder` build."""

    img: str
    lazy_overrides: dict[str, Any]
    metadata: PackageType

    def __post_init__(self) -> None:
        warnings.warn(
            "PkgInfo is deprecated and will be removed; use WorkspaceMixin instead",
            FutureWarning,
            stacklevel=3,
        )


@dataclass
class WorkspaceBuilder(Generic[PackageType, WorkspaceConfigType]):
    """Deprecated: builds a workspace into a package; use :class:`WorkspaceMixin` instead."""

    cfg: WorkspaceConfigType

    def __post_init__(self) -> None:
        warnings.warn(
            "WorkspaceBuilder is deprecated and will be removed; use WorkspaceMixin instead",
            FutureWarning,
            stacklevel=3,
        )

    def build_workspace(self, sync: bool = True) -> PkgInfo[PackageType]:
        """Builds the workspace; subclasses must override this."""
        raise NotImplementedError(
            f"{type(self).__name__} must override build_workspace(); WorkspaceBuilder is"
            " deprecated, implement WorkspaceMixin instead"
        )


class WorkspaceMixin(abc.ABC, Generic[T]):
    """Adds workspace builds to a scheduler.

    Implement :meth:`caching_build_workspace_and_update_role` (or, the older hook,
    :meth:`build_workspace_and_update_role`); ``T`` is the type of the image push plan
    returned by :meth:`dryrun_push_images`.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)

    def workspace_opts(self) -> runopts:
        """Run options of the workspace build (merged into the scheduler's run options)."""
        return runopts()

    def build_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """Builds the workspace of every role that has one, updating the roles in place.

        Roles with equal workspaces and images share one build.
        """
        build_cache: dict[object, object] = {}
        for role in roles:
            if not role.workspace:
                continue
            old_image = role.image
            self.caching_build_workspace_and_update_role(role, cfg, build_cache)
            if role.image != old_image:
                logger.info(self._builder_of(cfg).built_message(role, old_image))

    def _builder_of(self, cfg: Mapping[str, CfgVal]) -> WorkspaceMixin[Any]:
        """The object that builds for ``cfg``: this one (a :class:`MultiWorkspaceMixin`
        answers the builder its ``workspace_type`` picks)."""
        return self

    def built_message(self, role: Role, old_image: str) -> str:
        """The log line saying what building ``role``'s workspace gave (overridable: a
        directory workspace says where it copied, not which image it replaced)."""
        return (
            f"Built workspace {role.workspace} of role `{role.name}`:"
            f" image {old_image} -> {role.image}"
        )

    def plan_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """What :meth:`build_workspaces` would do, without doing it (a dry run).

        Each role with a workspace gets the image a build would give it where that is
        known in advance, else a placeholder naming the folder and the base image
        (:meth:`planned_image`). Nothing is built, copied or contacted.
        """
        for role in roles:
            if role.workspace:
                planned = self.planned_image(role, cfg)
                if planned != role.image:
                    logger.info(
                        "dry run: workspace %s of role `%s` is not built (a real run builds"
                        " it): image %s -> %s",
                        role.workspace,
                        role.name,
                        role.image,
                        planned,
                    )
                role.image = planned

    def planned_image(self, role: Role, cfg: Mapping[str, CfgVal]) -> str:
        """The image ``role`` would run after its workspace is built (see plan_workspaces)."""
        return f"<{role.image} + workspace {role.workspace}>"

    def caching_build_workspace_and_update_role(
        self, role: Role, cfg: Mapping[str, CfgVal], build_cache: dict[object, object]
    ) -> None:
        """Builds ``role.workspace`` and points the role at the result.

        ``build_cache`` lives for one :meth:`build_workspaces` call. The default reuses the
        image built for an earlier role with the same workspace and image, and otherwise
        calls :meth:`build_workspace_and_update_role` on the project directory (several
        projects are first merged into a temporary directory).
        """
        workspace = role.workspace
        if not workspace:
            return
        key = ("image", workspace, role.image)
        cached = build_cache.get(key)
        if isinstance(cached, str):
            role.image = cached
            return
        self._build_from_workspace(role, workspace, cfg)
        build_cache[key] = role.image

    def _build_from_workspace(
        self, role: Role, workspace: Workspace, cfg: Mapping[str, CfgVal]
    ) -> None:
        if workspace.is_unmapped_single_project():
            self.build_workspace_and_update_role(role, next(iter(workspace.projects)), cfg)
            return

        with tempfile.TemporaryDirectory(suffix="torchx_workspace_") as tmpdir:
            workspace.merge_into(tmpdir)
            self.build_workspace_and_update_role(role, tmpdir, cfg)

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Builds the directory ``workspace`` and updates ``role`` (usually ``role.image``).

        Older hook kept for existing implementations; new code overrides
        :meth:`caching_build_workspace_and_update_role`.
        """
        raise NotImplementedError(
            f"{type(self).__name__} cannot build workspaces: it overrides neither"
            " caching_build_workspace_and_update_role() nor build_workspace_and_update_role()"
        )

    def build_workspace_and_update_role2(
        self, role: Role, workspace: Workspace | str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Compatibility entry point of older runners: builds ``workspace`` for ``role``."""
        if isinstance(workspace, str):
            workspace = Workspace.from_str(workspace)
        if workspace:
            self._build_from_workspace(role, workspace, cfg)

    def dryrun_push_images(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> T:
        """Plans the image pushes that :meth:`push_images` will do for ``app``."""
        raise NotImplementedError(
            f"{type(self).__name__} does not push images (dryrun_push_images is not overridden)"
        )

    def push_images(self, images_to_push: T) -> None:
        """Pushes the images planned by :meth:`dryrun_push_images`."""
        raise NotImplementedError(
            f"{type(self).__name__} does not push images (push_images is not overridden)"
        )


def _pushes(builder: WorkspaceMixin[Any]) -> bool:
    """Whether ``builder`` has a push step (overrides :meth:`WorkspaceMixin.dryrun_push_images`);
    a directory copy does not: its build already put the files where the job reads them."""
    return type(builder).dryrun_push_images is not WorkspaceMixin.dryrun_push_images


class MultiWorkspaceMixin(WorkspaceMixin[tuple[str, Any]]):
    """A scheduler with several ways to build a workspace; the run option
    ``workspace_type`` picks one.

    Subclasses return ``{name: builder}`` from :meth:`workspace_builders` (the same
    instances on every call: the push step finds its builder again by name); the first is
    the default, so a scheduler that had one builder behaves as before until a user asks
    for another. Every workspace call goes to the builder picked, and the run options are
    the selector plus the union of the builders' options.
    """

    WORKSPACE_TYPE_OPT: str = "workspace_type"
    """The run option naming the builder."""

    @abc.abstractmethod
    def workspace_builders(self) -> Mapping[str, WorkspaceMixin[Any]]:
        """``{name: builder}``, the default first; build it once (in ``__init__``)."""

    def workspace_opts(self) -> runopts:
        """``workspace_type`` and every builder's options (a later builder's declaration
        of a shared name wins: builders sharing a name must mean one thing by it)."""
        builders = self.workspace_builders()
        if not builders:
            raise ValueError(f"{type(self).__name__}.workspace_builders() offers no builder")
        names = list(builders)
        opts = runopts()
        opts.add(
            self.WORKSPACE_TYPE_OPT,
            type_=str,
            default=names[0],
            help=f"how the workspace is built: {' or '.join(names)} (default {names[0]})",
        )
        for builder in builders.values():
            opts.update(builder.workspace_opts())
        return opts

    def workspace_builder(self, cfg: Mapping[str, CfgVal]) -> tuple[str, WorkspaceMixin[Any]]:
        """``(name, builder)`` that ``cfg["workspace_type"]`` names (the default when unset).

        Raises:
            ValueError: no builder of that name; the message lists those offered.
        """
        builders = self.workspace_builders()
        name = cfg.get(self.WORKSPACE_TYPE_OPT)
        if name is None:
            name = next(iter(builders))
        if not isinstance(name, str) or name not in builders:
            raise ValueError(
                f"{self.WORKSPACE_TYPE_OPT}={name!r} is not a workspace builder of this"
                f" scheduler; use one of {', '.join(builders)}"
            )
        return name, builders[name]

    def _builder_of(self, cfg: Mapping[str, CfgVal]) -> WorkspaceMixin[Any]:
        return self.workspace_builder(cfg)[1]

    def caching_build_workspace_and_update_role(
        self, role: Role, cfg: Mapping[str, CfgVal], build_cache: dict[object, object]
    ) -> None:
        """Builds ``role``'s workspace with the builder ``cfg`` picks."""
        self._builder_of(cfg).caching_build_workspace_and_update_role(role, cfg, build_cache)

    def planned_image(self, role: Role, cfg: Mapping[str, CfgVal]) -> str:
        return self._builder_of(cfg).planned_image(role, cfg)

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """The older hook, answered by the builder ``cfg`` picks (callers of a scheduler
        that had one builder keep working)."""
        self._builder_of(cfg).build_workspace_and_update_role(role, workspace, cfg)

    def dryrun_push_images(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> tuple[str, Any]:
        """``(builder name, its push plan)``; the plan is ``None`` for a builder without a
        push step, and :meth:`push_images` then pushes nothing."""
        name, builder = self.workspace_builder(cfg)
        return name, builder.dryrun_push_images(app, cfg) if _pushes(builder) else None

    def push_images(self, images_to_push: tuple[str, Any]) -> None:
        """Pushes the plan of :meth:`dryrun_push_images` with the builder that made it."""
        name, images = images_to_push
        if images is not None:
            self.workspace_builders()[name].push_images(images)


def pin_workspace_images(app: AppDef, images: Mapping[tuple[str, Workspace], str]) -> None:
    """Points the roles of ``app`` at images built before, so submitting it builds nothing.

    ``images`` is what :meth:`torchx.runner.Runner.build_workspace` returned:
    ``{(base image, workspace): built image}``. A role whose own ``(image, workspace)``
    pair is there gets the built image and loses its workspace (nothing left to build);
    a role with no workspace, or a pair nobody built (the same workspace on another base
    image is another build), is left as it is. Changes ``app`` in place.
    """
    for role in app.roles:
        if not role.workspace:
            continue
        built = images.get((role.image, role.workspace))
        if built is not None:
            role.image = built
            role.workspace = None
