"""Compatibility alias: the colour codes moved to :py:mod:`torchx.util.colors`.

Kept so that ``from torchx.cli.colors import GREEN`` (upstream <= 2026-02) still works.
"""

from torchx.util.colors import BLUE, ENDC, GRAY, GREEN, ORANGE, RED, YELLOW

__all__ = ["BLUE", "ENDC", "GRAY", "GREEN", "ORANGE", "RED", "YELLOW"]
