"""``torchx.progress`` for Hugging Face ``transformers``: a ``TrainerCallback`` that reports
the trainer's step, its ``max_steps`` and the metrics it logs.

::

    from torchx.progress.transformers import ProgressCallback

    trainer = Trainer(model, args, train_dataset=data, callbacks=[ProgressCallback()])

Importing this module imports ``transformers``.
"""

from __future__ import annotations

from typing import Any

try:
    from transformers import TrainerCallback
except ImportError:
    raise ImportError(
        "torchx.progress.transformers needs Hugging Face Transformers, not installed here:"
        " pip install transformers"
    ) from None

from torchx.progress import _is_number, report

__all__ = ["ProgressCallback"]


class ProgressCallback(TrainerCallback):  # type: ignore[misc]
    """Reports after every step (``report`` throttles the writes) with the last metrics
    the trainer logged (``loss``, ``learning_rate``, ``eval_*``...)."""

    def __init__(self) -> None:
        self._metrics: dict[str, Any] = {}

    def _report(self, state: Any) -> None:
        total = int(state.max_steps) if getattr(state, "max_steps", 0) else None
        report(int(state.global_step), total, **self._metrics)

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any
    ) -> None:
        self._metrics.update((str(k), v) for k, v in (logs or {}).items() if _is_number(v))
        self._report(state)

    def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        self._report(state)

    def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        self._report(state)
