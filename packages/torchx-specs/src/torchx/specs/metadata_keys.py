"""Metadata keys schedulers may stamp into submitted jobs (a wire contract with telemetry).

Role names must not contain ``.`` or ``/``: the first ``.`` after
:attr:`app_metadata.ROLES_PREFIX` ends the role name in ``torchx/roles.<role>.<key>``.
"""

from __future__ import annotations

TORCHX_CONTEXT_NAME = "TORCHX_CONTEXT_NAME"
"""Env var naming the calling context (``torchx run`` sets ``cli_run`` when unset)."""

NA = "<<NA>>"
"""Placeholder for a metadata value that is not available."""


class app_metadata:
    """App-level metadata keys."""

    CONTEXT = "torchx/context"
    VERSION = "torchx/version"
    SCHEDULER = "torchx/scheduler"
    ROLES_PREFIX = "torchx/roles."
