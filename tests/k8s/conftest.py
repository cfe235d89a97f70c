"""Fixtures for the tests that run apps on a real Kubernetes cluster.

`tools/k8s-up.sh` starts one on this machine (etcd, kube-apiserver, controller-manager,
scheduler, a kubelet over containerd, CoreDNS; built from their Go modules) and writes its
admin kubeconfig to ``$TORCHX_CI_STATE/k8s/kubeconfig``. Without it these tests are skipped,
unless TORCHX_REQUIRE_K8S=1 (set by tools/test-all.sh) turns that into a failure. Each test
gets a namespace of its own, deleted when it ends.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from torchx_testsupport import backend_missing
from torchx_testsupport.k8s.cluster import ADMIN


def _api(kubeconfig: Path) -> Any:
    from kubernetes import client, config

    return config.new_client_from_config(str(kubeconfig)), client


@pytest.fixture(scope="session")
def k8s_cluster() -> Path:
    """The admin kubeconfig of a cluster that answers and has a Ready node."""
    reason = f"no kubeconfig at {ADMIN}"
    if ADMIN.exists():
        try:
            api, client = _api(ADMIN)
            nodes = client.CoreV1Api(api).list_node(_request_timeout=5).items
            ready = [
                n.metadata.name
                for n in nodes
                if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or ())
            ]
            reason = "" if ready else "no node is Ready"
        except Exception as e:  # any failure to answer is "no cluster"
            reason = f"the API server does not answer ({type(e).__name__}: {e})"
    if reason:
        backend_missing(
            "TORCHX_REQUIRE_K8S", f"no Kubernetes cluster: {reason}; run tools/k8s-up.sh"
        )
    return ADMIN


@pytest.fixture
def kube(k8s_cluster: Path) -> Any:
    """The ``kubernetes`` client's CoreV1Api, BatchV1Api and CustomObjectsApi as the admin,
    for checks."""
    api, client = _api(k8s_cluster)
    return SimpleNamespace(
        core=client.CoreV1Api(api),
        batch=client.BatchV1Api(api),
        custom=client.CustomObjectsApi(api),
    )


@pytest.fixture
def namespace(k8s_cluster: Path, kube: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh namespace (``KUBECONFIG`` set to the admin's), deleted at the end with all
    that is in it. Pods are refused until its default ServiceAccount exists: wait for it."""
    monkeypatch.setenv("KUBECONFIG", str(k8s_cluster))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    name = f"t-{uuid.uuid4().hex[:10]}"
    kube.core.create_namespace({"metadata": {"name": name}})
    deadline = time.monotonic() + 60
    while not kube.core.list_namespaced_service_account(name).items:
        assert time.monotonic() < deadline, "the namespace's default ServiceAccount never came"
        time.sleep(0.1)
    yield name
    kube.core.delete_namespace(name)
