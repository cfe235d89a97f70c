"""The Kubernetes API stand-in (tools/testsupport/torchx_testsupport/k8s/) and a
scheduler pointed at it through a kubeconfig, for the kubernetes scheduler's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx_testsupport.k8s import FakeKubernetes

from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler, create_scheduler


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKubernetes]:
    server = FakeKubernetes().start()
    monkeypatch.setenv("KUBECONFIG", server.write_kubeconfig(str(tmp_path / "config")))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    yield server
    server.stop()


@pytest.fixture
def sched(fake: FakeKubernetes) -> KubernetesScheduler:
    return create_scheduler("torchx")
