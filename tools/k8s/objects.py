"""Creates the test cluster's own objects through its API (tools/k8s-up.sh; idempotent):

- Volcano's CustomResourceDefinitions (batch.volcano.sh Jobs, scheduling.volcano.sh Queues
  and PodGroups) and its ``default`` queue. Volcano's controllers cannot be built here (the
  Go module proxy refuses volcano.sh/volcano), so its jobs are stored, listed, described
  and deleted by the real API server, but no pod runs for them. Their schemas keep unknown
  fields: the server checks the envelope, not Volcano's own validation.
- The limited user's rights (``torchx-limited``): read jobs, pods and their logs in
  ``default``, nothing else (no create, no watch), for the tests of refused requests.

Uses only the standard library: it runs with the machine's ``python3``.
Usage: ``objects.py ADMIN_KUBECONFIG``.
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


def _established(api: Api, name: str) -> bool:
    _, crd = api.call("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    conditions = crd.get("status", {}).get("conditions", [])
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def main() -> None:
    import time

    api = Api(sys.argv[1])
    for crd in CRDS:
        api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    deadline = time.monotonic() + 30
    while not all(_established(api, c["metadata"]["name"]) for c in CRDS):
        if time.monotonic() > deadline:
            sys.exit("k8s-up: Volcano's CRDs were not established in 30 s")
        time.sleep(0.2)
    # a new CRD's REST path may answer 404 for a moment after it is established
    while api.call("GET", "/apis/scheduling.volcano.sh/v1beta1/queues")[0] == 404:
        if time.monotonic() > deadline:
            sys.exit("k8s-up: the Volcano queue API did not appear in 30 s")
        time.sleep(0.2)
    api.create("/apis/scheduling.volcano.sh/v1beta1/queues", DEFAULT_QUEUE)
    api.create("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", LIMITED_ROLE)
    api.create(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", LIMITED_BINDING
    )


if __name__ == "__main__":
    main()
