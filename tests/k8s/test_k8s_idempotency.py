"""Exactly-once submission on the real Kubernetes cluster: every app of a key has the
key's name, so the API server itself refuses a second Job of it (409), and the runner
finds the first."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport.idempotency import check_a_key_is_each_users, per_user_key
from torchx_testsupport.k8s.running import batch, finished, sh
from torchx_testsupport.processes import concurrent_handles

from torchx.runner import get_runner
from torchx.specs import AppState

pytestmark = pytest.mark.timeout(300)
TORCHX = str(Path(sys.executable).parent / "torchx")


def _jobs(kube: Any, namespace: str) -> list[str]:
    return [j.metadata.name for j in kube.batch.list_namespaced_job(namespace).items]


def test_a_second_run_with_the_key_returns_the_first_handle(kube: Any, namespace: str) -> None:
    app = sh('echo "run=$TORCHX_RUN_ID"')
    with get_runner() as runner:
        first = runner.run(app, "kubernetes", batch(namespace), idempotency_key="k8s-k1")
        status = runner.wait(first, wait_interval=0.5)
        assert status is not None and finished(status) and status.state == AppState.SUCCEEDED
        again = runner.run(app, "kubernetes", batch(namespace), idempotency_key="k8s-k1")
        assert again == first and runner.found_by_idempotency_key(again)
        assert [line.split(" ", 1)[1] for line in runner.log_lines(first, "sh", 0)] == [
            "run=k8s-k1\n"
        ]
    assert len(_jobs(kube, namespace)) == 1


def test_another_host_meets_the_name_the_api_server_refuses(kube: Any, namespace: str) -> None:
    """A second submission that did not see the first (another host: no shared lock,
    and its look came too early) is refused by the API server; the run finds the app."""
    app = sh("sleep 20")
    with get_runner() as runner:
        first = runner.run(app, "kubernetes", batch(namespace), idempotency_key="k8s-race")
        sched = runner._scheduler("kubernetes")
        real_find = sched.find_by_idempotency_key
        looks: list[str] = []

        def too_early(key: str, cfg: Any = None) -> Any:
            looks.append(key)
            return None if len(looks) == 1 else real_find(key, cfg)

        sched.find_by_idempotency_key = too_early
        try:
            second = runner.run(app, "kubernetes", batch(namespace), idempotency_key="k8s-race")
        finally:
            del sched.find_by_idempotency_key
        assert second == first and len(looks) == 2
        runner.cancel(first)
    assert len(_jobs(kube, namespace)) == 1


def test_concurrent_runs_with_one_key_submit_once(
    kube: Any, namespace: str, tmp_path: Path
) -> None:
    image = sh("true").roles[0].image
    handles = concurrent_handles(
        [
            TORCHX,
            "run",
            "--workspace",
            "",
            "--idempotency-key",
            "k8s-together",
            "-s",
            "kubernetes",
            "-cfg",
            f"namespace={namespace},queue=-,job_type=batch",
            "utils.sh",
            "--image",
            image,
            "--memMB",
            "64",
            "sleep",
            "20",
        ],
        3,
        cwd=tmp_path,
    )
    assert len(handles) == 1
    assert len(_jobs(kube, namespace)) == 1


def test_a_key_is_each_users_on_a_shared_namespace(
    kube: Any, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two users of one namespace run the same key: neither's run takes the other's Job."""
    key = per_user_key()
    with get_runner() as runner:
        check_a_key_is_each_users(
            lambda: runner.run(sh("true"), "kubernetes", batch(namespace), idempotency_key=key),
            monkeypatch,
        )
    assert len(_jobs(kube, namespace)) == 2
