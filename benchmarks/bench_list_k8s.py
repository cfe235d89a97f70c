"""``torchx list -s kubernetes`` with thousands of jobs, on the real test cluster.

A namespace of the cluster of tools/k8s-up.sh (a real kube-apiserver 1.36 on etcd) holds
N TorchX jobs (half Volcano jobs, half suspended batch Jobs); at N/4 and N this times,
interleaved (medians):

(a) the backend's own listing: an interpreter start that GETs both job lists with the
    same label selectors in pages of 500 (``limit`` + ``continue``), stdlib only;
(b) ``torchx list -s kubernetes`` (the same pages through the kubernetes client).

Target (issue 26): from N/4 to N, (b) grows at most 2x as fast per job as (a). Also shows
(b)/(a). A report, not a test: always exits 0.

    .venv/bin/python benchmarks/bench_list_k8s.py [--jobs 5000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

import yaml
from _harness import bench_env, compile_sources, interleaved, verdict
from torchx_testsupport.k8s.cluster import ADMIN, STATE, create_torchx_jobs

from torchx.schedulers._kubernetes.request import LABEL_KIND, LABEL_MANAGED_BY, MANAGED_BY

OURS = Path(sys.executable).parent
# the scheduler's own label selectors (an earlier hand-written copy had drifted)
SELECTORS = [
    f"{LABEL_MANAGED_BY}={MANAGED_BY}",
    f"{LABEL_MANAGED_BY}={MANAGED_BY},{LABEL_KIND}=batch",
]

FLOOR = textwrap.dedent(
    """
    import json, ssl, sys, urllib.parse, urllib.request
    base, token, cafile, ns = sys.argv[1:5]
    tls = ssl.create_default_context(cafile=cafile)
    paths = [
        f"/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs",
        f"/apis/batch/v1/namespaces/{ns}/jobs",
    ]
    selectors = sys.argv[5:7]
    count = 0
    for path, selector in zip(paths, selectors):
        token_ = ""
        while True:
            query = {"labelSelector": selector, "limit": "500"}
            if token_:
                query["continue"] = token_
            request = urllib.request.Request(
                base + path + "?" + urllib.parse.urlencode(query),
                headers={"Authorization": "Bearer " + token},
            )
            page = json.load(urllib.request.urlopen(request, context=tls))
            count += len(page["items"])
            token_ = page["metadata"].get("continue")
            if not token_:
                break
    """
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    compile_sources(sys.executable)
    from kubernetes import client, config

    core = client.CoreV1Api(config.new_client_from_config(str(ADMIN)))
    ns = f"bench-list-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": ns}})
    server = yaml.safe_load(ADMIN.read_text())["clusters"][0]["cluster"]["server"]
    token = (STATE / "admin.token").read_text().strip()
    floor = [sys.executable, "-c", FLOOR, server, token, str(STATE / "pki" / "ca.crt"), ns]
    try:
        with tempfile.TemporaryDirectory(prefix="bench-k8s-list-") as tmp:
            env = bench_env({**os.environ, "KUBECONFIG": str(ADMIN),
                             "TORCHX_HOME": os.path.join(tmp, "home")})  # fmt: skip
            results = {}
            made = 0
            for size in (args.jobs // 4, args.jobs):
                half = (size - made) // 2
                create_torchx_jobs(ns, volcano=half, batch=size - made - half, first=made)
                made = size
                samples = interleaved(
                    {
                        "floor": [*floor, *SELECTORS],
                        "ours": [str(OURS / "torchx"), "list", "-s", "kubernetes",
                                 "-cfg", f"namespace={ns}"],
                    },
                    args.runs,
                    env,
                )  # fmt: skip
                results[size] = {k: statistics.median(v) for k, v in samples.items()}
                r = results[size]
                print(
                    f"N={size:5d}: bare HTTP {r['floor'] * 1e3:7.1f} ms  torchx list"
                    f" {r['ours'] * 1e3:7.1f} ms ({r['ours'] / r['floor']:.2f}x)"
                )
            small, big = results[args.jobs // 4], results[args.jobs]
            span = args.jobs - args.jobs // 4
            ours = (big["ours"] - small["ours"]) / span
            floor_growth = (big["floor"] - small["floor"]) / span
            growth = ours / floor_growth if floor_growth > 0 else float("inf")
            print(
                f"growth per job: ours {ours * 1e6:.0f} us, bare {floor_growth * 1e6:.0f} us"
                f" ({growth:.2f}x, <= 2) {verdict(growth <= 2)}"
            )
    finally:
        core.delete_namespace(ns)


if __name__ == "__main__":
    main()
