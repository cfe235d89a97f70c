"""Light commands never import a scheduler SDK, with every distribution installed.

The CLI's start-up cost is a feature: `torchx --help`, `builtins`, `runopts` (which lists
every scheduler's options) and a dry run without a workspace must not pay for `docker`,
`kubernetes`, `boto3` or `mlflow`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SDKS = ("docker", "kubernetes", "boto3", "botocore", "mlflow", "requests")

PROBE = """
import sys
from torchx.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sdks = {sdks!r}
print(sorted(m for m in sys.modules if m.split(".")[0] in sdks), file=sys.stderr)
"""


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
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(sdks=SDKS), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr
