"""The MLflow tracker: TorchX runs, their metadata, artifacts and lineage in MLflow.

Registered as the ``mlflow`` tracker (entry point group ``torchx.tracker``), so
``TORCHX_TRACKERS=mlflow`` (or ``mlflow =`` under ``[torchx:tracker]`` in ``.torchxconfig``)
makes every job launched by TorchX record into MLflow; inside the job,
``torchx.tracker.app_run_from_env()`` returns its run. Settings: see :func:`create_tracker`.

Importing this package does not import ``mlflow``; the tracker does on first use.
"""

from torchx.tracker.mlflow._config import default_experiment_name, resolve_settings
from torchx.tracker.mlflow._errors import MLflowTrackerError
from torchx.tracker.mlflow._params import flatten_params
from torchx.tracker.mlflow._readiness import check_ready
from torchx.tracker.mlflow._tracker import TAG_ARTIFACT_MD_PREFIX, MLflowLineage, MLflowTracker

TORCHX_PLUGIN_API = 1
"""The torchx plugin contract this module was built against (torchx.util.plugin_api)."""

__all__ = [
    "TAG_ARTIFACT_MD_PREFIX",
    "MLflowLineage",
    "MLflowTracker",
    "MLflowTrackerError",
    "check_ready",
    "create_tracker",
    "default_experiment_name",
    "flatten_params",
]


def create_tracker(config: str | None = None) -> MLflowTracker:
    """The ``torchx.tracker`` factory: an :class:`MLflowTracker` for tracker config ``config``.

    ``config`` (``TORCHX_TRACKER_MLFLOW_CONFIG`` or ``[tracker:mlflow] config``) is a tracking
    URI, a directory holding a ``.torchxconfig``, or such a file; ``[tracker:mlflow]`` keys
    ``tracking_uri``, ``experiment_name`` and ``artifact_location`` fill in the rest, and
    ``$TORCHX_TRACKING_EXPERIMENT_NAME`` names the experiment. Nothing is contacted yet; a
    config that is neither a URI nor an existing path is a one-line ``ValueError``.
    """
    settings = resolve_settings(config)
    return MLflowTracker(
        experiment_name=settings.experiment_name,
        tracking_uri=settings.tracking_uri,
        artifact_location=settings.artifact_location,
    )
