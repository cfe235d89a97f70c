"""Minimal result tracking for apps: store a dict of results per key (e.g. an HPO trial).

``FsspecResultTracker("s3://bucket/hpo")[trial_idx] = {"loss": 0.1}`` in the app, and the
same expression without the assignment in the driver. For run metadata, artifacts and
lineage use :mod:`torchx.tracker` instead.
"""

from torchx.runtime.tracking.api import FsspecResultTracker, ResultTracker

__all__ = ["FsspecResultTracker", "ResultTracker"]
