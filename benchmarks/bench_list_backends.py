"""``torchx list`` and ``torchx status`` as the number of jobs grows, on every backend that
runs here besides Slurm (``bench_list_scale.py``) and Kubernetes (``bench_list_k8s.py``).

For each backend, N jobs are made for real through the Runner (local_cwd: as many as its
retention keeps, 100; local_docker: 200 containers; aws_batch: 2,000 jobs in moto, which
is told to finish them without Docker for the run; ray: 60 jobs on the two-node cluster).
At N/4 and at N it times, interleaved (medians):

(a) the backend's own listing: an interpreter start plus the bare call (local_cwd: read
    every app's state file; local_docker: ``docker ps -a`` with TorchX's label; aws_batch:
    boto3 paging ListJobs; ray: one GET of the Jobs API);
(b) ``torchx list -s BACKEND`` (ours);
(c) ``torchx status`` of the first job, and the bare status call beside it.

Targets (issue 26): from N/4 to N, (b) grows at most 2x as fast per job as (a); (c) does
not grow with N. A report, not a test: always exits 0. Needs the backends up; run it
alone (it resets moto at the end).

    .venv/bin/python benchmarks/bench_list_backends.py [--only local_cwd,...] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import time
import urllib.request
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from _harness import bench_env, compile_sources, interleaved, verdict
from torchx_testsupport.batch import AWS_ENV, ENDPOINT, create_queue, moto_runs_containers
from torchx_testsupport.docker import IMAGE

OURS = Path(sys.executable).parent
PY = str(OURS / "python")
TORCHX = str(OURS / "torchx")

LOCAL_OWN = textwrap.dedent(
    """
    import json, os, sys
    root = os.path.join(sys.argv[1], "local_cwd")
    for name in os.listdir(root):
        with open(os.path.join(root, name, "state.json")) as f:
            json.load(f)
    """
)
BATCH_OWN = textwrap.dedent(
    """
    import sys, boto3
    pages = boto3.client("batch").get_paginator("list_jobs").paginate(
        jobQueue=sys.argv[1], filters=[{"name": "AFTER_CREATED_AT", "values": ["0"]}])
    sum(len(p["jobSummaryList"]) for p in pages)
    """
)
BATCH_OWN_TAGS = textwrap.dedent(
    """
    import sys, boto3
    client = boto3.client("batch")
    pages = client.get_paginator("list_jobs").paginate(
        jobQueue=sys.argv[1], filters=[{"name": "AFTER_CREATED_AT", "values": ["0"]}])
    ids = [s["jobId"] for p in pages for s in p["jobSummaryList"]]
    for i in range(0, len(ids), 100):
        client.describe_jobs(jobs=ids[i:i + 100])
    """
)
BATCH_OWN_STATUS = textwrap.dedent(
    """
    import sys, boto3
    boto3.client("batch").describe_jobs(jobs=[sys.argv[1]])
    """
)
HTTP_GET = "import json, sys, urllib.request; json.load(urllib.request.urlopen(sys.argv[1]))"


class Backend(ABC):
    """How to make N jobs on one backend and what to time against what."""

    def __init__(self, name: str, sizes: tuple[int, int], env: dict[str, str]) -> None:
        self.name, self.sizes, self.env = name, sizes, env
        self.handles: list[str] = []

    @abstractmethod
    def make(self, runner: Any, count: int) -> None:
        """Submits ``count`` more jobs, their handles kept in ``handles``."""

    @abstractmethod
    def own_list(self) -> list[str]:
        """The backend's own listing, as a command."""

    @abstractmethod
    def own_status(self) -> list[str]:
        """The backend's own status of the first job, as a command."""

    def list_args(self) -> list[str]:
        return []

    def more_floors(self) -> dict[str, list[str]]:
        """Other bare calls that answer what ``list`` must know (shown, and judged against)."""
        return {}

    def setup(self) -> None:
        """Before any job is made (nothing for most backends)."""
        return

    def cleanup(self, runner: Any) -> None:
        """After the measurements: the jobs are removed where they hold resources."""
        for handle in self.handles:
            runner.delete(handle)

    def settle(self, runner: Any) -> None:
        """Waits until every job made so far has ended (lists then hold finished jobs)."""
        for handle in self.handles:
            runner.wait(handle, wait_interval=1)


