"""``find_program`` resolves an entrypoint as exec will."""

import os
from pathlib import Path

from torchx.util.support.programs import find_program


def test_find_program_resolves_like_exec(tmp_path: Path) -> None:
    """One lookup serves local_cwd's check and spawn, and slurm's submit-time check."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    plain = bin_dir / "plain"
    plain.write_text("not executable")
    cwd = str(tmp_path)
    assert find_program("tool", f"/nonexistent{os.pathsep}bin", cwd) == str(tool)
    assert find_program("bin/tool", "", cwd) == str(tool)  # a path: relative to cwd
    assert find_program(str(tool), "", "/") == str(tool)
    assert find_program("plain", str(bin_dir), cwd) is None  # not executable
    assert find_program("bin/plain", "", cwd) is None
    assert find_program("absent", str(bin_dir), cwd) is None
    assert find_program("", str(bin_dir), cwd) is None
