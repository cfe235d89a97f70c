"""``MLflowTracker``: TorchX runs, their metadata, artifacts and lineage in an MLflow store.

A TorchX run id (``$TORCHX_JOB_ID``, the job's app handle) is the MLflow *run name*; all
replicas of a job and any later process share the one run of that name. Everything TorchX
records is kept on the run itself, so MLflow's UI and ``MlflowClient`` see it too:

* metadata: run tags (values as strings);
* artifacts: the files under the artifact path ``<name>/``, plus the tags
  ``torchx.artifact_path.<name>`` (where it is stored) and
  ``torchx.artifact.metadata.<name>.<key>`` (upstream TorchX's layout);
* sources: ``torchx.source.<hash>`` tags holding ``[source run id, artifact name]``, a
  ``torchx.parent.<hash>`` tag for finding a run's children, and ``mlflow.parentRunId`` so
  that MLflow's UI nests a child under its parent run of the same experiment.

``mlflow`` is imported on first use, never when the tracker is merely configured.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import posixpath
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

from torchx.tracker.api import (
    JOB_ID_METADATA,
    RunLineage,
    TrackerArtifact,
    TrackerBase,
    TrackerSource,
)
from torchx.tracker.mlflow import _sdk as sdk
from torchx.tracker.mlflow._config import (
    default_experiment_name as _default_experiment_name,
)
from torchx.tracker.mlflow._config import default_tracking_uri, is_tracking_uri
from torchx.tracker.mlflow._errors import (
    MLflowTrackerError,
    MLflowUnreachableError,
    check_reachable,
    display_uri,
    mlflow_errors,
    prepare_local_store,
)
from torchx.tracker.mlflow._params import flatten_params
from torchx.tracker.mlflow._pending import keep, taken
from torchx.tracker.mlflow._runs import find_runs, get_or_create_run, iter_runs, quote
from torchx.util.log import get_logger
from torchx.util.startup.lazy_dataclass import dataclass
from torchx.util.support.retry import retry_call

TYPE_CHECKING = False
if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Experiment, Run

__all__ = ["TAG_ARTIFACT_MD_PREFIX", "MLflowLineage", "MLflowTracker"]

logger = get_logger(__name__)

TAG_ARTIFACT_MD_PREFIX = "torchx.artifact.metadata"
"""Tags ``<prefix>.<artifact name>.<key>`` hold an artifact's metadata."""

TAG_ARTIFACT_PATH_PREFIX = "torchx.artifact_path."
TAG_SOURCE_PREFIX = "torchx.source."
TAG_PARENT_PREFIX = "torchx.parent."
_TAG_MLFLOW_PARENT = "mlflow.parentRunId"
_INTERNAL_TAG_PREFIXES = (
    "mlflow.",
    f"{TAG_ARTIFACT_MD_PREFIX}.",
    TAG_ARTIFACT_PATH_PREFIX,
    TAG_SOURCE_PREFIX,
    TAG_PARENT_PREFIX,
)
_BATCH = 100  # MLflow's limit of params/tags per log_batch call
_ARTIFACT_NAME = re.compile(r"^[\w.\- :/]+$")
_DEFAULT_RUN_WAIT_S = 30.0


_MLFLOW_STATUS = {"SUCCEEDED": "FINISHED", "FAILED": "FAILED", "CANCELLED": "KILLED"}
"""MLflow run status for each final TorchX app state (UNKNOWN leaves the run as it is)."""


W = TypeVar("W", bound=Callable[..., None])


_KEPT_OPS: set[str] = set()
"""The writes that may be kept in the journal, hence the only ones replayed from it."""


def _journaled_if_unreachable(method: W) -> W:
    """Makes a write ride out an away server: retried within the budget, then kept in
    the journal (``_pending``) and written later, instead of failing the job."""
    _KEPT_OPS.add(method.__name__)

    @functools.wraps(method)
    def write(self: MLflowTracker, *args: Any, **kwargs: Any) -> None:
        self._write(method.__name__, method, list(args), kwargs)

    return write  # type: ignore[return-value]


