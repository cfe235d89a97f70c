"""Where the real test cluster of tools/k8s-up.sh keeps its credentials, and its image."""

from __future__ import annotations

import os
from pathlib import Path

STATE = Path(os.environ.get("TORCHX_CI_STATE", "/tmp/torchx-ci")) / "k8s"
ADMIN = STATE / "kubeconfig"
"""The admin's kubeconfig (system:masters)."""
LIMITED = STATE / "limited.kubeconfig"
"""A user who may only read jobs, pods and their logs in namespace ``default``."""
IMAGE = os.environ.get("TORCHX_TEST_IMAGE", "torchx-test/python:3.11-r2")
"""The test image, loaded into the node's containerd (no registry outside is reachable)."""


def exec_in_app_pod(namespace: str, app_id: str, command: str) -> None:
    """Runs ``command`` (sh) in the one pod of ``app_id`` through the API server (the
    kubelet's exec), as the admin: how a test lets a waiting pod go on."""
    from kubernetes import client, config, stream

    api = client.CoreV1Api(config.new_client_from_config(str(ADMIN)))
    name = app_id.rpartition(":")[2]
    (pod,) = api.list_namespaced_pod(
        namespace, label_selector=f"app.kubernetes.io/instance={name}"
    ).items
    stream.stream(
        api.connect_get_namespaced_pod_exec, pod.metadata.name, namespace,
        command=["sh", "-c", command], stderr=True, stdout=True,
    )  # fmt: skip
