"""Where the real test cluster of tools/k8s-up.sh keeps its credentials, and its image."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (just now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def admin_kubeconfig_copy(path: Path, *, server: str = "", namespace: str = "") -> str:
    """A copy of the admin kubeconfig at ``path``, with another API server URL and/or the
    context's namespace; returns ``path``."""
    import yaml

    config = yaml.safe_load(ADMIN.read_text())
    if server:
        config["clusters"][0]["cluster"]["server"] = server
    if namespace:
        for context in config["contexts"]:
            context["context"]["namespace"] = namespace
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return str(path)


def _api_server_command() -> tuple[str, list[str]]:
    """The running kube-apiserver's executable and arguments (argv[0] first), from /proc."""
    pid = int((STATE / "apiserver.pid").read_text())
    args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    return os.readlink(f"/proc/{pid}/exe"), args


@contextlib.contextmanager
def second_api_server(*, bare: bool = False) -> Iterator[str]:
    """Another kube-apiserver of the running cluster, on a free port and the same etcd, as
    in a control plane of several servers behind a load balancer, or the one server after a
    restart: its watch cache starts empty now. Yields its URL; stopped at the end.

    It is started with the running server's own arguments (read from /proc), and does not
    write itself into the ``kubernetes`` Service's endpoints. ``bare``: under an etcd prefix
    of its own, so it serves a cluster of its own as a fresh one is: only the built-in APIs
    (no Volcano, Kueue or JobSet), the default namespace and the same static users."""
    exe, args = _api_server_command()
    port = free_port()
    args[args.index("--secure-port") + 1] = str(port)
    args.append("--endpoint-reconciler-type=none")
    prefix = f"/torchx-bare-{port}"
    if bare:
        args.append(f"--etcd-prefix={prefix}")
    url = f"https://127.0.0.1:{port}"
    with open(STATE / f"apiserver-{port}.log", "wb") as log:
        proc = subprocess.Popen(args, executable=exe, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_ready(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        if bare:  # what it stored is of no use to anyone
            _etcd_post(
                "/v3/kv/deleterange",
                {"key": _b64(prefix + "/"), "range_end": _b64(prefix + "0")},
            )


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


def _etcd_post(path: str, body: dict[str, object]) -> dict[str, Any]:
    """A call of etcd's HTTP gateway (the cluster's etcd, from the API server's arguments)."""
    _, args = _api_server_command()
    etcd = args[args.index("--etcd-servers") + 1].split(",")[0]
    request = urllib.request.Request(
        f"{etcd}{path}", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as answer:
        result: dict[str, Any] = json.load(answer)
        return result


def _wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    token = (STATE / "admin.token").read_text().strip()
    tls = ssl.create_default_context(cafile=str(STATE / "pki" / "ca.crt"))
    request = urllib.request.Request(f"{url}/readyz", headers={"Authorization": f"Bearer {token}"})
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, f"the second kube-apiserver exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(request, context=tls, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"the second kube-apiserver at {url} never got ready"
        time.sleep(0.2)


def compact_etcd() -> int:
    """Compacts the cluster's etcd up to its current revision (what kube-apiserver does
    every 5 minutes), through etcd's HTTP gateway; returns that revision. Older resource
    versions can no longer be read or watched from etcd."""
    revision = int(_etcd_post("/v3/kv/range", {"key": "AA=="})["header"]["revision"])
    _etcd_post("/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision


def create_torchx_jobs(namespace: str, *, volcano: int = 0, batch: int = 0, first: int = 0) -> None:
    """Stores ``volcano`` Volcano jobs and ``batch`` suspended batch Jobs (no pods) with
        TorchX's labels in ``namespace`` of the real cluster, as the admin: what ``torchx list``
        reads in a namespace with thousands of apps. Each is one app (``bulk-v-N``, ``bulk-b-N``,
    N counted from ``first``)."""
    from concurrent.futures import ThreadPoolExecutor

    from kubernetes import client, config

    from torchx.schedulers._kubernetes.request import (
        LABEL_INSTANCE,
        LABEL_KIND,
        LABEL_MANAGED_BY,
        MANAGED_BY,
    )

    api = config.new_client_from_config(str(ADMIN))
    custom, jobs = client.CustomObjectsApi(api), client.BatchV1Api(api)
    managed = {LABEL_MANAGED_BY: MANAGED_BY}

    def make_volcano(i: int) -> None:
        name = f"bulk-v-{i:05d}"
        body = {
            "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "labels": {**managed, LABEL_INSTANCE: name}},
            "spec": {"queue": "default", "tasks": []},
        }  # fmt: skip
        custom.create_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", namespace, "jobs", body
        )

    def make_batch(i: int) -> None:
        name = f"bulk-b-{i:05d}"
        labels = {**managed, LABEL_INSTANCE: name, LABEL_KIND: "batch"}
        pod = {"restartPolicy": "Never", "containers": [{"name": "main", "image": IMAGE}]}
        body = {
            "metadata": {"name": name, "labels": labels},
            "spec": {"suspend": True, "template": {"metadata": {"labels": labels}, "spec": pod}},
        }
        jobs.create_namespaced_job(namespace, body)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(make_volcano, range(first, first + volcano)))
        list(pool.map(make_batch, range(first, first + batch)))
