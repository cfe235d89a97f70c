"""The event record of a runner call (upstream's module path for these names)."""

from torchx.runner.events import SourceType, TorchxEvent

__all__ = ["SourceType", "TorchxEvent"]
