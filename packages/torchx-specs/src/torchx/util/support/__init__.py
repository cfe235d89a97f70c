"""Support code for TorchX's own packages: the runner, the CLI and the backends.

Private: plugin authors use the public modules of :mod:`torchx.util` (upstream's names
and the plugin contract); what is here may change in any release. Each module has one
job: atomic private file writes (``atomic``), ``.torchxconfig`` lookup
(``config_files``), ``TORCHX_HOME`` (``home``), checks against the submitting host
(``host_checks``), program lookup (``programs``), which TorchX is installed
(``provenance``), retries of transient backend failures (``retry``), YAML with limits
(``safe_yaml``), secrets kept out of output (``secrets``), signal names (``signals``),
terminal width (``terminal``) and the user's name (``user``).
"""
