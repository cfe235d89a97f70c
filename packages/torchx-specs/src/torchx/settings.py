"""Names of the environment variables TorchX reads or injects into jobs (one place for all).

Only the names live here; the code that reads each variable documents its meaning.
"""

ENV_TORCHX_TRACKERS = "TORCHX_TRACKERS"
"""Comma-separated tracker names (launcher config override; injected into every role)."""

ENV_TORCHX_PARENT_RUN_ID = "TORCHX_PARENT_RUN_ID"
"""Run id of the parent run, recorded as the lineage source of the job's run."""

ENV_TORCHX_JOB_ID = "TORCHX_JOB_ID"
"""The job's app handle (``<scheduler>://<session>/<app_id>``), injected by the runner."""

ENV_TORCHX_RUN_ID = "TORCHX_RUN_ID"
"""The run's identity, the same in every attempt of one app: its idempotency key when it
was submitted with one, else its app handle. Name a tracker run or a checkpoint directory
by it (the trackers do)."""

ENV_TORCHXCONFIG = "TORCHXCONFIG"
"""Path of the only ``.torchxconfig`` to load (empty string: load none)."""

ENV_TORCHX_INTERNAL_SESSION_ID = "TORCHX_INTERNAL_SESSION_ID"
"""Session uuid shared by the launcher and the jobs it starts."""

ENV_TORCHX_ATTEMPT = "TORCHX_ATTEMPT"
"""Which run of its replica a process is: 0 first, one more on each restart, requeue or
resubmission (every scheduler sets it, so a job knows to resume from its checkpoint)."""

ENV_TORCHX_IMAGE = "TORCHX_IMAGE"
"""The final image of a role, set on each replica by container schedulers."""

ENV_TORCHX_ROLE_IDX = "TORCHX_ROLE_IDX"
"""Index of the role a replica belongs to (schedulers that flatten roles)."""

ENV_TORCHX_ROLE_NAME = "TORCHX_ROLE_NAME"
"""Name of the role a replica belongs to (schedulers that flatten roles)."""

ENV_TORCHX_CUSTOM_NAMED_RESOURCES = "TORCHX_CUSTOM_NAMED_RESOURCES"
"""Module whose ``NAMED_RESOURCES`` mapping is added to the named resources."""

ENV_TORCHX_HOME = "TORCHX_HOME"
"""Base directory of TorchX state (default ``~/.torchx``)."""

ENV_TORCHX_CONTEXT_NAME = "TORCHX_CONTEXT_NAME"
"""Name of the calling context (``torchx run`` sets ``cli_run`` when unset)."""
