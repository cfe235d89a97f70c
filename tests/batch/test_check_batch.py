"""``torchx check -s aws_batch`` against moto's AWS emulator: credentials, the configured
queue and its compute environment; an unknown queue; the emulator down."""

from __future__ import annotations

import socket

from torchx_testsupport import torchx_check


def test_queue_ready(batch_queue: str, aws_env: dict[str, str]) -> None:
    entry = torchx_check("-s", "aws_batch", "-cfg", f"queue={batch_queue}")["aws_batch"]
    assert entry["status"] == "ready", entry
    checks = entry["checks"]
    assert checks["credentials"][1] == f"from env; region {aws_env['AWS_DEFAULT_REGION']}"
    for secret in (aws_env["AWS_ACCESS_KEY_ID"], aws_env["AWS_SECRET_ACCESS_KEY"]):
        assert all(secret not in c[1] for c in checks.values()), "a probe printed a secret"
    assert checks["queue"] == ("ready", f"job queue {batch_queue!r} is ENABLED and VALID", "")
    assert checks["compute"][0] == "ready"


def test_unknown_queue_and_no_queue(batch_queue: str) -> None:
    entry = torchx_check("-s", "aws_batch", "-cfg", "queue=no-such-queue")["aws_batch"]
    status, found, _ = entry["checks"]["queue"]
    assert status == "not ready" and "'no-such-queue' does not exist in " in found
    assert entry["exit"] == 1
    unset = torchx_check("-s", "aws_batch")["aws_batch"]["checks"]["queue"]
    assert unset[0] == "not configured" and "[aws_batch]" in unset[2]


def test_emulator_down(batch_queue: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    entry = torchx_check(
        "-s",
        "aws_batch",
        "-cfg",
        f"queue={batch_queue}",
        env={"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"},
    )["aws_batch"]
    status, found, fix = entry["checks"]["queue"]
    assert status == "not ready" and f"cannot reach http://127.0.0.1:{port}" in found
    assert "AWS_ENDPOINT_URL" in fix


def test_an_endpoint_password_never_reaches_the_terminal(aws_env: dict[str, str]) -> None:
    """botocore logs the endpoint URL (user-info included) in its retry and DEBUG lines,
    and the traceback --log_level debug prints carries it: all pass through the masking."""
    import os
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        **aws_env,
        "AWS_ENDPOINT_URL": f"http://svc:endpoint-pw-1@127.0.0.1:{port}",
        "TORCHX_RETRY_S": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "torchx.cli.main", "--log_level", "DEBUG",
         "list", "-s", "aws_batch"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "Could not connect to the endpoint URL" in proc.stderr  # botocore's own line
    assert "endpoint-pw-1" not in proc.stderr and "http://***@127.0.0.1" in proc.stderr
