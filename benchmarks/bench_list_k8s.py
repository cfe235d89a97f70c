"""``torchx list -s kubernetes`` with thousands of jobs, against the API stand-in.

The stand-in of the tests (tools/testsupport, the real ``kubernetes`` client's wire format)
holds N TorchX jobs (half Volcano jobs, half batch Jobs); at N/4 and N this times,
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
from pathlib import Path

from _harness import bench_env, compile_sources, interleaved, verdict
from torchx_testsupport.k8s import FakeKubernetes, fill_torchx_jobs

from torchx.schedulers._kubernetes.render import LABEL_KIND, LABEL_MANAGED_BY, MANAGED_BY

OURS = Path(sys.executable).parent
NS = "default"
# the scheduler's own label selectors (an earlier hand-written copy had drifted)
SELECTORS = [
    f"{LABEL_MANAGED_BY}={MANAGED_BY}",
    f"{LABEL_MANAGED_BY}={MANAGED_BY},{LABEL_KIND}=batch",
]

FLOOR = textwrap.dedent(
    """
    import json, sys, urllib.parse, urllib.request
    base, token = sys.argv[1], sys.argv[2]
    paths = [
        "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs",
        "/apis/batch/v1/namespaces/default/jobs",
    ]
    selectors = sys.argv[3:5]
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
            page = json.load(urllib.request.urlopen(request))
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
    fake = FakeKubernetes().start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-k8s-list-") as tmp:
            kubeconfig = fake.write_kubeconfig(os.path.join(tmp, "config"))
            os.environ["KUBECONFIG"] = kubeconfig
            env = bench_env({**os.environ, "TORCHX_HOME": os.path.join(tmp, "home")})
            from torchx_testsupport.k8s import TOKEN

            results = {}
            for size in (args.jobs // 4, args.jobs):
                fill_torchx_jobs(fake, size)
                samples = interleaved(
                    {
                        "floor": [sys.executable, "-c", FLOOR, fake.url, TOKEN, *SELECTORS],
                        "ours": [str(OURS / "torchx"), "list", "-s", "kubernetes",
                                 "-cfg", f"namespace={NS}"],
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
            floor = (big["floor"] - small["floor"]) / span
            growth = ours / floor if floor > 0 else float("inf")
            print(
                f"growth per job: ours {ours * 1e6:.0f} us, bare {floor * 1e6:.0f} us"
                f" ({growth:.2f}x, <= 2) {verdict(growth <= 2)}"
            )
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
