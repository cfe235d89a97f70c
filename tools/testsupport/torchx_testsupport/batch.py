"""What the aws_batch tests share: the local AWS emulator (moto_server of tools/moto-up.sh)
and a Batch job queue in it.

The tests talk to the emulator through real boto3 clients configured the way a user's
shell is: the endpoint, a region and (fake) keys in the environment.
"""

from __future__ import annotations

import os

from torchx_testsupport import http_ok

PORT = int(os.environ.get("TORCHX_TEST_MOTO_PORT", "4566"))
ENDPOINT = f"http://127.0.0.1:{PORT}"
REGION = "us-west-2"

AWS_ENV = {
    "AWS_ENDPOINT_URL": ENDPOINT,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",  # moto accepts any key
}
"""The environment of a user pointed at the emulator (no real AWS is reachable)."""


def emulator_answers() -> bool:
    """Whether a moto_server answers at :data:`ENDPOINT`."""
    return http_ok(f"{ENDPOINT}/moto-api/", timeout=2)  # data.json would dump every job


def create_queue(name: str) -> str:
    """Creates (or reuses) a Batch job queue ``name`` with an unmanaged compute environment
    in the emulator and returns its ARN. Needs :data:`AWS_ENV` in the environment."""
    import boto3

    session = boto3.session.Session()
    batch = session.client("batch")
    found = batch.describe_job_queues(jobQueues=[name])["jobQueues"]
    if found:
        return str(found[0]["jobQueueArn"])
    iam = session.client("iam")
    role_name = "torchx-test-batch"
    try:
        role_arn = iam.get_role(RoleName=role_name)["Role"]["Arn"]
    except iam.exceptions.NoSuchEntityException:
        role_arn = iam.create_role(
            RoleName=role_name,
            AssumeRolePolicyDocument="{}",
            Path="/",
        )["Role"]["Arn"]
    env_name = f"{name}-ce"
    env_arn = batch.create_compute_environment(
        computeEnvironmentName=env_name,
        type="UNMANAGED",
        state="ENABLED",
        serviceRole=role_arn,
    )["computeEnvironmentArn"]
    return str(
        batch.create_job_queue(
            jobQueueName=name,
            state="ENABLED",
            priority=1,
            computeEnvironmentOrder=[{"order": 1, "computeEnvironment": env_arn}],
        )["jobQueueArn"]
    )


def moto_runs_containers(on: bool) -> None:
    """Whether moto runs each Batch job in a Docker container (the default) or ends it
    at once without one: thousands of jobs are made in seconds that way."""
    import json
    import urllib.request

    body = json.dumps({"batch": {"use_docker": on}}).encode()
    request = urllib.request.Request(f"{ENDPOINT}/moto-api/config", data=body, method="POST")
    urllib.request.urlopen(request, timeout=10).read()