def _app(name: str, image: str, *cmd: str) -> Any:
    from torchx.specs import AppDef, Resource, Role

    res = Resource(cpu=1, gpu=0, memMB=128)
    return AppDef(name, [Role("r", image, entrypoint=cmd[0], args=list(cmd[1:]), resource=res)])


class LocalCwd(Backend):
    def cleanup(self, runner: Any) -> None:
        pass  # finished apps in a temporary TORCHX_HOME: gone with it

    def make(self, runner: Any, count: int) -> None:
        for _ in range(count):
            self.handles.append(runner.run(_app("bench", os.getcwd(), "true"), "local_cwd"))

    def own_list(self) -> list[str]:
        return [PY, "-c", LOCAL_OWN, self.env["TORCHX_HOME"]]

    def own_status(self) -> list[str]:
        path = Path(self.env["TORCHX_HOME"], "local_cwd", self.handles[0].rpartition("/")[2])
        return [PY, "-c", f"import json; json.load(open({str(path / 'state.json')!r}))"]


class LocalDocker(Backend):
    def make(self, runner: Any, count: int) -> None:
        for _ in range(count):
            self.handles.append(runner.run(_app("bench", IMAGE, "true"), "local_docker"))

    def own_list(self) -> list[str]:
        return ["docker", "ps", "-a", "--filter", "label=torchx.pytorch.org/app-id",
                "--format", "{{.Names}} {{.State}}"]  # fmt: skip

    def own_status(self) -> list[str]:
        app_id = self.handles[0].rpartition("/")[2]
        return ["docker", "ps", "-a", "--filter", f"label=torchx.pytorch.org/app-id={app_id}"]


class AwsBatch(Backend):
    def __init__(self, name: str, sizes: tuple[int, int], env: dict[str, str]) -> None:
        super().__init__(name, sizes, env)
        self.queue = f"bench-{int(time.time())}"

    def make(self, runner: Any, count: int) -> None:
        cfg = {"queue": self.queue}
        for _ in range(count):
            self.handles.append(runner.run(_app("bench", IMAGE, "true"), "aws_batch", cfg))

    def setup(self) -> None:
        moto_runs_containers(False)  # jobs end at once, without a container each
        create_queue(self.queue)

    def cleanup(self, runner: Any) -> None:
        moto_runs_containers(True)
        # thousands of jobs would slow every later call to the emulator: it forgets all
        request = urllib.request.Request(f"{ENDPOINT}/moto-api/reset", method="POST")
        urllib.request.urlopen(request, timeout=60).read()

    def settle(self, runner: Any) -> None:
        """Until moto has run every job (its job threads would load the measurements)."""
        import boto3

        client = boto3.client("batch")
        pages = client.get_paginator("list_jobs")
        while True:
            done = sum(
                len(page["jobSummaryList"])
                for status in ("SUCCEEDED", "FAILED")
                for page in pages.paginate(jobQueue=self.queue, jobStatus=status)
            )
            if done >= len(self.handles):
                return
            time.sleep(1)

    def more_floors(self) -> dict[str, list[str]]:
        # the tags that tell TorchX's jobs from others are only in DescribeJobs
        return {"own list+describe": [PY, "-c", BATCH_OWN_TAGS, self.queue]}

    def own_list(self) -> list[str]:
        return [PY, "-c", BATCH_OWN, self.queue]

    def own_status(self) -> list[str]:
        import boto3

        queue, _, name = self.handles[0].rpartition("/")[2].partition(":")
        found = boto3.client("batch").list_jobs(
            jobQueue=queue, filters=[{"name": "JOB_NAME", "values": [name]}]
        )["jobSummaryList"]
        return [PY, "-c", BATCH_OWN_STATUS, found[0]["jobId"]]

    def list_args(self) -> list[str]:
        return ["-cfg", f"queue={self.queue}"]


