"""`.torchxconfig` values as users write them: inline comments, and one line naming the
file, section and key when a value is still wrong."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TORCHX = [sys.executable, "-m", "torchx.cli.main"]


def _torchx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHX")}
    env["TORCHX_HOME"] = str(cwd / "home")
    return subprocess.run(
        [*TORCHX, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_inline_comments_are_not_part_of_slurm_values(tmp_path: Path) -> None:
    (tmp_path / ".torchxconfig").write_text(
        "[slurm]\npartition = debug   # my partition\ncomment = nightly ; cron\n"
    )
    dry = _torchx("run", "--dryrun", "-s", "slurm", "utils.echo", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "--partition=debug " in dry.stdout and "--comment=nightly " in dry.stdout


def test_an_invalid_value_names_the_file_section_and_key(tmp_path: Path) -> None:
    (tmp_path / ".torchxconfig").write_text("[slurm]\npartition = debug queue\n")
    dry = _torchx("run", "--dryrun", "-s", "slurm", "utils.echo", cwd=tmp_path)
    assert dry.returncode == 1
    (line,) = dry.stderr.strip().splitlines()
    assert line.startswith("torchx: error: run option partition='debug queue' is not a valid")
    assert line.endswith(f"(set in {tmp_path}/.torchxconfig [slurm] partition)")
