"""The one place the tracker imports ``mlflow`` (about a second): on first use, never at
import, so ``torchx --help`` and runs without tracking do not pay for it."""

from __future__ import annotations

from typing import Any

from torchx.util.log import ensure_configured


def mlflow() -> Any:
    """The ``mlflow`` package with its ``entities`` and ``exceptions`` loaded."""

    ensure_configured()  # mlflow logs through logging itself
    import mlflow
    import mlflow.entities
    import mlflow.exceptions

    return mlflow


def mlflow_error() -> Any:
    """``MlflowException``, the base of the errors MLflow's client raises (``Any``: its
    ``error_code`` and ``message`` are read where it is caught)."""
    return mlflow().exceptions.MlflowException
