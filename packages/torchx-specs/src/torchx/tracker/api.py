"""Experiment tracking: where a job records its metadata, artifacts and lineage.

A tracker backend implements :class:`TrackerBase`. Backends are registered in the
``torchx.tracker`` entry-point group as ``factory(config: str | None) -> TrackerBase``;
the launcher names them in ``TORCHX_TRACKERS`` (with per-tracker config in
``TORCHX_TRACKER_<NAME>_CONFIG``) and the job reaches them through :meth:`AppRun.run_from_env`.
"""

from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping

from torchx.settings import (
    ENV_TORCHX_JOB_ID,
    ENV_TORCHX_PARENT_RUN_ID,
    ENV_TORCHX_RUN_ID,
    ENV_TORCHX_TRACKERS,
)
from torchx.util.log import get_logger
from torchx.util.readiness import NO_CHECKS, ReadinessCheck, not_ready
from torchx.util.startup.lazy_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ENV_TORCHX_JOB_ID",
    "ENV_TORCHX_PARENT_RUN_ID",
    "ENV_TORCHX_TRACKERS",
    "AppRun",
    "AppRunTrackableSource",
    "Lineage",
    "RunLineage",
    "TrackerArtifact",
    "TrackerBase",
    "TrackerLoadError",
    "TrackerSource",
    "build_tracker",
    "build_trackers",
    "check_tracker",
    "installed_trackers",
    "tracker_config_env_var_name",
    "trackers_from_environ",
]

logger = get_logger(__name__)

TRACKER_ENTRYPOINT_GROUP = "torchx.tracker"
UNDEFINED_JOB_ID = "<UNDEFINED>"

JOB_ID_METADATA = "torchx.job_id"
"""The metadata key of a run named by its idempotency key (``$TORCHX_RUN_ID``): the handle
of the job it runs in, so that a tracker told about the job's end (by its handle) finds
the run."""


@dataclass
class TrackerSource:
    """A run that another run was derived from, optionally through one of its artifacts."""

    source_run_id: str
    artifact_name: str | None


@dataclass
class TrackerArtifact:
    """A named output of a run (a path or URI plus free-form metadata)."""

    name: str
    path: str
    metadata: Mapping[str, object] | None


@dataclass
class AppRunTrackableSource:
    """A source of an :class:`AppRun`, seen through the same tracker backends."""

    parent: AppRun
    artifact_name: str | None


class Lineage:
    """The ancestry of a run (backends may return a richer subclass)."""


@dataclass
class RunLineage(Lineage):
    """A run's direct sources (runs it derives from) and descendants (runs derived from
    it): what the built-in trackers return from :meth:`TrackerBase.lineage`."""

    run_id: str
    sources: list[TrackerSource]
    descendants: list[str]


