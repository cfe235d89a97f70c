"""``torchx.schedulers.streams.Tee`` (compat helper that merges growing files)."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from torchx.schedulers.streams import Tee


def test_tee_copies_files_written_by_a_process(tmp_path: Path) -> None:
    out_path, err_path, combined = tmp_path / "out", tmp_path / "err", tmp_path / "combined"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        tee = Tee(io.FileIO(combined, "wb"), str(out_path), str(err_path))
        subprocess.run(
            ["sh", "-c", "echo one; echo two >&2; echo three"], stdout=out, stderr=err, check=True
        )
        tee.write(b"own\n")
        tee.close()
        tee.close()  # idempotent
    lines = sorted(combined.read_bytes().splitlines())
    assert lines == [b"one", b"own", b"three", b"two"]


def test_tee_needs_a_source(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="source"):
        Tee(io.FileIO(tmp_path / "x", "wb"))
