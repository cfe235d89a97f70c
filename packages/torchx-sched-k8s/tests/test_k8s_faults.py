"""The kubernetes scheduler under faults, against the API stand-in: what needs a Volcano
controller or log timestamps set by the test. The rest (throttling, errors, resets, slow
answers, dropped and expired watches, cut log follows on real pods) runs on the real
cluster through a fault proxy: tests/k8s/test_k8s_faults.py."""

from __future__ import annotations

import threading

import pytest
from torchx_testsupport.faults import record_fault
from torchx_testsupport.k8s import NS, FakeKubernetes, app, cfg, replica_pod

from torchx.schedulers._kubernetes.client import KubernetesApiError
from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler

pytestmark = pytest.mark.faults


@pytest.fixture(autouse=True)
def _retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_RETRY_S", "20")  # the tests' default turns retries off


def _gets(fake: FakeKubernetes) -> int:
    return fake.count_requests(lambda method, _: method == "GET")


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
