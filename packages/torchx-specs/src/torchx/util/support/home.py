"""Where TorchX keeps its state: one lookup for every package (records, caches, stores).

Imports nothing but ``os``: the CLI's start-up cache finds its file through it.
"""

import os

__all__ = ["torchx_home"]


def torchx_home() -> str:
    """``$TORCHX_HOME`` (``~`` expanded; ``torchx.settings.ENV_TORCHX_HOME``), or
    ``~/.torchx`` when unset or empty; read on every call (tests and long-lived processes
    may redirect it) and not created here."""
    return os.path.expanduser(os.environ.get("TORCHX_HOME") or "~/.torchx")
