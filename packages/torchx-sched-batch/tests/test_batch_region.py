"""An empty region variable is "no region", said in one line, not an endpoint `batch..`."""

from __future__ import annotations

import threading

import pytest

from torchx.schedulers._aws_batch import client as aws_batch_clients


def _client_in_new_thread() -> object:
    """A client made in a fresh thread (clients and sessions are cached per thread)."""
    result: dict[str, object] = {}

    def make() -> None:
        try:
            result["client"] = aws_batch_clients.thread_client("batch")
        except Exception as e:
            result["error"] = e

    t = threading.Thread(target=make)
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result["client"]


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def test_empty_default_region_is_no_region(
    credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "")
    monkeypatch.delenv("AWS_REGION", raising=False)
    with pytest.raises(aws_batch_clients.AWSRegionError, match="no AWS region is configured"):
        _client_in_new_thread()


def test_empty_default_region_falls_back_to_aws_region(
    credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    client = _client_in_new_thread()
    assert client.meta.region_name == "eu-west-1"  # type: ignore[attr-defined]
