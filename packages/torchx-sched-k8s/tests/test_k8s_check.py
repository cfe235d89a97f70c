"""``torchx check`` probes of the kubernetes scheduler against the API stand-in, for the two
cases the real test cluster (tests/k8s/test_k8s_check.py) is not set up for: no Volcano API
at all, and access reviews that are themselves forbidden."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx_testsupport.k8s import FakeKubernetes

from torchx.schedulers.kubernetes_scheduler import create_scheduler
from torchx.util.readiness import NOT_READY, READY, overall


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


def test_a_forbidden_access_review_is_reported(kubeconfig: FakeKubernetes) -> None:
    kubeconfig.forbid("create", "selfsubjectaccessreviews")
    status, found, fix = _checks()["permissions"]
    assert status == NOT_READY
    assert "forbidden" in found and "selfsubjectaccessreviews" in found
    assert "selfsubjectaccessreviews" in fix
