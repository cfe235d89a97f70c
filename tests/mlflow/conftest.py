"""Fixtures for the tests that track real jobs in a real MLflow server.

`tools/mlflow-up.sh` starts `mlflow server` (SQLite store) on 127.0.0.1:5055, or the port in
TORCHX_TEST_MLFLOW_PORT. Without one these tests are skipped, unless TORCHX_REQUIRE_MLFLOW=1
(set by tools/test-all.sh) turns that into a failure.
"""

from __future__ import annotations

import os

import pytest
from torchx_testsupport import backend_missing, http_ok


@pytest.fixture(scope="session")
def mlflow_uri() -> str:
    uri = f"http://127.0.0.1:{os.environ.get('TORCHX_TEST_MLFLOW_PORT', '5055')}"
    if not http_ok(f"{uri}/health", timeout=5):
        backend_missing(
            "TORCHX_REQUIRE_MLFLOW", f"no MLflow server answers at {uri}; run tools/mlflow-up.sh"
        )
    return uri
