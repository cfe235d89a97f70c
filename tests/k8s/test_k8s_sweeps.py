"""Sweeps on the real Kubernetes cluster: one Indexed Job per sweep (completion index =
element), its ``parallelism`` for ``max_parallel``, each element's state, values and
log, a retry of the failed elements as a new Job of two."""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import pytest
from torchx_testsupport.k8s.cluster import IMAGE
from torchx_testsupport.k8s.running import batch
from torchx_testsupport.sweep import ARRAY_2X2, COMPONENT, LOG_2X2, names_a_failed_element

from torchx.runner import get_runner
from torchx.specs import AppState

pytestmark = pytest.mark.timeout(300)


def _jobs(kube: Any, namespace: str) -> list[Any]:
    return list(kube.batch.list_namespaced_job(namespace).items)


def test_a_2x2_sweep_is_one_indexed_job_and_its_retry_another(kube: Any, namespace: str) -> None:
    with get_runner() as runner:
        handle = runner.run_sweep(
            COMPONENT,
            {"image": IMAGE, "fail_batch": 16},
            {"lr": ["0.1", "0.2"], "batch": ["8", "16"]},
            "kubernetes",
            batch(namespace),
            max_parallel=2,
        )
        [job] = _jobs(kube, namespace)
        assert (job.spec.completion_mode, job.spec.completions, job.spec.parallelism) == (
            "Indexed",
            4,
            2,
        )
        status = runner.wait(handle, wait_interval=0.5)
        assert status is not None and status.state == AppState.FAILED
        assert status.array is not None
        assert status.array.to_json() == ARRAY_2X2
        assert status.failure is not None
        assert names_a_failed_element(status.failure.replica_id, status.failure.message)
        for i, printed in enumerate(LOG_2X2):
            lines = [line.split(" ", 1)[1] for line in runner.log_lines(handle, "train", i)]
            assert lines == [f"{printed}\n"], lines

        retried = runner.retry_failed(handle)
        again = runner.wait(retried, wait_interval=0.5)
        assert again is not None and again.array is not None
        assert [(e.index, e.values) for e in again.array.elements] == [
            (1, {"lr": "0.1", "batch": "16"}),
            (3, {"lr": "0.2", "batch": "16"}),
        ]
        new = [j for j in _jobs(kube, namespace) if j.metadata.name != job.metadata.name]
        assert [j.spec.completions for j in new] == [2]


def test_max_parallel_is_the_jobs_parallelism(kube: Any, namespace: str) -> None:
    with get_runner() as runner:
        handle = runner.run_sweep(
            COMPONENT,
            {"image": IMAGE, "hold": 2},
            {"lr": ["0.1", "0.2", "0.3"]},
            "kubernetes",
            batch(namespace),
            max_parallel=1,
        )
        status = runner.wait(handle, wait_interval=0.5)
        assert status is not None and status.state == AppState.SUCCEEDED
    spans = []
    for pod in kube.core.list_namespaced_pod(namespace).items:
        [container] = pod.status.container_statuses
        ended = container.state.terminated
        spans.append((ended.started_at, ended.finished_at))
    spans.sort()
    assert len(spans) == 3
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end - dt.timedelta(seconds=1), spans  # one after another


def test_a_sweep_of_1000_is_one_job(kube: Any, namespace: str) -> None:
    """One API call for a thousand elements: a single Indexed Job; status reads them all."""
    with get_runner() as runner:
        handle = runner.run_sweep(
            COMPONENT,
            {"image": IMAGE, "hold": 60},
            {"batch": [str(n) for n in range(1000)]},
            "kubernetes",
            batch(namespace),
            max_parallel=1,
        )
        [job] = _jobs(kube, namespace)
        assert (job.spec.completions, job.spec.parallelism) == (1000, 1)
        status = runner.status(handle)
        assert status is not None and status.array is not None
        assert len(status.array.elements) == 1000
        assert status.array.elements[999].values == {"batch": "999"}
        runner.cancel(handle)
