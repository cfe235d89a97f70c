"""Experiment tracking for jobs launched by TorchX (see ``torchx.tracker.api``).

Inside a job, ``app_run_from_env()`` returns the job's run, already connected to the
trackers the launcher configured through ``TORCHX_TRACKERS``.
"""

from torchx._namespace import extend_path

__path__ = extend_path(__path__, __name__)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.tracker.api import (
        AppRun,
        AppRunTrackableSource,
        Lineage,
        TrackerArtifact,
        TrackerBase,
        TrackerSource,
        build_trackers,
        tracker_config_env_var_name,
        trackers_from_environ,
    )

__all__ = [
    "AppRun",
    "AppRunTrackableSource",
    "Lineage",
    "TrackerArtifact",
    "TrackerBase",
    "TrackerSource",
    "app_run_from_env",
    "build_trackers",
    "tracker_config_env_var_name",
    "trackers_from_environ",
]


def app_run_from_env() -> "AppRun":
    """The current job's tracked run (a process-wide singleton)."""
    from torchx.tracker.api import AppRun

    return AppRun.run_from_env()


def __getattr__(name: str) -> "Any":
    # The API module is loaded on first use so that importing a sibling module (such as a
    # tracker backend) does not pay for it.
    if name in __all__:
        from torchx.tracker import api

        return getattr(api, name)
    raise AttributeError(f"module 'torchx.tracker' has no attribute {name!r}")
