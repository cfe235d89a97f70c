"""The dry-run request of aws_batch against golden files (no AWS call, no boto3 import)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchx import specs
from torchx.schedulers.aws_batch_scheduler import BatchJob, create_scheduler
from torchx.version import __version__

FIXTURES = Path(__file__).parent / "fixtures"


def _two_role_app() -> specs.AppDef:
    return specs.AppDef(
        name="trainer",
        metadata={"team": "vision"},
        roles=[
            specs.Role(
                name="master",
                image="123456789012.dkr.ecr.us-west-2.amazonaws.com/train:1",
                entrypoint="python",
                args=["-m", "train", "--run", specs.macros.app_id],
                env={"LOGLEVEL": "INFO"},
                resource=specs.Resource(cpu=8, gpu=1, memMB=30000),
                max_retries=2,
                mounts=[specs.BindMount("/fsx", "/data", read_only=True)],
            ),
            specs.Role(
                name="worker",
                image="123456789012.dkr.ecr.us-west-2.amazonaws.com/train:1",
                entrypoint="python",
                args=["-m", "worker", "--rank", specs.macros.replica_id],
                env={"MASTER_VAR": specs.macros.rank0_env},
                num_replicas=6,
                resource=specs.resource(h="aws_p4d.24xlarge"),
            ),
        ],
    )


def _normalized(request: BatchJob) -> str:
    return str(request).replace(request.name, "<NAME>").replace(__version__, "<VERSION>")


@pytest.mark.parametrize(
    ("golden", "cfg"),
    [
        ("dryrun_two_roles.json", {"queue": "gpu-queue", "user": "alice"}),
        (
            "dryrun_fair_share.json",
            {
                "queue": "fs-queue",
                "user": "bob",
                "share_id": "vision",
                "priority": 7,
                "privileged": True,
                "job_role_arn": "arn:aws:iam::123456789012:role/job",
                "execution_role_arn": "arn:aws:iam::123456789012:role/exec",
                "ulimits": ["nofile:65536:65536", "memlock:-1:-1"],
            },
        ),
    ],
)
def test_dryrun_matches_golden(golden: str, cfg: dict[str, object]) -> None:
    info = create_scheduler("test").submit_dryrun(_two_role_app(), cfg)  # type: ignore[arg-type]
    request = info.request
    assert request.name.startswith(
        "trainer-" + (f"{cfg['share_id']}-" if "share_id" in cfg else "")
    )
    assert request.job_def["jobDefinitionName"] == request.name
    text = _normalized(request)
    path = FIXTURES / golden
    if os.environ.get("TORCHX_UPDATE_GOLDEN") == "1":
        path.write_text(text + "\n")
    assert text + "\n" == path.read_text()
    json.loads(str(request))  # JSON, hence valid YAML as well


def test_dryrun_imports_no_sdk() -> None:
    code = (
        "import sys\n"
        "from torchx import specs\n"
        "from torchx.schedulers.aws_batch_scheduler import create_scheduler\n"
        "app = specs.AppDef('a', [specs.Role('r', 'img', entrypoint='true',"
        " resource=specs.Resource(cpu=1, gpu=0, memMB=64))])\n"
        "print(create_scheduler('s').submit_dryrun(app, {'queue': 'q'}).request.name)\n"
        "sdks = ('boto3', 'botocore', 'docker')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in sdks))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "[]"
