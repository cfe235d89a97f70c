"""A pytest plugin (``-p torchx_testsupport.pytest_defaults``, in pyproject's addopts) for
every test run.

Tests that point torchx at a service that is not there (a closed port, a missing socket)
check the one-line error; outside a wait they expect it at once, so retries of transient
failures are off (``TORCHX_RETRY_S=0``) unless a test sets a budget itself. Waits and
followed logs keep their own budget (``TORCHX_OUTAGE_S``), which the fault tests rely on.
"""

from __future__ import annotations

import os

os.environ.setdefault("TORCHX_RETRY_S", "0")
