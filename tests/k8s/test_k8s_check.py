"""``torchx check`` probes of the kubernetes scheduler against the real cluster of
tools/k8s-up.sh: its real version, Volcano's API (its CRDs are installed there), real access
reviews for the admin and for a user without rights; no cluster; a server that is down.
(No Volcano API at all, and access reviews that are themselves forbidden, need a cluster
set up otherwise: those stay with the stand-in in packages/torchx-sched-k8s/tests.)"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport.k8s.cluster import LIMITED, admin_kubeconfig_copy, free_port

from torchx.schedulers.kubernetes_scheduler import create_scheduler
from torchx.util.readiness import NOT_CONFIGURED, NOT_READY, READY, overall


def _checks(cfg: dict[str, object] | None = None) -> dict[str, tuple[str, str, str]]:
    checks = create_scheduler("t").check_ready(cfg or {})
    return {c.name: (c.status, c.found, c.fix) for c in checks}


def test_ready_on_the_real_cluster(namespace: str, kube: Any) -> None:
    checks = _checks({"namespace": namespace})
    assert checks["kubeconfig"][0] == READY and "namespace" in checks["kubeconfig"][1]
    assert checks["api server"][0] == READY and "v1.36" in checks["api server"][1]
    assert checks["volcano"][0] == READY
    assert checks["jobset"] == (
        READY,
        "installed (jobset.x-k8s.io); -cfg job_type=jobset works",
        "",
    )
    assert checks["kueue"][:2] == (
        READY,
        f"installed; LocalQueues in {namespace} to submit to: none",
    )
    assert checks["permissions"][0] == READY and "create jobs" in checks["permissions"][1]
    assert overall(create_scheduler("t").check_ready({"job_type": "batch"})) == READY
    assert kube.batch.list_namespaced_job(namespace).items == [], "a probe created objects"


def test_denied_permissions_name_what_is_missing(
    k8s_cluster: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limited user may only read jobs, pods and logs in `default`."""
    monkeypatch.setenv("KUBECONFIG", str(LIMITED))
    checks = _checks({"job_type": "batch", "namespace": "default"})
    assert checks["kueue"][:2] == (READY, "installed; you may not list the LocalQueues of default")
    status, found, fix = checks["permissions"]
    assert status == NOT_READY
    assert found.startswith("in namespace default you may not: create jobs.batch"), found
    assert "ask a cluster admin" in fix and "-cfg namespace=" in fix


def test_no_kubeconfig_is_not_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    checks = _checks()
    assert list(checks) == ["kubeconfig"]
    assert checks["kubeconfig"][0] == NOT_CONFIGURED
    assert "KUBECONFIG" in checks["kubeconfig"][2]


def test_an_api_server_that_is_down_answers_at_once(
    k8s_cluster: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the real cluster's, at a port nobody serves
    down = admin_kubeconfig_copy(tmp_path / "c", server=f"https://127.0.0.1:{free_port()}")
    monkeypatch.setenv("KUBECONFIG", down)
    started = time.monotonic()
    checks = _checks()
    assert checks["api server"][0] == NOT_READY
    assert "cannot reach the Kubernetes API server" in checks["api server"][1]
    assert "kubectl cluster-info" in checks["api server"][2]
    assert time.monotonic() - started < 10, "a refused connection must not be retried for long"
