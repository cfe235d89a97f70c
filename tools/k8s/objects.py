"""Creates the test cluster's own objects through its API (tools/k8s-up.sh; idempotent):

- Volcano's CustomResourceDefinitions (batch.volcano.sh Jobs, scheduling.volcano.sh Queues
  and PodGroups) and its ``default`` queue. Volcano's controllers cannot be built here (the
  Go module proxy refuses volcano.sh/volcano), so its jobs are stored, listed, described
  and deleted by the real API server, but no pod runs for them. Their schemas keep unknown
  fields: the server checks the envelope, not Volcano's own validation.
- The limited user's rights (``torchx-limited``): read jobs, pods and their logs in
  ``default`` (and JobSets), nothing else (no create, no watch), for the tests of refused
  requests.
- With a controllers directory (tools/k8s-controllers-build.sh): Kueue's and JobSet's CRDs
  (and the documentation's queue: LocalQueue ``user-queue`` in ``default``) and admission
  webhooks as released, the webhooks (and Kueue's CRD conversion) pointed at
  the controllers on 127.0.0.1, which run outside the cluster, with the test CA's bundle.
  Kueue's webhooks are kept for what it manages here (its own kinds, batch Jobs, JobSets).

Uses only the standard library: it runs with the machine's ``python3``.
Usage: ``objects.py ADMIN_KUBECONFIG [CONTROLLERS_DIR CA_FILE KUEUE_PORT JOBSET_PORT]``, then
``objects.py ADMIN_KUBECONFIG --kueue-queues`` once Kueue runs.
"""

from __future__ import annotations

import json
import ssl
import sys
import urllib.error
import urllib.request
from typing import Any


def _kubeconfig(path: str) -> tuple[str, str, str]:
    """(server, CA file, token) of a kubeconfig written by k8s-up.sh (plain, one of each)."""
    fields: dict[str, str] = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().partition(": ")
            if key in ("server", "certificate-authority", "token"):
                fields[key] = value
    return fields["server"], fields["certificate-authority"], fields["token"]


def _crd(group: str, version: str, kind: str, *, plural: str, scope: str, short: str) -> Any:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
                "shortNames": [short],
            },
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": schema,
                    "subresources": {"status": {}},
                }
            ],
        },
    }


CRDS = [
    _crd("batch.volcano.sh", "v1alpha1", "Job", plural="jobs", scope="Namespaced", short="vcjob"),
    _crd("scheduling.volcano.sh", "v1beta1", "Queue", plural="queues", scope="Cluster", short="q"),
    _crd(
        "scheduling.volcano.sh",
        "v1beta1",
        "PodGroup",
        plural="podgroups",
        scope="Namespaced",
        short="pg",
    ),
]

LIMITED_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "Role",
    "metadata": {"name": "torchx-limited", "namespace": "default"},
    "rules": [
        {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list"]},
        {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["get", "list"]},
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get", "list"]},
    ],
}
LIMITED_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "RoleBinding",
    "metadata": {"name": "torchx-limited", "namespace": "default"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "torchx-limited"},
    "subjects": [
        {"kind": "User", "name": "torchx-limited", "apiGroup": "rbac.authorization.k8s.io"}
    ],
}
KUEUE_QUEUES = [
    (
        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
         "metadata": {"name": "default-flavor"}},
    ),
    (
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
         "metadata": {"name": "cluster-queue"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": ["cpu", "memory"],
             "flavors": [{"name": "default-flavor", "resources": [
                 {"name": "cpu", "nominalQuota": "2"}, {"name": "memory", "nominalQuota": "8Gi"},
             ]}],
         }]}},
    ),
    (
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/localqueues",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": "user-queue", "namespace": "default"},
         "spec": {"clusterQueue": "cluster-queue"}},
    ),
]  # fmt: skip
"""A queue for the documentation's Kueue example (docs/schedulers/kubernetes.md shows it)."""

DEFAULT_QUEUE = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "Queue",
    "metadata": {"name": "default"},
    "spec": {"weight": 1, "reclaimable": True},
}


class Api:
    def __init__(self, kubeconfig: str) -> None:
        self.server, ca, self.token = _kubeconfig(kubeconfig)
        self.tls = ssl.create_default_context(cafile=ca)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=self.tls, timeout=30) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def create(self, path: str, body: Any) -> None:
        """Creates ``body`` under ``path`` unless an object of its name is there already."""
        status, answer = self.call("POST", path, body)
        if status not in (200, 201, 409):
            sys.exit(f"k8s-up: creating {body['kind']} {body['metadata']['name']}: {answer}")

    def apply(self, path: str, body: Any) -> None:
        """Creates ``body`` under ``path``, or replaces the object of its name with it."""
        status, answer = self.call("POST", path, body)
        if status == 409:
            item = f"{path}/{body['metadata']['name']}"
            _, current = self.call("GET", item)
            body = dict(body, metadata=dict(body["metadata"]))
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            status, answer = self.call("PUT", item, body)
        if status not in (200, 201):
            sys.exit(f"k8s-up: applying {body['kind']} {body['metadata']['name']}: {answer}")


