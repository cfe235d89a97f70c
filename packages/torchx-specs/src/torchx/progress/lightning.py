"""``torchx.progress`` for PyTorch Lightning: a callback that reports the trainer's step,
its total and the logged metrics.

::

    from torchx.progress.lightning import ProgressCallback

    trainer = Trainer(max_steps=1000, callbacks=[ProgressCallback()])

Works with ``lightning`` (``lightning.pytorch``) or the older ``pytorch_lightning``,
whichever is installed; importing this module imports it.
"""

from __future__ import annotations

import math
from typing import Any

from torchx.progress import _is_number, report

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the package before its rename
    try:
        from pytorch_lightning.callbacks import Callback
    except ImportError:
        raise ImportError(
            "torchx.progress.lightning needs PyTorch Lightning, not installed here:"
            " pip install lightning"
        ) from None

__all__ = ["ProgressCallback"]


def _total(trainer: Any) -> int | None:
    if getattr(trainer, "max_steps", -1) and trainer.max_steps > 0:
        return int(trainer.max_steps)
    try:
        steps = trainer.estimated_stepping_batches
    except Exception:  # no data loader length to estimate from
        return None
    return int(steps) if isinstance(steps, (int, float)) and math.isfinite(steps) else None


def _metrics(trainer: Any) -> dict[str, Any]:
    """The logged metrics (``report`` keeps the finite numbers: scalar tensors convert)."""
    logged = dict(getattr(trainer, "callback_metrics", {}) or {})
    return {str(k): v for k, v in logged.items() if _is_number(v)}


class ProgressCallback(Callback):  # type: ignore[misc]
    """Reports after every training batch (``report`` throttles the writes) and at the
    end of training."""

    def on_train_batch_end(self, trainer: Any, *args: Any, **kwargs: Any) -> None:
        report(int(trainer.global_step), _total(trainer), **_metrics(trainer))

    def on_train_end(self, trainer: Any, *args: Any, **kwargs: Any) -> None:
        report(int(trainer.global_step), _total(trainer), **_metrics(trainer))
