"""What the moto emulator cannot show, against AWS-shaped answers (see fixtures/
aws_responses.json: written from the AWS API reference, not captured from an account).

Real boto3 clients answer through botocore's Stubber, which checks every request against
the Batch/Logs API model and every answer against the documented response shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchx.schedulers.aws_batch_scheduler import AWSBatchScheduler, create_scheduler
from torchx.specs import AppState

RESPONSES: dict[str, Any] = json.loads(
    (Path(__file__).parent / "fixtures" / "aws_responses.json").read_text()
)
JOB = "5f5bd1d6-0d5c-4f4f-9c31-6b1b5c1e9a10"


@pytest.fixture
def stubbed() -> Iterator[tuple[AWSBatchScheduler, Any, Any]]:
    import boto3
    from botocore.stub import Stubber

    session = boto3.session.Session(
        aws_access_key_id="x", aws_secret_access_key="x", region_name="eu-west-1"
    )
    batch, logs = session.client("batch"), session.client("logs")
    with Stubber(batch) as batch_stub, Stubber(logs) as logs_stub:
        yield create_scheduler("t", client=batch, log_client=logs), batch_stub, logs_stub
        batch_stub.assert_no_pending_responses()
        logs_stub.assert_no_pending_responses()


def _find(stub: Any, queue: str, name: str, listing: str) -> None:
    stub.add_response(
        "list_jobs",
        RESPONSES[listing],
        {"jobQueue": queue, "filters": [{"name": "JOB_NAME", "values": [name]}]},
    )


def test_per_node_states_from_node_jobs_in_two_calls(stubbed: Any) -> None:
    sched, batch, _ = stubbed
    _find(batch, "gpu", "trainer-bx3k9", "list_mnp")
    batch.add_response(
        "describe_jobs",
        RESPONSES["describe_mnp"],
        {"jobs": [JOB, f"{JOB}#0", f"{JOB}#1", f"{JOB}#2"]},
    )
    desc = sched.describe("gpu:trainer-bx3k9")
    assert desc is not None
    assert desc.state == AppState.RUNNING
    assert [r.name for r in desc.roles] == ["master", "worker"]
    assert [r.num_replicas for r in desc.roles] == [1, 2]
    assert desc.roles[1].resource.gpu == 1
    master, worker = desc.roles_statuses
    assert [(r.id, r.state, r.hostname) for r in master.replicas] == [
        (0, AppState.RUNNING, "10.0.1.17")
    ]
    assert [(r.id, r.state) for r in worker.replicas] == [
        (0, AppState.SUCCEEDED),
        (1, AppState.FAILED),
    ]
    assert "OutOfMemoryError" in worker.replicas[1].structured_error_msg
    assert "exit code 137" in worker.replicas[1].structured_error_msg
    assert desc.ui_url == (
        f"https://eu-west-1.console.aws.amazon.com/batch/home?region=eu-west-1#jobs/mnp-job/{JOB}"
    )


def test_unpullable_image_says_what_to_fix(stubbed: Any) -> None:
    sched, batch, _ = stubbed
    _find(batch, "q", "echo-k3j2", "list_pull_failed")
    batch.add_response(
        "describe_jobs", RESPONSES["describe_pull_failed"], {"jobs": ["7a1e", "7a1e#0"]}
    )
    desc = sched.describe("q:echo-k3j2")
    assert desc is not None and desc.state == AppState.FAILED
    assert desc.msg.startswith("Task failed to start; CannotPullContainerError")
    assert "push it to a registry" in desc.msg and "image_repo" in desc.msg
    assert "\n" not in desc.msg


def test_waiting_job_reports_why(stubbed: Any) -> None:
    sched, batch, _ = stubbed
    summary = {
        "jobSummaryList": [
            {"jobArn": "arn:aws:batch:us-east-1:1:job/9b2f", "jobId": "9b2f", "jobName": "big-x1",
             "status": "RUNNABLE", "createdAt": 1}
        ]
    }  # fmt: skip
    batch.add_response(
        "list_jobs",
        summary,
        {"jobQueue": "q", "filters": [{"name": "JOB_NAME", "values": ["big-x1"]}]},
    )
    batch.add_response("describe_jobs", RESPONSES["describe_runnable"], {"jobs": ["9b2f"]})
    batch.add_response("describe_jobs", {"jobs": []}, {"jobs": ["9b2f#0", "9b2f#1"]})
    desc = sched.describe("q:big-x1")
    assert desc is not None and desc.state == AppState.PENDING
    assert desc.msg.startswith("MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT")
    assert [r.state for r in desc.roles_statuses[0].replicas] == [AppState.PENDING] * 2


def test_logs_read_the_node_stream(stubbed: Any) -> None:
    sched, batch, logs = stubbed
    _find(batch, "gpu", "trainer-bx3k9", "list_mnp")
    batch.add_response(
        "describe_jobs",
        RESPONSES["describe_mnp"],
        {"jobs": [JOB, f"{JOB}#0", f"{JOB}#1", f"{JOB}#2"]},
    )
    # no second DescribeJobs: the node's stream is known from the first
    stream = {
        "logGroupName": "/aws/batch/job",
        "logStreamName": "trainer-bx3k9/default/0a1b2c3d4e5f",
        "limit": 10000,
        "startFromHead": True,
    }
    logs.add_response("get_log_events", RESPONSES["log_node0_page1"], stream)
    logs.add_response(
        "get_log_events", RESPONSES["log_node0_end"], {**stream, "nextToken": "f/0001"}
    )
    lines = list(sched.log_iter("gpu:trainer-bx3k9", "master", 0, regex="loss 0\\.5"))
    assert lines == ["epoch 2 loss 0.5\n"]


def test_log_of_unknown_role_or_replica(stubbed: Any) -> None:
    sched, batch, _ = stubbed
    for _ in range(2):
        _find(batch, "gpu", "trainer-bx3k9", "list_mnp")
        batch.add_response(
            "describe_jobs",
            RESPONSES["describe_mnp"],
            {"jobs": [JOB, f"{JOB}#0", f"{JOB}#1", f"{JOB}#2"]},
        )
    with pytest.raises(ValueError, match="no role 'ps'; its roles are: master, worker"):
        list(sched.log_iter("gpu:trainer-bx3k9", "ps"))
    with pytest.raises(ValueError, match=r"replicas 0\.\.1; there is no replica 5"):
        list(sched.log_iter("gpu:trainer-bx3k9", "worker", 5))


def test_separate_streams_are_refused(stubbed: Any) -> None:
    from torchx.schedulers.api import Stream

    sched, _, _ = stubbed
    with pytest.raises(ValueError, match="one CloudWatch stream"):
        sched.log_iter("gpu:x", "master", streams=Stream.STDERR)


def test_fair_share_queue_needs_a_share_id_and_nothing_is_registered(stubbed: Any) -> None:
    from torchx import specs
    from torchx.schedulers._aws_batch.client import BatchQueueError

    sched, batch, _ = stubbed
    queue = {"jobQueueName": "fs", "jobQueueArn": "arn:aws:batch:eu-west-1:1:job-queue/fs",
             "state": "ENABLED", "status": "VALID", "priority": 1, "computeEnvironmentOrder": [],
             "schedulingPolicyArn": "arn:aws:batch:eu-west-1:1:scheduling-policy/p"}  # fmt: skip
    batch.add_response("describe_job_queues", {"jobQueues": [queue]}, {"jobQueues": ["fs"]})
    role = specs.Role(
        "r", "img", entrypoint="true", resource=specs.Resource(cpu=1, gpu=0, memMB=64)
    )
    app = specs.AppDef("a", [role])
    info = sched.submit_dryrun(app, {"queue": "fs"})
    with pytest.raises(BatchQueueError, match=r"fair-share.*share_id"):
        sched.schedule(info)  # no register_job_definition answer is queued: none was made


def _node_job(status: str, stream: str) -> dict[str, Any]:
    job = dict(RESPONSES["describe_mnp"]["jobs"][1])
    job["status"] = status
    job["container"] = {**job["container"], "logStreamName": stream}
    return job


def test_following_a_running_node_until_it_ends(stubbed: Any) -> None:
    """Lines that arrive while the node runs are yielded; the end of the node ends it."""
    sched, batch, logs = stubbed
    _find(batch, "gpu", "trainer-bx3k9", "list_mnp")
    batch.add_response(
        "describe_jobs",
        RESPONSES["describe_mnp"],
        {"jobs": [JOB, f"{JOB}#0", f"{JOB}#1", f"{JOB}#2"]},
    )
    parent = RESPONSES["describe_mnp"]["jobs"][0]
    stream = "trainer-bx3k9/default/0a1b2c3d4e5f"
    base = {"logGroupName": "/aws/batch/job", "logStreamName": stream, "limit": 10000,
            "startFromHead": True}  # fmt: skip
    ids = {"jobs": [JOB, f"{JOB}#0"]}

    def events(token: str, *messages: str) -> dict[str, Any]:
        return {
            "events": [{"timestamp": 1, "message": m, "ingestionTime": 2} for m in messages],
            "nextForwardToken": token,
            "nextBackwardToken": "b/0",
        }

    # first locate answers from the describe above (node 0 running); read "a", then nothing new
    logs.add_response("get_log_events", events("f/1", "a"), base)
    logs.add_response("get_log_events", events("f/1"), {**base, "nextToken": "f/1"})
    # poll: still running, "b" arrived
    batch.add_response("describe_jobs", {"jobs": [parent, _node_job("RUNNING", stream)]}, ids)
    logs.add_response("get_log_events", events("f/2", "b"), {**base, "nextToken": "f/1"})
    logs.add_response("get_log_events", events("f/2"), {**base, "nextToken": "f/2"})
    # poll: the node ended; the rest is drained and following stops
    batch.add_response("describe_jobs", {"jobs": [parent, _node_job("SUCCEEDED", stream)]}, ids)
    logs.add_response("get_log_events", events("f/3", "c"), {**base, "nextToken": "f/2"})
    logs.add_response("get_log_events", events("f/3"), {**base, "nextToken": "f/3"})
    lines = list(sched.log_iter("gpu:trainer-bx3k9", "master", 0, should_tail=True))
    assert lines == ["a\n", "b\n", "c\n"]


def test_list_makes_a_bounded_number_of_calls(stubbed: Any) -> None:
    """Two queues: one DescribeJobQueues, one ListJobs per queue, one DescribeJobs per page
    of candidates (jobs whose definition is named like them); only tagged jobs are listed."""
    sched, batch, _ = stubbed
    queues = [
        {"jobQueueName": name, "jobQueueArn": f"arn:aws:batch:eu-west-1:1:job-queue/{name}",
         "state": "ENABLED", "status": "VALID", "priority": 1, "computeEnvironmentOrder": []}
        for name in ("gpu", "cpu")
    ]  # fmt: skip
    batch.add_response("describe_job_queues", {"jobQueues": queues}, {})

    def summary(job_id: str, name: str, job_def: str) -> dict[str, Any]:
        return {
            "jobArn": f"arn:aws:batch:eu-west-1:1:job/{job_id}",
            "jobId": job_id,
            "jobName": name,
            "status": "SUCCEEDED",
            "createdAt": 1,
            "jobDefinition": f"arn:aws:batch:eu-west-1:1:job-definition/{job_def}:3",
        }

    listing = {"filters": [{"name": "AFTER_CREATED_AT", "values": ["0"]}], "maxResults": 100}
    batch.add_response(
        "list_jobs",
        {
            "jobSummaryList": [
                summary("j1", "trainer-bx3k9", "trainer-bx3k9"),
                summary("j2", "nightly", "etl-def"),
            ]
        },
        {"jobQueue": "gpu", **listing},
    )
    tagged = dict(RESPONSES["describe_mnp"]["jobs"][0], jobId="j1", jobName="trainer-bx3k9")
    untagged = dict(tagged, jobId="j3", jobName="lookalike", tags={"team": "x"})
    batch.add_response("describe_jobs", {"jobs": [tagged]}, {"jobs": ["j1"]})
    batch.add_response(
        "list_jobs",
        {"jobSummaryList": [summary("j3", "lookalike", "lookalike")]},
        {"jobQueue": "cpu", **listing},
    )
    batch.add_response("describe_jobs", {"jobs": [untagged]}, {"jobs": ["j3"]})
    apps = sched.list()
    assert [(a.app_id, a.state, a.name) for a in apps] == [
        ("gpu:trainer-bx3k9", AppState.RUNNING, "trainer")
    ]


def test_list_follows_every_page_and_filters_before_describing(stubbed: Any) -> None:
    """Upstream stopped at 100 jobs per queue: every ``nextToken`` is followed; ``--since``
    is Batch's own AFTER_CREATED_AT filter and ``--state`` skips jobs before DescribeJobs."""
    from torchx.schedulers.list_filter import ListFilter

    sched, batch, _ = stubbed

    def summary(job_id: str, status: str) -> dict[str, Any]:
        name = f"trainer-{job_id}"
        return {
            "jobArn": f"arn:aws:batch:eu-west-1:1:job/{job_id}", "jobId": job_id,
            "jobName": name, "status": status, "createdAt": 1,
            "jobDefinition": f"arn:aws:batch:eu-west-1:1:job-definition/{name}:1",
        }  # fmt: skip

    listing = {
        "jobQueue": "gpu",
        "filters": [{"name": "AFTER_CREATED_AT", "values": ["1700000000000"]}],
        "maxResults": 100,
    }
    batch.add_response(
        "list_jobs",
        {"jobSummaryList": [summary("a1", "RUNNING"), summary("a2", "SUCCEEDED")],
         "nextToken": "page-2"},
        listing,
    )  # fmt: skip
    running = dict(RESPONSES["describe_mnp"]["jobs"][0], jobId="a1", jobName="trainer-a1")
    pending = dict(running, jobId="a3", jobName="trainer-a3", status="RUNNABLE")
    batch.add_response("describe_jobs", {"jobs": [running]}, {"jobs": ["a1"]})  # page 1
    batch.add_response(
        "list_jobs",
        {"jobSummaryList": [summary("a3", "RUNNABLE")]},
        {**listing, "nextToken": "page-2"},
    )
    batch.add_response("describe_jobs", {"jobs": [pending]}, {"jobs": ["a3"]})  # page 2
    wanted = ListFilter(states=frozenset({AppState.RUNNING, AppState.PENDING}), since=1.7e9)
    apps = sched.list_filtered({"queue": "gpu"}, wanted)
    assert [(a.app_id, a.state) for a in apps] == [
        ("gpu:trainer-a1", AppState.RUNNING),
        ("gpu:trainer-a3", AppState.PENDING),
    ]
    # why the pending one waits comes from the same DescribeJobs answer, no extra call
    assert apps[0].waiting == ""
    assert apps[1].waiting.startswith("RUNNABLE: it waits for compute resources"), apps[1]
