"""Light commands never import a scheduler SDK, with every distribution installed.

The CLI's start-up cost is a feature: `torchx --help`, `builtins`, `runopts` (which lists
every scheduler's options) and a dry run without a workspace must not pay for `docker`,
`kubernetes`, `boto3` or `mlflow`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from torchx_testsupport import sdk_imports

SDKS = ("docker", "kubernetes", "boto3", "botocore", "mlflow", "requests")


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["builtins"],
        ["runopts"],
        ["run", "--dryrun", "-s", "local_docker", "--workspace", "", "utils.echo", "--msg", "x"],
        ["run", "--dryrun", "-s", "aws_batch", "-cfg", "queue=q", "--workspace", "", "utils.echo"],
        ["run", "-s", "local_cwd", "--wait", "utils.echo", "--msg", "x"],
        ["runopts", "kubernetes"],
        [
            "run",
            "--dryrun",
            "-s",
            "kubernetes",
            "-cfg",
            "queue=q,validate_spec=False",
            "--workspace",
            "",
            "utils.echo",
        ],
    ],
    ids=[
        "help",
        "builtins",
        "runopts",
        "dryrun-local_docker",
        "dryrun-aws_batch",
        "run-local_cwd",
        "runopts-kubernetes",
        "dryrun-kubernetes",
    ],
)
def test_light_commands_import_no_sdk(argv: list[str], tmp_path: Path) -> None:
    # With the MLflow tracker configured too: the launcher only passes it on to the job.
    (tmp_path / ".torchxconfig").write_text(
        "[torchx:tracker]\nmlflow =\n\n[tracker:mlflow]\nconfig = http://127.0.0.1:9\n"
    )
    # A command that fails (a typo, a missing option) loads nothing and would pass unseen.
    # `run --wait` hands the app's end to a detached helper, which would wait out the
    # tracking server's "outage" (nothing listens on port 9) for 10 minutes after the test.
    env = {**os.environ, "TORCHX_OUTAGE_S": "1"}
    probe = sdk_imports(sys.executable, argv, SDKS, cwd=tmp_path, env=env)
    assert probe.succeeded, probe.stderr
    assert probe.modules == [], probe.stderr
