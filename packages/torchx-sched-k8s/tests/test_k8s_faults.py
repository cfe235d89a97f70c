"""The kubernetes scheduler under the faults an API server shows: throttling (429), errors
and restarts (500, 503), connections reset, slow answers, watches and followed logs cut,
and watches ended with 410 Gone. The stand-in injects each; the scheduler must ride it
out with the right state and no log line lost or repeated, and must not retry what is
permanent (403, an unknown app, a create that may have arrived)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from torchx_testsupport.faults import count_lines, record_fault
from torchx_testsupport.k8s import NS, FakeKubernetes, app, cfg, replica_pod

from torchx.schedulers._kubernetes.client import KubernetesApiError
from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler
from torchx.specs import AppState, is_terminal

pytestmark = pytest.mark.faults


@pytest.fixture(autouse=True)
def _retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_RETRY_S", "20")  # the tests' default turns retries off


def _gets(fake: FakeKubernetes) -> int:
    return fake.count_requests(lambda method, _: method == "GET")


@pytest.mark.parametrize("fault", ["429", "500", "503", "reset", "slow"])
def test_status_rides_through(fake: FakeKubernetes, sched: KubernetesScheduler, fault: str) -> None:
    app_id = sched.submit(app(replicas=1), cfg("batch"))
    fake.set_pod(NS, replica_pod(fake, app_id, 0), "Running")
    fake.inject(fault, on="GET /apis/batch/v1/namespaces", times=2, delay_s=1.0)
    fake.inject(fault, on="GET /api/v1/namespaces/default/pods", times=1, delay_s=1.0)
    status = sched.describe(app_id)
    met = [kind for kind, _, _ in fake.faults_met]
    expected = 2 if fault == "slow" else 3  # a slow answer is an answer: not asked again
    survived = status is not None and status.state == AppState.RUNNING and met == [fault] * expected
    record_fault(
        "kubernetes", f"{fault} on the reads of `status`", survived=survived,
        outcome=f"{status.state.name if status else None} after {len(met)} faults",
    )  # fmt: skip
    assert survived, (status, met)


def _wait(sched: KubernetesScheduler, app_id: str) -> Any:
    """What ``Runner.wait`` does with a scheduler: describe, then wait for a change."""
    while True:
        status = sched.describe(app_id)
        if status is None or is_terminal(status.state):
            return status
        sched.wait_for_change(app_id, 60)


def test_wait_rides_through_dropped_watches_and_410(
    fake: FakeKubernetes, sched: KubernetesScheduler
) -> None:
    app_id = sched.submit(app(replicas=1), cfg("batch"))
    sched.describe(app_id)
    fake.inject("drop", on="WATCH", times=2)
    fake.inject("gone", on="WATCH", times=1)
    fake.inject("503", on="GET /apis/batch", times=1)
    final: list[Any] = []
    waiter = threading.Thread(target=lambda: final.append(_wait(sched, app_id)))
    waiter.start()
    # the fourth watch is the first one the stand-in lets through: the pod ends under it
    assert fake.wait_for_watch(3, timeout=60), fake.faults_met
    fake.set_pod(NS, replica_pod(fake, app_id, 0), "Succeeded")
    waiter.join(timeout=60)
    met = sorted(kind for kind, _, _ in fake.faults_met)
    state = final[0].state if final and final[0] else None
    survived = state == AppState.SUCCEEDED and met == ["503", "drop", "drop", "gone"]
    record_fault(
        "kubernetes", "watch dropped twice, 410 Gone, 503 during a wait",
        survived=survived, outcome=str(state.name if state else final),
    )  # fmt: skip
    assert survived, (final, met)


def test_log_follow_rides_through_cut_streams(
    fake: FakeKubernetes, sched: KubernetesScheduler
) -> None:
    app_id = sched.submit(app(replicas=1), cfg("volcano"))
    pod = replica_pod(fake, app_id, 0)
    fake.set_pod(NS, pod, "Running")
    lines = 40
    fake.log(NS, pod, "line-1\n")
    fake.inject("drop", on=f"LOG /api/v1/namespaces/{NS}/pods/{pod}/log", times=3)
    fake.inject("503", on=f"LOG /api/v1/namespaces/{NS}/pods/{pod}/log", times=1)

    def followed(method: str, path: str) -> bool:
        return method == "GET" and path.endswith(f"/{pod}/log")

    def write() -> None:
        # a batch of lines per request for the log: each stream is cut in the middle
        for batch in range(4):
            assert fake.wait_for_request(followed, after=batch)
            for i in range(2 + batch * 10, min(lines, 11 + batch * 10) + 1):
                fake.log(NS, pod, f"line-{i}\n")
        fake.end_log(NS, pod)
        fake.set_pod(NS, pod, "Succeeded")

    writer = threading.Thread(target=write)
    writer.start()
    out = list(sched.log_iter(app_id, "train", 0, should_tail=True))
    writer.join()
    lost, repeated = count_lines("".join(out), lines)
    met = [kind for kind, _, _ in fake.faults_met]
    survived = not lost and not repeated and met.count("drop") == 3
    record_fault(
        "kubernetes", "followed log cut 3 times, one 503", survived=survived, lost=lost,
        repeated=repeated, outcome=f"{len(out)} lines",
    )  # fmt: skip
    assert survived, (lost, repeated, met, out)


def test_permanent_errors_are_answered_at_once(
    fake: FakeKubernetes, sched: KubernetesScheduler
) -> None:
    """Retries never turn a permanent answer into a wait: one request, then the error."""
    before = _gets(fake)
    assert sched.describe(f"{NS}:batch:nope-123") is None  # unknown app: not found
    unknown_calls = _gets(fake) - before
    fake.forbid("list", "jobs.batch")
    before = _gets(fake)
    with pytest.raises(KubernetesApiError, match="forbidden") as forbidden:
        sched.describe(f"{NS}:batch:any-123")
    forbidden_calls = _gets(fake) - before
    fake.inject("503", on="POST /apis/batch/v1/namespaces/default/jobs$")  # not a dry run
    with pytest.raises(KubernetesApiError, match="503"):
        sched.submit(app(replicas=1), cfg("batch"))
    not_resent = not fake.store["jobs"]  # a second create would have made the Job
    survived = (
        unknown_calls == 1 and forbidden_calls == 1 and forbidden.value.status == 403 and not_resent
    )
    record_fault(
        "kubernetes", "403, unknown app, 503 on a create (permanent: not retried)",
        survived=survived,
        outcome=f"one request each; the create not sent again: {not_resent}",
    )  # fmt: skip
    assert unknown_calls == 1 and forbidden_calls == 1, (unknown_calls, forbidden_calls)
    assert not_resent, "a create that may have arrived is not sent again"


def test_a_throttled_create_is_sent_again(fake: FakeKubernetes, sched: KubernetesScheduler) -> None:
    fake.inject("429", on="POST /apis/batch.volcano.sh", times=2)
    app_id = sched.submit(app(replicas=1), cfg("volcano"))
    assert len(fake.store["vcjobs"]) == 1 and sched.describe(app_id) is not None


def test_log_follow_cut_inside_bursts_that_share_one_stamp(
    fake: FakeKubernetes, sched: KubernetesScheduler
) -> None:
    """Each write of the program is one burst of lines under one stamp (the stand-in stamps
    a write as the runtime stamps lines read together), ending in identical lines; the
    followed stream is cut inside a line, ended in good order while the container runs
    (an API server restart) and dropped, at every place a burst can be cut."""
    app_id = sched.submit(app(replicas=1), cfg("volcano"))
    pod = replica_pod(fake, app_id, 0)
    fake.set_pod(NS, pod, "Running")
    for kind in ("split", "end", "drop", "split", "end", "split"):
        fake.inject(kind, on=f"LOG /api/v1/namespaces/{NS}/pods/{pod}/log", times=1)
    written: list[str] = []

    def followed(method: str, path: str) -> bool:
        return method == "GET" and path.endswith(f"/{pod}/log")

    def write() -> None:
        for burst in range(7):
            assert fake.wait_for_request(followed, after=burst)
            text = "".join(f"burst-{burst} line-{i}\n" for i in range(20)) + "same\n" * 5
            fake.log(NS, pod, text, at=1_800_000_000 + burst // 2)  # pairs share one stamp
            written.append(text)
        fake.end_log(NS, pod)
        fake.set_pod(NS, pod, "Succeeded")

    writer = threading.Thread(target=write)
    writer.start()
    out = list(sched.log_iter(app_id, "train", 0, should_tail=True))
    writer.join()
    got = "".join(line.split(" ", 1)[1] for line in out)  # each line behind its stamp
    met = sorted(kind for kind, _, _ in fake.faults_met)
    assert met == ["drop", "end", "end", "split", "split", "split"], met
    assert got == "".join(written)
