"""aws_batch through moto's emulator: real boto3, real containers in a real Docker daemon.

What moto does not emulate (node jobs ``<id>#<n>``, one log stream per node,
``AWS_BATCH_JOB_NODE_INDEX``, exit codes on multi-node job details) is covered in
packages/torchx-sched-batch/tests with AWS-shaped answers. Here, all nodes of a job write
one stream, which torchx reads as the main node's log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import one_error_line
from torchx_testsupport.docker import IMAGE, REGISTRY
from torchx_testsupport.processes import concurrent_handles

from torchx.specs import AppState

TORCHX = str(Path(sys.executable).parent / "torchx")

COMPONENT = textwrap.dedent(
    """
    from torchx import specs

    def two_roles(image: str, workers: int = 6, fail: bool = False) -> specs.AppDef:
        \"\"\"A main node and a role of workers that check the main node's address var.

        Args:
            image: image to run
            workers: worker replicas
            fail: make the workers exit 4
        \"\"\"
        res = specs.Resource(cpu=1, gpu=0, memMB=128)
        say = "echo $TORCHX_ROLE_NAME idx=$TORCHX_ROLE_IDX"
        main_var = "main=$${" + specs.macros.rank0_env + "+set}"
        return specs.AppDef(
            name="pair",
            roles=[
                specs.Role(name="master", image=image, entrypoint="sh",
                           args=["-c", f"{say} app={specs.macros.app_id}"], resource=res),
                specs.Role(name="worker", image=image, entrypoint="sh",
                           args=["-c", f"{say} {main_var}" + ("; exit 4" if fail else "")],
                           num_replicas=workers, resource=res),
            ],
        )

    def six_roles(image: str) -> specs.AppDef:
        \"\"\"One role too many for a Batch job.

        Args:
            image: image to run
        \"\"\"
        res = specs.Resource(cpu=1, gpu=0, memMB=64)
        return specs.AppDef(name="six", roles=[
            specs.Role(name=f"r{i}", image=image, entrypoint="true", resource=res)
            for i in range(6)
        ])
    """
)


# the backend outlives the test: a key of this run only
KEY_BATCH_K1 = f"batch-k1-{uuid.uuid4().hex[:8]}"
KEY_BATCH_TOGETHER = f"batch-together-{uuid.uuid4().hex[:8]}"


def _torchx(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [TORCHX, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "comps.py").write_text(COMPONENT)
    return tmp_path


def _run(queue: str, *component: str, cwd: Path, extra: tuple[str, ...] = ()) -> Any:
    return _torchx(
        "run", "--wait", *extra, "-s", "aws_batch", "-cfg", f"queue={queue}",
        "--workspace", "", *component, cwd=cwd,
    )  # fmt: skip


def _sh(*script: str) -> list[str]:
    return ["utils.sh", "--image", IMAGE, "--memMB", "128", "sh", "-c", "; ".join(script)]


def _handle(proc: Any) -> str:
    lines = [line for line in proc.stdout.splitlines() if line.startswith("aws_batch://")]
    assert len(lines) == 1, (proc.stdout, proc.stderr)
    return lines[0]


def _job_definitions(batch: Any) -> list[dict[str, Any]]:
    return list(batch.describe_job_definitions()["jobDefinitions"])


# -- lifecycle -------------------------------------------------------------------------------


def test_single_node_success_logs_and_a_second_process(batch_queue: str, project: Path) -> None:
    proc = _run(batch_queue, *_sh("echo hello from $TORCHX_ROLE_NAME", "echo oops >&2"),
                cwd=project, extra=("--log",))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    handle = _handle(proc)
    assert handle.startswith(f"aws_batch://torchx/{batch_queue}:sh-")
    assert "hello from sh" in proc.stderr + proc.stdout
    assert "Found credentials" not in proc.stderr  # botocore's INFO chatter stays quiet

    status = _torchx("status", "--json", handle, cwd=project)
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    assert doc["state"] == "SUCCEEDED"
    assert "console.aws.amazon.com/batch" in doc["url"]
    log = _torchx("log", f"{handle}/sh/0", cwd=project)
    assert log.returncode == 0, log.stderr
    assert "hello from sh" in log.stdout and "oops" in log.stdout
    describe = _torchx("describe", handle, cwd=project)
    assert describe.returncode == 0 and "'name': 'sh'" in describe.stdout


def test_job_id_inside_the_job_is_the_handle(batch_queue: str, project: Path) -> None:
    """The MLflow tracker names runs by $TORCHX_JOB_ID: it must be what `status` takes."""
    proc = _run(batch_queue, *_sh('echo "job id: $TORCHX_JOB_ID"'), cwd=project,
                extra=("--log",))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    handle = _handle(proc)
    assert f"job id: {handle}\n" in proc.stderr + proc.stdout


def test_unknown_apps_are_not_found(batch_queue: str, project: Path) -> None:
    for handle in (
        f"aws_batch://torchx/{batch_queue}:no-such-job",
        "aws_batch://torchx/no-such-queue:job",
    ):
        proc = _torchx("status", handle, cwd=project)
        assert proc.returncode == 1
        assert proc.stderr.strip().endswith("(see `torchx list -s aws_batch`)"), proc.stderr
        assert "not found" in proc.stderr


def test_failure_reports_the_exit_code(batch_queue: str, project: Path) -> None:
    proc = _run(batch_queue, *_sh("echo bye", "exit 3"), cwd=project)
    assert proc.returncode == 1
    status = _torchx("status", "--json", _handle(proc), cwd=project)
    doc = json.loads(status.stdout)
    assert doc["state"] == "FAILED"
    assert "exit code 3" in doc["msg"]


def test_own_failure_exits_and_a_lost_host_is_retried(
    batch_queue: str, project: Path, batch: Any
) -> None:
    """The job's own exit 3 ends it on its first attempt; the job definition asks Batch to
    retry an attempt whose host was terminated. (moto runs one attempt and never terminates
    a host: the retry itself is Batch's, not exercised here.)"""
    proc = _run(batch_queue, *_sh('echo "attempt 0"', "exit 3"), cwd=project)
    assert proc.returncode == 1
    handle = _handle(proc)
    doc = json.loads(_torchx("status", "--json", handle, cwd=project).stdout)
    assert (doc["state"], doc["num_restarts"]) == ("FAILED", 0)
    [attempt] = doc["attempts"]  # Batch's record of the one attempt
    assert (attempt["attempt"], attempt["state"], attempt["cause"], attempt["exit_code"]) == (
        0, "FAILED", "exit_code", 3
    ), attempt  # fmt: skip
    assert attempt["start"] is not None and attempt["end"] >= attempt["start"]
    log = _torchx("log", f"{handle}/sh/0", cwd=project)
    assert log.stdout.splitlines() == ["sh/0 attempt 0"], log.stdout
    name = handle.rsplit(":", 1)[1]
    (definition,) = [d for d in _job_definitions(batch) if d["jobDefinitionName"] == name]
    rules = definition["retryStrategy"]["evaluateOnExit"]
    assert {"onStatusReason": "Host EC2*", "action": "RETRY"} in [
        {k: str(v).upper() if k == "action" else v for k, v in rule.items()} for rule in rules
    ]
    assert {"onReason": "*", "action": "EXIT"} in [
        {k: str(v).upper() if k == "action" else v for k, v in rule.items()} for rule in rules
    ]
    # `describe` gives the role's command back, not the shell that counts the attempt
    describe = _torchx("describe", handle, cwd=project)
    assert "'entrypoint': 'sh'" in describe.stdout, describe.stdout


def test_two_roles_with_more_than_five_nodes(batch_queue: str, project: Path, batch: Any) -> None:
    proc = _run(batch_queue, "comps.py:two_roles", "--image", IMAGE, cwd=project)
    assert proc.returncode == 0, proc.stderr
    handle = _handle(proc)
    job_name = handle.rpartition(":")[2]
    (summary,) = batch.list_jobs(
        jobQueue=batch_queue, filters=[{"name": "JOB_NAME", "values": [job_name]}]
    )["jobSummaryList"]
    (job,) = batch.describe_jobs(jobs=[summary["jobId"]])["jobs"]
    ranges = job["nodeProperties"]["nodeRangeProperties"]
    assert job["nodeProperties"]["numNodes"] == 7
    assert [r["targetNodes"] for r in ranges] == ["0:0", "1:6"]  # one range per role

    desc = _torchx("describe", handle, cwd=project).stdout
    assert "'name': 'master'" in desc and "'num_replicas': 6" in desc
    # moto writes every node to one stream (read as the main node's)
    lines = _torchx("log", f"{handle}/master/0", cwd=project).stdout.splitlines()
    assert sum(f"master idx=0 app={job_name}" in line for line in lines) == 1
    assert sum("worker idx=1 main=set" in line for line in lines) == 6
    status = json.loads(_torchx("status", "--json", handle, cwd=project).stdout)
    assert [len(r["replicas"]) for r in status["roles"]] == [1, 6]


def test_multinode_failure(batch_queue: str, project: Path) -> None:
    proc = _run(batch_queue, "comps.py:two_roles", "--image", IMAGE, "--workers", "2",
                "--fail", "True", cwd=project)  # fmt: skip
    assert proc.returncode == 1
    assert (
        json.loads(_torchx("status", "--json", _handle(proc), cwd=project).stdout)["state"]
        == "FAILED"
    )


def test_cancel_terminates_with_a_reason(batch_queue: str, project: Path) -> None:
    from torchx.runner import get_runner

    proc = _torchx(
        "run", "-s", "aws_batch", "-cfg", f"queue={batch_queue}", "--workspace", "",
        *_sh("echo started", "sleep 120"), cwd=project,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    handle = _handle(proc)
    with get_runner() as runner:
        deadline = time.monotonic() + 60
        while (status := runner.status(handle)) is not None and status.state != AppState.RUNNING:
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
        cancel = _torchx("cancel", handle, cwd=project)
        assert cancel.returncode == 0, cancel.stderr
        final = runner.wait(handle, wait_interval=0.5)
    assert final is not None
    assert final.state == AppState.CANCELLED
    assert final.msg.startswith("cancelled via torchx")
    again = json.loads(_torchx("status", "--json", handle, cwd=project).stdout)
    assert again["state"] == "CANCELLED"


def test_list_shows_torchx_jobs_only_and_delete_deregisters(
    batch_queue: str, project: Path, batch: Any
) -> None:
    proc = _run(batch_queue, *_sh("true"), cwd=project)
    handle = _handle(proc)
    name = handle.rpartition(":")[2]
    # a job that is not TorchX's: no tags
    batch.register_job_definition(
        jobDefinitionName="plain-def", type="container",
        containerProperties={"image": IMAGE, "command": ["true"], "resourceRequirements": [
            {"type": "VCPU", "value": "1"}, {"type": "MEMORY", "value": "64"}]},
    )  # fmt: skip
    batch.submit_job(jobName="plain-def", jobQueue=batch_queue, jobDefinition="plain-def")
    listed = _torchx("list", "-s", "aws_batch", cwd=project)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines() if "aws_batch://" in line]
    assert [handle, "sh", "SUCCEEDED"] in rows
    assert not any("plain-def" in row[0] for row in rows)

    deleted = _torchx("delete", handle, cwd=project)
    assert deleted.returncode == 0, deleted.stderr
    (job_def,) = batch.describe_job_definitions(jobDefinitionName=name)["jobDefinitions"]
    assert job_def["status"] == "INACTIVE"


def test_workspace_is_built_pushed_and_run(batch_queue: str, project: Path) -> None:
    ws = project / "ws"
    ws.mkdir()
    (ws / "data.txt").write_text("from the workspace\n")
    repo = f"{REGISTRY}/torchx-batch-test"
    proc = _torchx(
        "run", "--wait", "--log", "-s", "aws_batch", "-cfg",
        f"queue={batch_queue},image_repo={repo},quiet=True", "--workspace", str(ws),
        "utils.sh", "--image", IMAGE, "--memMB", "128", "cat", "data.txt", cwd=project,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "pushing" not in proc.stderr and ": Pushed" not in proc.stderr  # quiet=True
    handle = _handle(proc)
    desc = _torchx("describe", handle, cwd=project).stdout
    assert f"'image': '{repo}:" in desc
    log = _torchx("log", f"{handle}/sh/0", cwd=project).stdout
    assert "from the workspace" in log


# -- bad input: one line, non-zero exit, nothing registered ----------------------------------


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (("-cfg", "user=x"), {}, "Required run option: queue"),
        (("-cfg", "queue=no-such-queue"), {}, "job queue 'no-such-queue' does not exist"),
        (("-cfg", "queue={queue},ulimits=nofile:1"), {}, "malformed ulimit 'nofile:1'"),
        (("-cfg", "queue={queue}"), {"AWS_DEFAULT_REGION": ""}, "no AWS region is configured"),
        (
            ("-cfg", "queue={queue}"),
            {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""},
            "no AWS credentials found",
        ),
        (("-cfg", "queue={queue}", "comps.py:six_roles"), {}, "has 6 roles"),
        (("-cfg", "queue={queue},image_repo="), {"__workspace": "1"}, "image_repo"),
    ],
    ids=[
        "no-queue",
        "unknown-queue",
        "ulimits",
        "no-region",
        "no-credentials",
        "six-roles",
        "workspace-without-repo",
    ],
)
def test_bad_input(
    batch_queue: str,
    project: Path,
    batch: Any,
    args: tuple[str, ...],
    env: dict[str, str],
    expected: str,
) -> None:
    before = len(_job_definitions(batch))
    jobs_before = len(batch.list_jobs(jobQueue=batch_queue)["jobSummaryList"])
    argv = [a.format(queue=batch_queue) for a in args]
    component = (
        ["comps.py:six_roles", "--image", IMAGE] if "comps.py:six_roles" in argv else _sh("true")
    )
    argv = [a for a in argv if a != "comps.py:six_roles"]
    ws = ["--workspace", str(project)] if env.pop("__workspace", None) else ["--workspace", ""]
    run_env = {k: v for k, v in os.environ.items() if k not in env}
    run_env.update({k: v for k, v in env.items() if v})
    proc = subprocess.run(
        [TORCHX, "run", "-s", "aws_batch", *argv, *ws, *component],
        cwd=project, env=run_env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert expected in one_error_line(proc, no_stdout=True)
    assert len(_job_definitions(batch)) == before
    assert len(batch.list_jobs(jobQueue=batch_queue)["jobSummaryList"]) == jobs_before


# -- fair-share queues: share_id must match the queue's scheduling policy ---------------------


@pytest.fixture
def fair_share_queue(batch_queue: str, batch: Any) -> Iterator[str]:
    """A job queue with a fair-share scheduling policy (shares ``vision`` and ``nlp``) on
    the compute environment of ``batch_queue``; it and its policy are deleted afterwards."""
    from torchx.schedulers.ids import random_id

    name = f"torchx-test-fs-{random_id(8)}"
    policy_arn = batch.create_scheduling_policy(
        name=f"{name}-policy",
        fairsharePolicy={"shareDistribution": [
            {"shareIdentifier": "vision", "weightFactor": 1.0},
            {"shareIdentifier": "nlp", "weightFactor": 2.0},
        ]},
    )["arn"]  # fmt: skip
    (plain,) = batch.describe_job_queues(jobQueues=[batch_queue])["jobQueues"]
    batch.create_job_queue(
        jobQueueName=name, state="ENABLED", priority=1, schedulingPolicyArn=policy_arn,
        computeEnvironmentOrder=plain["computeEnvironmentOrder"],
    )  # fmt: skip
    (queue,) = batch.describe_job_queues(jobQueues=[name])["jobQueues"]
    assert queue["schedulingPolicyArn"] == policy_arn  # what torchx's queue check reads
    yield name
    for summary in batch.list_jobs(jobQueue=name)["jobSummaryList"]:
        if summary["status"] not in ("SUCCEEDED", "FAILED"):
            batch.terminate_job(jobId=summary["jobId"], reason="test over")
    batch.update_job_queue(jobQueue=name, state="DISABLED")
    batch.delete_job_queue(jobQueue=name)
    batch.delete_scheduling_policy(arn=policy_arn)


@pytest.mark.parametrize(
    ("fair_share", "share_cfg", "expected"),
    [
        (True, "", "has a fair-share scheduling policy; set the share with -cfg share_id="),
        (False, ",share_id=vision,priority=5", "takes no share identifier; drop -cfg share_id"),
    ],
    ids=["fair-share-queue-without-share_id", "plain-queue-with-share_id"],
)
def test_share_id_must_match_the_queue(
    fair_share_queue: str,
    batch_queue: str,
    project: Path,
    batch: Any,
    fair_share: bool,
    share_cfg: str,
    expected: str,
) -> None:
    queue = fair_share_queue if fair_share else batch_queue
    definitions = {d["jobDefinitionArn"] for d in _job_definitions(batch)}
    jobs = len(batch.list_jobs(jobQueue=queue)["jobSummaryList"])
    proc = _torchx(
        "run", "-s", "aws_batch", "-cfg", f"queue={queue}{share_cfg}", "--workspace", "",
        *_sh("true"), cwd=project,
    )  # fmt: skip
    error = one_error_line(proc, no_stdout=True)
    assert f"AWS Batch job queue {queue!r}" in error and expected in error, error
    # refused before anything was registered or submitted
    assert {d["jobDefinitionArn"] for d in _job_definitions(batch)} == definitions
    assert len(batch.list_jobs(jobQueue=queue)["jobSummaryList"]) == jobs


def test_fair_share_queue_takes_the_share_and_its_priority(
    fair_share_queue: str, batch: Any
) -> None:
    from torchx.runner import get_runner

    # moto 5.2.5 keeps neither shareIdentifier (SubmitJob) nor schedulingPriority
    # (RegisterJobDefinition): read them from the requests as sent to it
    sent: dict[str, dict[str, Any]] = {}

    def record(request: Any, event_name: str, **_: Any) -> None:
        sent[event_name.rpartition(".")[2]] = json.loads(request.body)

    for operation in ("RegisterJobDefinition", "SubmitJob"):
        batch.meta.events.register(f"before-send.batch.{operation}", record)
    with get_runner(client=batch) as runner:
        handle = runner.run_component(
            "utils.sh", ["--image", IMAGE, "--memMB", "128", "true"], "aws_batch",
            cfg={"queue": fair_share_queue, "share_id": "vision", "priority": 7}, workspace="",
        )  # fmt: skip
        assert handle.startswith(f"aws_batch://torchx/{fair_share_queue}:sh-vision-")
        name = handle.rpartition(":")[2]
        assert sent["SubmitJob"]["shareIdentifier"] == "vision"
        assert sent["SubmitJob"]["jobQueue"] == fair_share_queue
        assert sent["RegisterJobDefinition"]["schedulingPriority"] == 7

        # moto accepted both: the job is in the fair-share queue, on torchx's definition
        (summary,) = batch.list_jobs(
            jobQueue=fair_share_queue, filters=[{"name": "JOB_NAME", "values": [name]}]
        )["jobSummaryList"]
        (job,) = batch.describe_jobs(jobs=[summary["jobId"]])["jobs"]
        (queue,) = batch.describe_job_queues(jobQueues=[fair_share_queue])["jobQueues"]
        (job_def,) = batch.describe_job_definitions(jobDefinitionName=name)["jobDefinitions"]
        assert job["jobQueue"] == queue["jobQueueArn"]
        assert job["jobDefinition"] == job_def["jobDefinitionArn"]
        assert job_def["status"] == "ACTIVE"

        # moto runs the job although it ignores the policy; torchx tracks it to the end
        final = runner.wait(handle, wait_interval=0.5)
    assert final is not None
    assert final.state == AppState.SUCCEEDED, final


def test_dryrun_prints_the_request_without_aws(project: Path) -> None:
    proc = _torchx(
        "run", "--dryrun", "-s", "aws_batch", "-cfg", "queue=some-queue",
        "--workspace", "", "comps.py:two_roles", "--image", IMAGE, cwd=project,
        env={"AWS_DEFAULT_REGION": "", "AWS_ACCESS_KEY_ID": ""},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    request = json.loads(proc.stdout.split("=== SCHEDULER REQUEST ===", 1)[1])
    assert request["queue"] == "some-queue"
    ranges = request["job_def"]["nodeProperties"]["nodeRangeProperties"]
    assert [r["targetNodes"] for r in ranges] == ["0:0", "1:6"]


def test_list_reads_past_the_first_hundred_and_filters(project: Path, batch: Any) -> None:
    """Upstream listed at most 100 jobs per queue: every page is read (ListJobs pages of
    100), `--state`/`--limit` narrow it, and `--json` streams all of them."""
    from torchx_testsupport.batch import create_queue, moto_runs_containers

    from torchx.runner import get_runner
    from torchx.schedulers.ids import random_id
    from torchx.specs import AppDef, Resource, Role

    queue = f"torchx-pages-{random_id(8)}"
    create_queue(queue)
    count = 130
    role = Role("r", IMAGE, entrypoint="true", resource=Resource(cpu=1, gpu=0, memMB=64))
    moto_runs_containers(False)  # 130 containers would take minutes; the listing is the point
    try:
        with get_runner() as runner:
            handles = [
                runner.run(AppDef("paged", [role]), "aws_batch", {"queue": queue})
                for _ in range(count)
            ]
        deadline = time.monotonic() + 120
        while len(batch.list_jobs(jobQueue=queue, jobStatus="SUCCEEDED")["jobSummaryList"]) < count:
            assert time.monotonic() < deadline, "moto did not finish the jobs"
            time.sleep(0.5)
    finally:
        moto_runs_containers(True)
    listed = _torchx("list", "-s", "aws_batch", "-cfg", f"queue={queue}", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    apps = json.loads(listed.stdout)
    assert sorted(a["app_handle"] for a in apps) == sorted(handles)
    assert {a["state"] for a in apps} == {"SUCCEEDED"}
    newest = _torchx(
        "list", "-s", "aws_batch", "-cfg", f"queue={queue}", "--state", "succeeded",
        "--limit", "5", "--json", cwd=project,
    )  # fmt: skip
    assert [a["app_handle"] for a in json.loads(newest.stdout)] == handles[-5:]
    running = _torchx(
        "list", "-s", "aws_batch", "-cfg", f"queue={queue}", "--state", "running", cwd=project
    )
    assert running.returncode == 0 and "aws_batch://" not in running.stdout


def test_a_second_run_with_the_key_returns_the_first_handle(
    batch_queue: str, project: Path
) -> None:
    key = ("--idempotency-key", KEY_BATCH_K1)
    first = _run(batch_queue, *_sh("echo run=$TORCHX_RUN_ID"), cwd=project, extra=(*key, "--log"))
    assert first.returncode == 0, first.stderr
    handle = _handle(first)
    assert f"run={KEY_BATCH_K1}" in first.stderr + first.stdout
    again = _torchx(
        "run", *key, "-s", "aws_batch", "-cfg", f"queue={batch_queue}", "--workspace", "",
        *_sh("echo run=$TORCHX_RUN_ID"), cwd=project,
    )  # fmt: skip
    assert (again.returncode, again.stdout) == (0, f"{handle}\n"), again
    listed = json.loads(_torchx("list", "-s", "aws_batch", "--json", "-cfg",
                                f"queue={batch_queue}", cwd=project).stdout)  # fmt: skip
    assert [a["app_handle"] for a in listed if a["app_handle"] == handle] == [handle]


def test_a_key_is_each_users_on_a_shared_queue(batch_queue: str, project: Path) -> None:
    """Two users of one job queue run the same key: neither's run takes the other's job."""
    from torchx_testsupport.idempotency import USERS, per_user_key

    key = per_user_key()

    def run_as(user: str) -> str:
        done = _torchx(
            "run", "--idempotency-key", key, "-s", "aws_batch", "-cfg", f"queue={batch_queue}",
            "--workspace", "", *_sh("true"), cwd=project, env={"LOGNAME": user, "USER": user},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    first = {user: run_as(user) for user in USERS}
    assert first["alice"] != first["bob"], first
    assert {user: run_as(user) for user in USERS} == first


def test_concurrent_runs_with_one_key_submit_once(batch_queue: str, project: Path) -> None:
    handles = concurrent_handles(
        [
            TORCHX,
            "run",
            "--idempotency-key",
            KEY_BATCH_TOGETHER,
            "-s",
            "aws_batch",
            "-cfg",
            f"queue={batch_queue}",
            "--workspace",
            "",
            *_sh("echo hi"),
        ],
        3,
        cwd=project,
    )
    [handle] = handles
    listed = json.loads(_torchx("list", "-s", "aws_batch", "--json", "-cfg",
                                f"queue={batch_queue}", cwd=project).stdout)  # fmt: skip
    assert [a["app_handle"] for a in listed].count(handle) == 1