class Ray(Backend):
    def make(self, runner: Any, count: int) -> None:
        for _ in range(count):
            self.handles.append(runner.run(_app("bench", "unused", "true"), "ray"))

    def own_list(self) -> list[str]:
        return [PY, "-c", HTTP_GET, "http://127.0.0.1:8265/api/jobs/"]

    def own_status(self) -> list[str]:
        from torchx.schedulers._ray.client import split_app_id

        _, job = split_app_id(self.handles[0].rpartition("/")[2])  # `ADDRESS-JOB` -> JOB
        return [PY, "-c", HTTP_GET, f"http://127.0.0.1:8265/api/jobs/{job}"]


def measure(backend: Backend, runs: int) -> dict[str, float]:
    commands = {
        "own list": backend.own_list(),
        **backend.more_floors(),
        "torchx list": [TORCHX, "list", "-s", backend.name, *backend.list_args()],
        "own status": backend.own_status(),
        "torchx status": [TORCHX, "status", backend.handles[0]],
    }
    samples = interleaved(commands, runs, backend.env)
    return {name: statistics.median(values) for name, values in samples.items()}


def report(backend: Backend, results: dict[int, dict[str, float]]) -> None:
    small_n, big_n = backend.sizes
    small, big = results[small_n], results[big_n]
    floors = ["own list", *backend.more_floors()]
    for n in (small_n, big_n):
        r = results[n]
        own = ", ".join(f"{name} {r[name] * 1e3:7.1f} ms" for name in floors)
        print(
            f"{backend.name:<13} N={n:5d}: {own}, torchx list {r['torchx list'] * 1e3:7.1f} ms;"
            f" own status {r['own status'] * 1e3:6.1f} ms, torchx status"
            f" {r['torchx status'] * 1e3:6.1f} ms"
        )
    span = big_n - small_n
    per_ours = (big["torchx list"] - small["torchx list"]) / span
    for name in floors:
        per_own = (big[name] - small[name]) / span
        # a floor that does not grow measurably (noise): compare against 10 us per job
        growth = per_ours / max(per_own, 10e-6)
        print(
            f"{backend.name:<13} list growth per job: ours {per_ours * 1e6:.0f} us, {name}"
            f" {per_own * 1e6:.0f} us ({growth:.2f}x, <= 2) {verdict(growth <= 2)}"
        )
    status_growth = big["torchx status"] / small["torchx status"]
    print(
        f"{backend.name:<13} status N/4 -> N: {status_growth:.2f}x (<= 1.2)"
        f" {verdict(status_growth <= 1.2)}"
    )


BACKENDS: dict[str, tuple[type[Backend], tuple[int, int]]] = {
    "local_cwd": (LocalCwd, (25, 100)),
    "local_docker": (LocalDocker, (50, 200)),
    "aws_batch": (AwsBatch, (500, 2000)),
    "ray": (Ray, (15, 60)),
}


def run_backend(name: str, runs: int, base_env: dict[str, str]) -> None:
    from torchx.runner import get_runner

    kind, sizes = BACKENDS[name]
    env = dict(base_env)
    if name == "aws_batch":
        env.update(AWS_ENV)
    os.environ.update(env)
    backend = kind(name, sizes, env)
    results: dict[int, dict[str, float]] = {}
    with get_runner() as runner:
        try:
            backend.setup()
            done = 0
            for size in sizes:
                started = time.monotonic()
                backend.make(runner, size - done)
                backend.settle(runner)
                done = size
                print(f"{name}: {size} jobs made ({time.monotonic() - started:.0f} s)", flush=True)
                results[size] = measure(backend, runs)
        finally:
            backend.cleanup(runner)
    report(backend, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BACKENDS))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    compile_sources(PY)
    with tempfile.TemporaryDirectory(prefix="bench-list-") as tmp:
        env = {k: v for k, v in bench_env().items() if not k.startswith("TORCHX")}
        env["TORCHX_HOME"] = os.path.join(tmp, "home")
        work = Path(tmp, "work")
        work.mkdir()
        os.chdir(work)
        for name in args.only.split(","):
            run_backend(name.strip(), args.runs, env)


if __name__ == "__main__":
    main()
