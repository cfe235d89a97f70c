"""Where the MLflow tracker keeps runs: its settings from the tracker config string,
``.torchxconfig`` and the environment, resolved without importing ``mlflow``.

The tracker config string (``TORCHX_TRACKER_MLFLOW_CONFIG`` / ``[tracker:mlflow] config``)
is one of

* a tracking URI (``http://host:5000``, ``sqlite:///path/mlflow.db``, ``databricks``, ...);
* a directory holding a ``.torchxconfig`` whose ``[tracker:mlflow]`` section is used
  (upstream TorchX's meaning, so existing setups keep working);
* the path of such a config file.

Without a directory or file, ``[tracker:mlflow]`` comes from the usual config files
(``$TORCHXCONFIG`` alone when set, else ``~/.torchxconfig`` then ``./.torchxconfig``, the
first file that sets a key wins). Its keys are ``tracking_uri``, ``experiment_name`` and
``artifact_location`` (and ``config``, read by the launcher). ``$TORCHX_TRACKING_EXPERIMENT_NAME``
(set by ``dist.ddp --name``) names the experiment over the file. With no tracking URI
anywhere, ``$MLFLOW_TRACKING_URI`` is used, else a SQLite file under ``$TORCHX_HOME``.
"""

from __future__ import annotations

import os
import re

from torchx.util.support.config_files import CONFIG_FILE, find_config_files, read_config
from torchx.util.support.home import torchx_home
from torchx.util.support.user import current_user

__all__ = [
    "CONFIG_FILE",
    "ENV_EXPERIMENT_NAME",
    "SECTION",
    "TrackerSettings",
    "default_experiment_name",
    "default_tracking_uri",
    "resolve_settings",
]

SECTION = "tracker:mlflow"
ENV_EXPERIMENT_NAME = "TORCHX_TRACKING_EXPERIMENT_NAME"
ENV_MLFLOW_TRACKING_URI = "MLFLOW_TRACKING_URI"
_KEYS = ("tracking_uri", "experiment_name", "artifact_location")
_LAUNCHER_KEYS = ("config",)
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_BARE_URIS = ("databricks", "databricks-uc", "uc")


class TrackerSettings:
    """The resolved constructor arguments of :class:`MLflowTracker` (plus where they came from)."""

    def __init__(
        self,
        tracking_uri: str | None,
        experiment_name: str | None,
        artifact_location: str | None,
    ) -> None:
        self.tracking_uri = tracking_uri
        self.experiment_name = experiment_name
        self.artifact_location = artifact_location

    def __repr__(self) -> str:
        return (
            f"TrackerSettings(tracking_uri={self.tracking_uri!r},"
            f" experiment_name={self.experiment_name!r},"
            f" artifact_location={self.artifact_location!r})"
        )


def default_experiment_name() -> str:
    """``default-experiment/<user>/<host fqdn>`` (upstream TorchX's default)."""
    import socket

    return f"default-experiment/{current_user()}/{socket.getfqdn()}"


def default_tracking_uri() -> str:
    """``sqlite:///$TORCHX_HOME/mlflow/mlflow.db``: a private store, not a shared temp dir."""
    home = torchx_home()
    return "sqlite:///" + os.path.join(os.path.abspath(home), "mlflow", "mlflow.db")


def is_tracking_uri(value: str) -> bool:
    """Whether ``value`` is a URI (``scheme:...`` or a bare ``databricks``), not a path."""
    return bool(_URI.match(value)) or value in _BARE_URIS


def _read_section(path: str) -> dict[str, str]:
    """``[tracker:mlflow]`` of one config file; a malformed file is a one-line ``ValueError``."""
    values = read_config(path).get(SECTION, {})
    unknown = sorted(set(values) - set(_KEYS) - set(_LAUNCHER_KEYS))
    if unknown:
        raise ValueError(
            f"unknown key(s) {', '.join(unknown)} in [{SECTION}] of {path};"
            f" accepted: {', '.join(_KEYS + _LAUNCHER_KEYS)}"
        )
    return {k: v.strip() for k, v in values.items() if k in _KEYS and v.strip()}


def _merged_section(paths: list[str]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for path in paths:
        for key, value in _read_section(path).items():
            merged.setdefault(key, value)
    return merged


def resolve_settings(config: str | None) -> TrackerSettings:
    """The tracker's settings for tracker config string ``config`` (see module doc).

    Raises a one-line ``ValueError`` for a config that is neither a URI nor an existing
    directory or file, and for a malformed ``[tracker:mlflow]`` section.
    """
    config = (config or "").strip()
    uri_from_config: str | None = None
    if not config:
        section = _merged_section(find_config_files())
    elif is_tracking_uri(config):
        uri_from_config = config
        section = _merged_section(find_config_files())
    else:
        path = os.path.expanduser(config)
        if os.path.isdir(path):
            file = os.path.join(path, CONFIG_FILE)
            section = _read_section(file) if os.path.isfile(file) else {}
        elif os.path.isfile(path):
            section = _read_section(path)
        else:
            raise ValueError(
                f"MLflow tracker config {config!r} is neither a tracking URI (such as"
                " http://HOST:5000 or sqlite:///PATH/mlflow.db) nor an existing directory or"
                f" {CONFIG_FILE} file; fix TORCHX_TRACKER_MLFLOW_CONFIG or [{SECTION}] config"
            )
    tracking_uri = (
        uri_from_config
        or section.get("tracking_uri")
        or os.environ.get(ENV_MLFLOW_TRACKING_URI)
        or None
    )
    return TrackerSettings(
        tracking_uri=tracking_uri,
        experiment_name=os.environ.get(ENV_EXPERIMENT_NAME) or section.get("experiment_name"),
        artifact_location=section.get("artifact_location"),
    )