class TrackerBase(ABC):
    """A tracker backend: stores metadata, artifacts and sources per run id."""

    @abstractmethod
    def add_artifact(
        self,
        run_id: str,
        name: str,
        path: str,
        metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Records artifact ``name`` of run ``run_id``.

        Args:
            run_id: the run (its app handle).
            name: the artifact's name within the run (a later call replaces it).
            path: where the artifact is (a path or URL the backend can record).
            metadata: extra key/values kept with it.
        """

    @abstractmethod
    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        """The artifacts of a run, by name.

        Args:
            run_id: the run (its app handle).

        Returns:
            ``{name: TrackerArtifact}`` (empty for a run with none).
        """

    @abstractmethod
    def add_metadata(self, run_id: str, **kwargs: object) -> None:
        """Records metadata key/values of a run (a later value of a key replaces it).

        Args:
            run_id: the run (its app handle).
            kwargs: the key/values.
        """

    @abstractmethod
    def metadata(self, run_id: str) -> Mapping[str, object]:
        """All metadata recorded for a run.

        Args:
            run_id: the run (its app handle).

        Returns:
            ``{key: value}`` (empty for a run with none).
        """

    @abstractmethod
    def add_source(self, run_id: str, source_id: str, artifact_name: str | None = None) -> None:
        """Records that ``run_id`` was derived from run ``source_id`` (or one artifact of it).

        Args:
            run_id: the derived run.
            source_id: the run it was derived from.
            artifact_name: the source's artifact it was derived from, if one.
        """

    @abstractmethod
    def sources(self, run_id: str, artifact_name: str | None = None) -> Iterable[TrackerSource]:
        """The sources of a run, optionally only those through ``artifact_name``.

        Args:
            run_id: the run.
            artifact_name: keep only the sources recorded through this artifact.

        Returns:
            The :class:`TrackerSource` entries, in the order they were added.
        """

    @abstractmethod
    def lineage(self, run_id: str) -> Lineage:
        """The ancestry of a run.

        Args:
            run_id: the run.

        Returns:
            Its :class:`Lineage`: parents and descendants.
        """

    @abstractmethod
    def run_ids(self, **kwargs: str) -> Iterable[str]:
        """Run ids known to the backend, filtered by backend-specific ``kwargs``.

        Args:
            kwargs: filters the backend understands (e.g. ``parent_run_id``).

        Returns:
            The run ids.
        """

    def app_finished(self, run_id: str, state: str) -> None:
        """Called by the launcher once the app of run ``run_id`` (its app handle) is in the
        final ``state`` (``SUCCEEDED``, ``FAILED``, ``CANCELLED``, ...). Backends that keep
        a run status (MLflow) end the run here; the default does nothing."""
        del run_id, state  # optional hook: backends without a run status ignore it


def tracker_config_env_var_name(entrypoint_key: str) -> str:
    """``TORCHX_TRACKER_<NAME>_CONFIG``: the env var holding the config of tracker ``name``.

    Args:
        entrypoint_key: the tracker's name (its entry point).

    Returns:
        The variable's name, the tracker's name upper-cased.
    """
    return f"TORCHX_TRACKER_{entrypoint_key.upper()}_CONFIG"


def _extract_tracker_name_and_config_from_environ() -> Mapping[str, str | None]:
    names = os.environ.get(ENV_TORCHX_TRACKERS)
    if not names:
        return {}
    return {
        name: os.environ.get(tracker_config_env_var_name(name)) or None
        for name in (n.strip() for n in names.split(","))
        if name
    }


def installed_trackers() -> dict[str, Callable[..., Any]]:
    """``{name: factory}`` of every tracker plugin (entry points and
    ``torchx_plugins.tracker``), nothing imported until a factory is called."""
    from torchx.plugins import PluginType, registry

    return registry().get(PluginType.TRACKER)


class TrackerLoadError(ValueError):
    """A configured tracker could not be created (unknown name, or its factory failed)."""


def build_tracker(name: str, config: str | None) -> TrackerBase:
    """Creates the tracker ``name`` (a tracker plugin: a ``torchx.tracker`` entry point or a
    ``torchx_plugins.tracker`` function; else a ``package.module:factory`` path) from its
    config; :class:`TrackerLoadError` says why not."""
    from torchx.util.modules import load_module

    registered = installed_trackers()
    factory = registered.get(name) or load_module(name)
    if factory is None or not callable(factory):
        raise TrackerLoadError(
            f"tracker `{name}` is neither a `{TRACKER_ENTRYPOINT_GROUP}` entry point nor a"
            " `torchx_plugins.tracker` plugin"
            f" (installed: {', '.join(sorted(registered)) or '<none>'}) nor a"
            " `package.module:factory` path"
        )
    try:
        return factory(config)  # type: ignore[no-any-return]
    except Exception as e:
        message = " ".join(str(e).split()) or type(e).__name__
        raise TrackerLoadError(f"tracker `{name}` cannot be created: {message}") from e


def check_tracker(name: str, config: str | None) -> list[ReadinessCheck]:
    """``torchx check`` for tracker ``name``: the ``check_ready(config)`` function of the
    module its entry point names, when it has one (creating the tracker would create its
    store, and a check must change nothing). Unknown trackers are NOT_READY."""
    import importlib

    registered = installed_trackers()
    factory = registered.get(name)
    entry_point = getattr(factory, "entry_point", None)
    if entry_point is not None:
        module_name = entry_point.module
    elif factory is not None:
        module_name = factory.__module__
    else:
        module_name = name.partition(":")[0]
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        installed = ", ".join(sorted(registered))
        return [
            not_ready(
                "tracker",
                f"tracker `{name}` cannot be loaded ({type(e).__name__}: {e})",
                f"install the distribution that provides it (installed: {installed or '<none>'};"
                " see `torchx plugins`)",
            )
        ]
    check = getattr(module, "check_ready", None)
    if not callable(check):
        return [ReadinessCheck("checks", NO_CHECKS, f"tracker `{name}` offers no checks")]
    return list(check(config))


def build_trackers(factory_and_config: Mapping[str, str | None]) -> Iterable[TrackerBase]:
    """Creates one backend per ``name -> config`` entry (see :func:`build_tracker`).

    A name that cannot be resolved, or whose factory fails, is reported and skipped so that
    one broken tracker never disables the others.
    """
    trackers: list[TrackerBase] = []
    for name, config in factory_and_config.items():
        try:
            trackers.append(build_tracker(name, config))
        except TrackerLoadError as e:
            logger.warning("%s; it is skipped", e)
    return trackers


def trackers_from_environ() -> Iterable[TrackerBase]:
    """The backends named by ``TORCHX_TRACKERS`` (``[]`` when it is unset)."""
    return build_trackers(_extract_tracker_name_and_config_from_environ())


@dataclass
class AppRun:
    """The tracked run of a job, fanned out to every configured backend."""

    id: str
    backends: Iterable[TrackerBase]

    @staticmethod
    @functools.lru_cache(maxsize=1)
    def run_from_env() -> AppRun:
        """The current job's run (a process-wide singleton) built from the environment.

        The run id is ``$TORCHX_RUN_ID`` (the same in every attempt of the app: a requeued
        or retried job continues its run), else ``$TORCHX_JOB_ID``; when
        ``$TORCHX_PARENT_RUN_ID`` is set it is recorded as the source of this run in every
        backend.
        """
        run = AppRun(
            id=os.environ.get(ENV_TORCHX_RUN_ID)
            or os.environ.get(ENV_TORCHX_JOB_ID, UNDEFINED_JOB_ID),
            backends=list(trackers_from_environ()),
        )
        parent = os.environ.get(ENV_TORCHX_PARENT_RUN_ID)
        if parent:
            run.add_source(parent, artifact_name=None)
        job = os.environ.get(ENV_TORCHX_JOB_ID)
        if job and job != run.id:  # a run named by an idempotency key: say which job is it
            run.add_metadata(**{JOB_ID_METADATA: job})
        return run

    def add_metadata(self, **kwargs: object) -> None:
        for backend in self.backends:
            backend.add_metadata(self.id, **kwargs)

    def add_artifact(
        self, name: str, path: str, metadata: Mapping[str, object] | None = None
    ) -> None:
        for backend in self.backends:
            backend.add_artifact(self.id, name, path, metadata)

    def job_id(self) -> str:
        return self.id

    def add_source(self, source_id: str, artifact_name: str | None = None) -> None:
        for backend in self.backends:
            backend.add_source(self.id, source_id, artifact_name)

    def sources(self) -> Iterable[AppRunTrackableSource]:
        """The sources of this run as recorded by the first backend."""
        backends = list(self.backends)
        if not backends:
            return []
        return [
            AppRunTrackableSource(AppRun(src.source_run_id, backends), src.artifact_name)
            for src in backends[0].sources(self.id)
        ]

    def children(self) -> Iterable[AppRun]:
        """Runs whose source is this run, as recorded by the first backend."""
        backends = list(self.backends)
        if not backends:
            return []
        return [AppRun(run_id, backends) for run_id in backends[0].run_ids(parent_run_id=self.id)]