def _unreachable(e: BaseException) -> bool:
    return isinstance(e, MLflowUnreachableError) or isinstance(
        getattr(e, "last", None), MLflowUnreachableError
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def _check_artifact_name(name: str) -> None:
    norm = posixpath.normpath(name) if name else ""
    if (
        not name
        or not _ARTIFACT_NAME.match(name)
        or norm != name
        or norm.startswith(("..", "/"))
        or norm == "."
    ):
        raise ValueError(
            f"artifact name {name!r} is not usable in MLflow; use letters, digits and"
            " `_ - . : /` as a relative path without `..` (e.g. `model/best`)"
        )


def _local_path(path: str) -> str | None:
    """The local file system path of an artifact, or ``None`` for a remote URI (recorded as is)."""
    if path.startswith("file:"):
        return urlsplit(path).path or None
    if is_tracking_uri(path) and not re.match(r"^[A-Za-z]:[\\/]", path):
        return None
    return os.path.abspath(os.path.expanduser(path))


@dataclass
class MLflowLineage(RunLineage):
    """A run's direct sources and descendants as MLflow records them (the MLflow
    tracker's name for :class:`torchx.tracker.api.RunLineage`)."""


class MLflowTracker(TrackerBase):
    """Tracker backed by MLflow (``tracking_uri``), recording into ``experiment_name``.

    Args:
        experiment_name: MLflow experiment (created when missing); default
            :func:`default_experiment_name`.
        tracking_uri: the MLflow store: a server (``http://host:5000``), a database
            (``sqlite:///path/mlflow.db``), ``databricks``...; default a SQLite file under
            ``$TORCHX_HOME/mlflow/``.
        artifact_location: where a newly created experiment stores artifacts (default:
            the server's choice; for a ``sqlite:///`` store an ``artifacts`` directory next
            to the database file).
        run_wait_s: how long a replica waits for the replica that is creating the job's run.
    """

    def __init__(
        self,
        experiment_name: str | None = None,
        tracking_uri: str | None = None,
        artifact_location: str | None = None,
        *,
        run_wait_s: float = _DEFAULT_RUN_WAIT_S,
    ) -> None:
        self.tracking_uri = tracking_uri or default_tracking_uri()
        self._experiment_name = experiment_name or _default_experiment_name()
        self._artifact_location = artifact_location
        self._run_wait_s = run_wait_s
        self._client: MlflowClient | None = None
        self._experiment: Experiment | None = None
        self._run_ids: dict[str, str] = {}  # TorchX run id -> MLflow run id
        self._activated: str | None = None

    def __repr__(self) -> str:
        return (
            f"<MLflowTracker: tracking_uri={display_uri(self.tracking_uri)},"
            f" experiment_name={self._experiment_name}>"
        )

    @staticmethod
    def default_experiment_name() -> str:
        """``default-experiment/<user>/<host fqdn>``."""
        return _default_experiment_name()

    # ------------------------------------------------------------------ connection

    def _errors(self, action: str) -> Any:
        return mlflow_errors(self.tracking_uri, action)

    @property
    def client(self) -> MlflowClient:
        """The ``MlflowClient`` of this tracker's store (connects on first use)."""
        if self._client is None:
            check_reachable(self.tracking_uri)
            prepare_local_store(self.tracking_uri)
            with self._errors("open the tracking store"):
                client_class = sdk.mlflow().MlflowClient

                self._client = client_class(tracking_uri=self.tracking_uri)
        return self._client

    def _default_artifact_location(self) -> str | None:
        if self._artifact_location:
            return self._artifact_location
        if self.tracking_uri.startswith("sqlite:///"):
            db = self.tracking_uri[len("sqlite:///") :]
            if db and db != ":memory:":
                return "file://" + os.path.join(os.path.dirname(os.path.abspath(db)), "artifacts")
        return None

    def _find_experiment(self, create: bool) -> Experiment | None:
        if self._experiment is not None:
            return self._experiment
        mlflow_error = sdk.mlflow_error()

        client = self.client
        name = self._experiment_name
        with self._errors(f"open experiment {name!r}"):
            experiment = client.get_experiment_by_name(name)
            if experiment is None and create:
                try:
                    client.create_experiment(
                        name, artifact_location=self._default_artifact_location()
                    )
                except mlflow_error as e:
                    if e.error_code != "RESOURCE_ALREADY_EXISTS":
                        raise
                experiment = client.get_experiment_by_name(name)
        if experiment is None:
            return None
        if experiment.lifecycle_stage == "deleted":
            raise MLflowTrackerError(
                f"MLflow experiment {name!r} at {display_uri(self.tracking_uri)} is deleted;"
                " restore it (`mlflow experiments restore`) or set another experiment_name"
            )
        self._experiment = experiment
        return experiment

    @property
    def experiment(self) -> Experiment:
        """The MLflow experiment runs are recorded in (created on first access)."""
        experiment = self._find_experiment(create=True)
        assert experiment is not None
        return experiment

    @property
    def experiment_id(self) -> str:
        return str(self.experiment.experiment_id)

    @property
    def experiment_name(self) -> str:
        return self._experiment_name

    @property
    def artifact_location(self) -> str:
        """Where the experiment stores artifacts (the configured location or MLflow's)."""
        return self._artifact_location or str(self.experiment.artifact_location)

    # ------------------------------------------------------------------ runs

    def _write_run(self, run_id: str) -> str:
        """MLflow id of the run named ``run_id``, created if missing (see ``_runs``)."""
        if not run_id:
            raise ValueError("run id must not be empty")
        cached = self._run_ids.get(run_id)
        if cached is not None:
            return cached

        experiment_id = self.experiment_id
        with self._errors(f"create run {run_id!r}"):
            mlflow_id = get_or_create_run(
                self.client, experiment_id, run_id, tags={}, wait_s=self._run_wait_s
            )
        self._run_ids[run_id] = mlflow_id
        return mlflow_id

    def _read_run(self, run_id: str) -> Run | None:
        """The run named ``run_id``, or ``None`` when it (or the experiment) does not exist."""

        experiment = self._find_experiment(create=False)
        if experiment is None:
            return None
        with self._errors(f"read run {run_id!r}"):
            cached = self._run_ids.get(run_id)
            if cached is not None:
                return self.client.get_run(cached)
            runs = find_runs(self.client, str(experiment.experiment_id), run_id)
        return runs[0] if runs else None

    def _run_of_job(self, handle: str) -> Run | None:
        """The run of a job that names its run by an idempotency key: the one tagged with
        the job's handle (``torchx.tracker.api.JOB_ID_METADATA``), the latest first."""

        experiment = self._find_experiment(create=False)
        if experiment is None:
            return None
        with self._errors(f"read the run of job {handle!r}"):
            runs = list(
                iter_runs(
                    self.client,
                    str(experiment.experiment_id),
                    f"tags.`{JOB_ID_METADATA}` = {quote(handle)}",
                )
            )
        return runs[-1] if runs else None

    def _set_tags(self, mlflow_id: str, tags: Mapping[str, object], action: str) -> None:
        entities = sdk.mlflow().entities

        items = [entities.RunTag(str(k), str(v)) for k, v in tags.items()]
        with self._errors(action):
            for start in range(0, len(items), _BATCH):
                self.client.log_batch(mlflow_id, tags=items[start : start + _BATCH])

    def get_run(self, run_name: str) -> Run:
        """The MLflow run of TorchX run ``run_name`` (created if missing).

        When no MLflow run is active in this process, it becomes the active run, so that
        ``mlflow.log_metric(...)`` in the job lands in it too; :meth:`close` ends it.
        """
        mlflow = sdk.mlflow()

        mlflow_id = self._write_run(run_name)
        with self._errors(f"start run {run_name!r}"):
            if mlflow.active_run() is None:
                mlflow.set_tracking_uri(self.tracking_uri)
                mlflow.start_run(run_id=mlflow_id)
                self._activated = mlflow_id
            return self.client.get_run(mlflow_id)

    def get_run_id(self, run_name: str) -> str:
        """The MLflow run id of TorchX run ``run_name`` (created if missing)."""
        return self._write_run(run_name)

    def close(self) -> None:
        """Marks the runs this tracker wrote to as FINISHED (and ends the run it activated)."""
        if self._client is None:
            return
        mlflow = sdk.mlflow()

        with self._errors("finish runs"):
            active = mlflow.active_run()
            if self._activated is not None and active and active.info.run_id == self._activated:
                mlflow.end_run()
            self._activated = None
            for mlflow_id in self._run_ids.values():
                self.client.set_terminated(mlflow_id, status="FINISHED")

    # ------------------------------------------------------------------ away server

    def _write(
        self, op: str, method: Callable[..., None], args: list[Any], kwargs: dict[str, Any]
    ) -> None:

        def once() -> None:
            check_reachable(self.tracking_uri, timeout=2.0)
            self._replay_kept()
            method(self, *args, **kwargs)

        try:
            retry_call(
                once,
                service=f"MLflow at {display_uri(self.tracking_uri)}",
                is_transient=_unreachable,
            )
        except Exception as e:
            if not _unreachable(e):
                raise
            self._keep(op, args, kwargs, e)

    def _keep(self, op: str, args: list[Any], kwargs: dict[str, Any], why: BaseException) -> None:
        path = keep(self.tracking_uri, op, args, kwargs)
        logger.warning(
            "%s; kept `%s` of run %r in %s, written by the next write to this server",
            str(why).splitlines()[0][:300],
            op,
            args[0] if args else "",
            path,
        )

    def _replay_kept(self) -> None:
        """Writes what was kept while the server was away (the server answers now)."""

        away: BaseException | None = None
        for entry in taken(self.tracking_uri):
            op, args, kwargs = entry["op"], entry["args"], entry["kwargs"]
            if op not in _KEPT_OPS:  # only the writes a journal may hold are replayed
                logger.warning("not replaying %r from the MLflow journal: not a kept write", op)
                continue
            if away is not None:
                keep(self.tracking_uri, op, args, kwargs)
                continue
            try:
                getattr(type(self), op).__wrapped__(self, *args, **kwargs)
            except Exception as e:
                if _unreachable(e):
                    away = e
                    keep(self.tracking_uri, op, args, kwargs)
                else:
                    logger.warning(
                        "not recorded in MLflow: `%s` of run %r kept while the server was"
                        " away (%s)",
                        op,
                        args[0] if args else "",
                        str(e).splitlines()[0][:300] if str(e) else type(e).__name__,
                    )
        if away is not None:
            raise away

    # ------------------------------------------------------------------ TrackerBase

    @_journaled_if_unreachable
    def app_finished(self, run_id: str, state: str) -> None:
        """Ends the run of app ``run_id`` with the MLflow status matching its final
        ``state`` (and tags it ``torchx.app_state``); a run that was never created is
        left alone."""

        entities = sdk.mlflow().entities

        status = _MLFLOW_STATUS.get(state)
        if status is None:
            return
        run = self._read_run(run_id) or self._run_of_job(run_id)
        if run is None:
            return
        mlflow_id = run.info.run_id
        with self._errors(f"end run {run_id!r}"):
            self.client.log_batch(mlflow_id, tags=[entities.RunTag("torchx.app_state", state)])
            self.client.set_terminated(mlflow_id, status=status, end_time=int(time.time() * 1000))

    @_journaled_if_unreachable
    def add_artifact(
        self,
        run_id: str,
        name: str,
        path: str,
        metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Uploads file or directory ``path`` under artifact path ``name/`` of the run.

        A remote URI (``s3://...``) is recorded as the artifact's location without upload.
        A local path must exist; nothing is recorded otherwise.
        """
        _check_artifact_name(name)
        local = _local_path(path)
        if local is not None and not os.path.exists(local):
            raise FileNotFoundError(
                f"artifact {name!r}: {path} does not exist; pass an existing file or"
                " directory, or a remote URI (s3://..., gs://...) to record as a reference"
            )
        mlflow_id = self._write_run(run_id)
        stored = path
        if local is not None:
            with self._errors(f"store artifact {name!r} of run {run_id!r}"):
                artifact_uri = self.client.get_run(mlflow_id).info.artifact_uri
                if os.path.isdir(local):
                    self.client.log_artifacts(mlflow_id, local, artifact_path=name)
                    stored = f"{artifact_uri}/{name}"
                else:
                    self.client.log_artifact(mlflow_id, local, artifact_path=name)
                    stored = f"{artifact_uri}/{name}/{os.path.basename(local)}"
        tags: dict[str, object] = {f"{TAG_ARTIFACT_PATH_PREFIX}{name}": stored}
        for key, value in (metadata or {}).items():
            tags[f"{TAG_ARTIFACT_MD_PREFIX}.{name}.{key}"] = value
        self._set_tags(mlflow_id, tags, f"record artifact {name!r} of run {run_id!r}")

    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        run = self._read_run(run_id)
        if run is None:
            return {}
        tags = run.data.tags
        paths = {
            key[len(TAG_ARTIFACT_PATH_PREFIX) :]: value
            for key, value in tags.items()
            if key.startswith(TAG_ARTIFACT_PATH_PREFIX)
        }
        # Artifacts stored without the path tag (e.g. by upstream TorchX's tracker): the
        # top-level entries of the run's artifact tree.
        mlflow_error = sdk.mlflow_error()

        try:
            listed = self.client.list_artifacts(run.info.run_id)
        except (mlflow_error, OSError):
            listed = []
        for info in listed:
            top = info.path
            if top not in paths and not any(n.startswith(f"{top}/") for n in paths):
                paths[top] = f"{run.info.artifact_uri}/{top}"
        metadata = _artifact_metadata(tags, paths)
        return {
            name: TrackerArtifact(name=name, path=paths[name], metadata=metadata.get(name))
            for name in sorted(paths)
        }

    @_journaled_if_unreachable
    def add_metadata(self, run_id: str, **kwargs: object) -> None:
        """Records ``kwargs`` as tags of the run (MLflow stores the values as strings)."""
        if not kwargs:
            return
        mlflow_id = self._write_run(run_id)
        self._set_tags(mlflow_id, kwargs, f"record metadata of run {run_id!r}")

    def metadata(self, run_id: str) -> Mapping[str, object]:
        """The run's tags, without MLflow's own (``mlflow.*``) and the tracker's bookkeeping."""
        run = self._read_run(run_id)
        if run is None:
            return {}
        return {
            key: value
            for key, value in sorted(run.data.tags.items())
            if not key.startswith(_INTERNAL_TAG_PREFIXES)
        }

    @_journaled_if_unreachable
    def add_source(self, run_id: str, source_id: str, artifact_name: str | None = None) -> None:
        """Records that ``run_id`` derives from run ``source_id`` (optionally one artifact).

        When the source run is in the same experiment and the run has no MLflow parent
        yet, it also becomes the MLflow parent run (nested under it in MLflow's UI).
        """
        if not source_id:
            raise ValueError("source run id must not be empty")
        mlflow_id = self._write_run(run_id)
        key = f"{TAG_SOURCE_PREFIX}{_digest(source_id)}.{_digest(artifact_name or '')}"
        tags: dict[str, object] = {
            key: json.dumps([source_id, artifact_name]),
            f"{TAG_PARENT_PREFIX}{_digest(source_id)}": "true",
        }
        if artifact_name is None:
            with self._errors(f"read run {run_id!r}"):
                has_parent = _TAG_MLFLOW_PARENT in self.client.get_run(mlflow_id).data.tags
            parent = None if has_parent else self._read_run(source_id)
            if parent is not None and parent.info.run_id != mlflow_id:
                tags[_TAG_MLFLOW_PARENT] = parent.info.run_id
        self._set_tags(mlflow_id, tags, f"record source {source_id!r} of run {run_id!r}")

    def sources(self, run_id: str, artifact_name: str | None = None) -> Iterable[TrackerSource]:
        run = self._read_run(run_id)
        if run is None:
            return []
        found: list[TrackerSource] = []
        for key, value in run.data.tags.items():
            if not key.startswith(TAG_SOURCE_PREFIX):
                continue
            try:
                source, artifact = json.loads(value)
            except ValueError:
                continue
            if artifact_name is None or artifact == artifact_name:
                found.append(TrackerSource(source_run_id=source, artifact_name=artifact))
        return sorted(found, key=lambda s: (s.source_run_id, s.artifact_name or ""))

    def lineage(self, run_id: str) -> MLflowLineage:
        """The run's direct sources and descendants."""
        return MLflowLineage(
            run_id=run_id,
            sources=list(self.sources(run_id)),
            descendants=list(self.run_ids(parent_run_id=run_id)),
        )

    def run_ids(self, **kwargs: str) -> Iterable[str]:
        """TorchX run ids of the experiment's runs, oldest first; ``parent_run_id=X`` keeps
        the runs with source ``X``."""
        unknown = set(kwargs) - {"parent_run_id"}
        if unknown:
            raise ValueError(
                f"unsupported run_ids filter(s) {', '.join(sorted(unknown))};"
                " MLflowTracker accepts only parent_run_id"
            )

        experiment = self._find_experiment(create=False)
        if experiment is None:
            return []
        parent = kwargs.get("parent_run_id")
        filter_string = f"tags.`{TAG_PARENT_PREFIX}{_digest(parent)}` = 'true'" if parent else ""
        names: dict[str, None] = {}
        with self._errors("list runs"):
            for run in iter_runs(self.client, str(experiment.experiment_id), filter_string):
                name = run.info.run_name
                if name:
                    names[name] = None
        return list(names)

    # ------------------------------------------------------------------ params

    def log_params_flat(self, run_name: str, cfg: Any, key: str = "") -> None:
        """Logs a nested config (dataclass, mapping, list) as flat MLflow parameters.

        ``{"optim": {"lr": 0.1}}`` becomes ``optim.lr = 0.1``; see ``_params.flatten_params``.
        """
        entities = sdk.mlflow().entities

        params = [entities.Param(k, str(v)) for k, v in flatten_params(cfg, key).items()]
        if not params:
            return
        mlflow_id = self._write_run(run_name)
        with self._errors(f"log parameters of run {run_name!r}"):
            for start in range(0, len(params), _BATCH):
                self.client.log_batch(mlflow_id, params=params[start : start + _BATCH])


def _artifact_metadata(
    tags: Mapping[str, str], paths: Mapping[str, str]
) -> dict[str, dict[str, object]]:
    """``{artifact name: {key: value}}`` from the metadata tags; a tag belongs to the longest
    artifact name it starts with (so ``a`` and ``a.b`` keep their keys apart)."""
    names = sorted(paths, key=len, reverse=True)
    result: dict[str, dict[str, object]] = {}
    prefix = f"{TAG_ARTIFACT_MD_PREFIX}."
    for key, value in tags.items():
        if not key.startswith(prefix):
            continue
        rest = key[len(prefix) :]
        for name in names:
            if rest.startswith(f"{name}.") and len(rest) > len(name) + 1:
                result.setdefault(name, {})[rest[len(name) + 1 :]] = value
                break
    return result
