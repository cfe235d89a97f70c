"""``torchx check`` probes of the ``aws_batch`` scheduler: credentials and region (where
they come from, never their values), then the configured job queue and its compute
environments. Read-only ``Describe*`` calls with short timeouts and no retries."""

from __future__ import annotations

from typing import Any

from torchx.schedulers._aws_batch.client import (
    AWSBatchError,
    AWSCredentialsError,
    AWSRegionError,
    api_call,
    client_of,
    new_session,
    probe_config,
)
from torchx.util.readiness import ReadinessCheck, not_configured, not_ready, ready

TIMEOUT_S = 3.0


def _probe_client(session: Any) -> Any:
    return client_of(session, "batch", probe_config(TIMEOUT_S))


def checks(cfg: dict[str, Any]) -> list[ReadinessCheck]:
    try:
        session = new_session()
        client = _probe_client(session)
    except (AWSRegionError, AWSCredentialsError) as e:
        found, _, fix = str(e).partition("; ")
        return [not_configured("credentials", found, fix)]
    source = getattr(session.get_credentials(), "method", "") or "the default chain"
    checks = [ready("credentials", f"from {source}; region {client.meta.region_name}")]

    queue = str(cfg.get("queue") or "")
    if not queue:
        checks.append(
            not_configured(
                "queue",
                "no job queue configured",
                "set `queue = NAME` in the [aws_batch] section of .torchxconfig (or check"
                " with -cfg queue=NAME)",
            )
        )
        return checks
    try:
        found = api_call(
            f"look up the AWS Batch job queue {queue}",
            client.describe_job_queues,
            jobQueues=[queue],
        )["jobQueues"]
    except AWSBatchError as e:
        text, _, fix = str(e).partition("; ")
        checks.append(not_ready("queue", text, fix or "check the queue name and the region"))
        return checks
    if not found:
        checks.append(
            not_ready(
                "queue",
                f"job queue {queue!r} does not exist in {client.meta.region_name}",
                "set [aws_batch] queue (or -cfg queue=) to an existing queue, or fix the region",
            )
        )
        return checks
    checks.append(_queue_check(found[0]))
    checks.append(_compute_check(client, found[0]))
    return checks


def _queue_check(queue: dict[str, Any]) -> ReadinessCheck:
    name, state, status = queue["jobQueueName"], queue.get("state"), queue.get("status")
    if state != "ENABLED" or status != "VALID":
        reason = queue.get("statusReason") or ""
        return not_ready(
            "queue",
            f"job queue {name!r} is {state}/{status}" + (f" ({reason})" if reason else ""),
            f"enable the queue (`aws batch update-job-queue --job-queue {name} --state"
            " ENABLED`) or fix its compute environments",
        )
    return ready("queue", f"job queue {name!r} is ENABLED and VALID")


def _compute_check(client: Any, queue: dict[str, Any]) -> ReadinessCheck:
    arns = [str(e["computeEnvironment"]) for e in queue.get("computeEnvironmentOrder", [])]
    if not arns:
        return not_ready(
            "compute",
            f"job queue {queue['jobQueueName']!r} has no compute environment",
            "attach a compute environment to the queue",
        )
    try:
        envs = api_call(
            "describe the compute environments",
            client.describe_compute_environments,
            computeEnvironments=arns,
        )["computeEnvironments"]
    except AWSBatchError as e:
        text, _, fix = str(e).partition("; ")
        return not_ready("compute", text, fix or "check the permissions to describe them")
    bad = [
        f"{e['computeEnvironmentName']} ({e.get('state')}/{e.get('status')})"
        for e in envs
        if e.get("state") != "ENABLED" or e.get("status") != "VALID"
    ]
    good = [e["computeEnvironmentName"] for e in envs if e not in bad]
    if len(bad) == len(envs):
        return not_ready(
            "compute",
            f"no usable compute environment: {', '.join(bad)}",
            "enable a compute environment of the queue and fix what makes it INVALID"
            " (see its statusReason in the AWS console)",
        )
    return ready("compute", f"compute environments VALID: {', '.join(map(str, good))}")
