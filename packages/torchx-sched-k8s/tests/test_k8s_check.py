"""``torchx check`` probes of the kubernetes scheduler against the API stand-in: Volcano
present and absent, access reviews allowed, denied and themselves forbidden, no cluster."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx_testsupport.k8s import FakeKubernetes

from torchx.schedulers.kubernetes_scheduler import create_scheduler
from torchx.util.readiness import NOT_CONFIGURED, NOT_READY, READY, overall


@pytest.fixture
def kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKubernetes]:
    server = FakeKubernetes(volcano=True).start()
    monkeypatch.setenv(
        "KUBECONFIG", server.write_kubeconfig(str(tmp_path / "config"), namespace="team")
    )
    monkeypatch.delenv("TORCHX_KUBE_CONTEXT", raising=False)
    yield server
    server.stop()


def _checks(cfg: dict[str, object] | None = None) -> dict[str, tuple[str, str, str]]:
    checks = create_scheduler("t").check_ready(cfg or {})
    return {c.name: (c.status, c.found, c.fix) for c in checks}


def test_ready_with_volcano(kubeconfig: FakeKubernetes) -> None:
    before = {k: len(v) for k, v in kubeconfig.store.items()}
    checks = _checks()
    assert checks["kubeconfig"] == (READY, "context fake, namespace team", "")
    assert checks["api server"][0] == READY and "v1.31.0" in checks["api server"][1]
    assert checks["volcano"][0] == READY
    assert checks["permissions"][0] == READY
    assert "create jobs" in checks["permissions"][1]
    assert {k: len(v) for k, v in kubeconfig.store.items()} == before, "a probe created objects"


def test_without_volcano_the_default_job_type_is_not_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = FakeKubernetes(volcano=False).start()
    try:
        monkeypatch.setenv("KUBECONFIG", server.write_kubeconfig(str(tmp_path / "c")))
        status, found, fix = _checks()["volcano"]
        assert status == NOT_READY and "not installed" in found
        assert "job_type=batch" in fix
        batch = _checks({"job_type": "batch"})
        assert batch["volcano"][0] == READY and "needs none" in batch["volcano"][1]
        assert overall(create_scheduler("t").check_ready({"job_type": "batch"})) == READY
    finally:
        server.stop()


def test_denied_permissions_name_what_is_missing(kubeconfig: FakeKubernetes) -> None:
    kubeconfig.forbid("create", "jobs.batch")
    status, found, fix = _checks({"job_type": "batch", "namespace": "team"})["permissions"]
    assert status == NOT_READY
    assert found == "in namespace team you may not: create jobs.batch"
    assert "ask a cluster admin" in fix and "-cfg namespace=" in fix


def test_a_forbidden_access_review_is_reported(kubeconfig: FakeKubernetes) -> None:
    kubeconfig.forbid("create", "selfsubjectaccessreviews")
    status, found, fix = _checks()["permissions"]
    assert status == NOT_READY
    assert "forbidden" in found and "selfsubjectaccessreviews" in found
    assert "selfsubjectaccessreviews" in fix


def test_no_kubeconfig_is_not_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    checks = _checks()
    assert list(checks) == ["kubeconfig"]
    assert checks["kubeconfig"][0] == NOT_CONFIGURED
    assert "KUBECONFIG" in checks["kubeconfig"][2]


def test_an_api_server_that_is_down_answers_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = FakeKubernetes().start()
    path = server.write_kubeconfig(str(tmp_path / "c"))
    server.stop()  # the kubeconfig now points at a closed port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
    monkeypatch.setenv("KUBECONFIG", path)
    started = time.monotonic()
    checks = _checks()
    assert checks["api server"][0] == NOT_READY
    assert "cannot reach the Kubernetes API server" in checks["api server"][1]
    assert "kubectl cluster-info" in checks["api server"][2]
    assert time.monotonic() - started < 10, "a refused connection must not be retried for long"
