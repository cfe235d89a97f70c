"""``torchx check`` of the mlflow tracker against the real MLflow server, up and down."""

from __future__ import annotations

import socket

from torchx_testsupport import torchx_check


def test_server_up(mlflow_uri: str) -> None:
    env = {"TORCHX_TRACKERS": "mlflow", "TORCHX_TRACKER_MLFLOW_CONFIG": mlflow_uri}
    entry = torchx_check("-t", "mlflow", env=env)["mlflow"]
    assert entry["status"] == "ready" and entry["exit"] == 0
    assert entry["checks"]["server"][1] == f"MLflow server at {mlflow_uri} answers (OK)"


def test_server_down_and_password_hidden() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = f"http://user:s3cret@127.0.0.1:{port}"
    env = {"TORCHX_TRACKERS": "mlflow", "TORCHX_TRACKER_MLFLOW_CONFIG": uri}
    entry = torchx_check("-t", "mlflow", env=env)["mlflow"]
    status, found, _ = entry["checks"]["server"]
    assert status == "not ready" and "cannot reach the MLflow server" in found
    assert "s3cret" not in found and "user" not in found and "http://***@" in found
    assert entry["exit"] == 1


def test_default_store_is_a_private_sqlite_file(tmp_path: object) -> None:
    env = {"TORCHX_TRACKERS": "mlflow", "TORCHX_TRACKER_MLFLOW_CONFIG": ""}
    entry = torchx_check("-t", "mlflow", env=env)["mlflow"]
    status, found, _ = entry["checks"]["store"]
    assert status == "ready" and found.startswith("SQLite store ") and "mlflow.db" in found