def _established(api: Api, name: str) -> bool:
    _, crd = api.call("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    conditions = crd.get("status", {}).get("conditions", [])
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


# Kueue's CRDs whose versions it converts itself (its config/components/crd patches)
KUEUE_CONVERTED = {
    f"{plural}.kueue.x-k8s.io"
    for plural in ("localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters")
}
KUEUE_GROUPS = {"kueue.x-k8s.io", "batch", "jobset.x-k8s.io"}
"""API groups of the objects Kueue manages here (frameworks batch/job and jobset)."""
JOBSET_POD_SELECTOR = {
    "matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]
}
"""JobSet's pod webhooks see only its own pods (its config/components/webhook patches)."""


def _client_config(url: str, path: str, ca_bundle: str) -> dict[str, str]:
    return {"url": url + path, "caBundle": ca_bundle}


def _webhook_configs(
    configs: list[Any], prefix: str, url: str, ca_bundle: str, keep: Any
) -> list[Any]:
    """``configs`` (a release's webhook configurations) named ``prefix-...``, calling
    ``url`` with ``ca_bundle``; only webhooks for which ``keep(webhook)`` is true."""
    result = []
    for config in configs:
        hooks = []
        for hook in config.get("webhooks") or []:
            if not keep(hook):
                continue
            path = hook["clientConfig"]["service"]["path"]
            hooks.append(dict(hook, clientConfig=_client_config(url, path, ca_bundle)))
        name = f"{prefix}-{config['metadata']['name']}"
        result.append(dict(config, metadata={"name": name}, webhooks=hooks))
    return result


def _controllers(api: Api, directory: str, ca_file: str, ports: tuple[int, int]) -> list[Any]:
    """Installs Kueue's and JobSet's CRDs and webhook configurations; returns the CRDs."""
    import base64
    import os

    def load(name: str) -> list[Any]:
        with open(os.path.join(directory, name)) as f:
            objects: list[Any] = json.load(f)
        return objects

    with open(ca_file, "rb") as f:
        ca_bundle = base64.b64encode(f.read()).decode()
    kueue_url, jobset_url = (f"https://127.0.0.1:{port}" for port in ports)
    crds = load("kueue-crds.json") + load("jobset-crds.json")
    for crd in crds:
        if crd["metadata"]["name"] in KUEUE_CONVERTED:
            crd["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": _client_config(kueue_url, "/convert", ca_bundle),
                    "conversionReviewVersions": ["v1"],
                },
            }
        api.apply("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)

    def kueue_keeps(hook: Any) -> bool:
        return any(set(r.get("apiGroups") or ()) & KUEUE_GROUPS for r in hook.get("rules") or ())

    def jobset_keeps(hook: Any) -> bool:
        if any("pods" in (r.get("resources") or ()) for r in hook.get("rules") or ()):
            hook["objectSelector"] = JOBSET_POD_SELECTOR
        return True

    configs = _webhook_configs(
        load("kueue-webhooks.json"), "kueue", kueue_url, ca_bundle, kueue_keeps
    ) + _webhook_configs(
        load("jobset-webhooks.json"), "jobset", jobset_url, ca_bundle, jobset_keeps
    )
    for config in configs:
        plural = "mutatingwebhookconfigurations"
        if config["kind"] == "ValidatingWebhookConfiguration":
            plural = "validatingwebhookconfigurations"
        api.apply(f"/apis/admissionregistration.k8s.io/v1/{plural}", config)
    for ns in ("kueue-system", "jobset-system"):
        api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": ns}})  # fmt: skip
    return crds


def main() -> None:
    import time

    api = Api(sys.argv[1])
    if sys.argv[2:] == ["--kueue-queues"]:  # once Kueue answers: its webhooks check them
        for path, body in KUEUE_QUEUES:
            api.create(path, body)
        return
    for crd in CRDS:
        api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    crds = list(CRDS)
    if len(sys.argv) > 2:
        directory, ca_file, kueue_port, jobset_port = sys.argv[2:6]
        crds += _controllers(api, directory, ca_file, (int(kueue_port), int(jobset_port)))
    deadline = time.monotonic() + 30
    while not all(_established(api, c["metadata"]["name"]) for c in crds):
        if time.monotonic() > deadline:
            sys.exit("k8s-up: the CRDs were not established in 30 s")
        time.sleep(0.2)
    # a new CRD's REST path may answer 404 for a moment after it is established
    while api.call("GET", "/apis/scheduling.volcano.sh/v1beta1/queues")[0] == 404:
        if time.monotonic() > deadline:
            sys.exit("k8s-up: the Volcano queue API did not appear in 30 s")
        time.sleep(0.2)
    api.create("/apis/scheduling.volcano.sh/v1beta1/queues", DEFAULT_QUEUE)
    api.apply("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", LIMITED_ROLE)
    api.create(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", LIMITED_BINDING
    )


if __name__ == "__main__":
    main()
