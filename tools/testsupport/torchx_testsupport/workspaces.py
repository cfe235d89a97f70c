"""Workspaces that hold what should never be copied or packed, for the job_dir copy's tests
(torchx-specs) and the image build context's (torchx-workspace-docker)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def hostile_workspace(tmp_path: Path) -> Iterator[Path]:
    """A workspace with a link to /dev/zero, a link to a secret outside it, a FIFO, a
    socket, a FIFO as its ignore file and one ordinary file."""
    outside = tmp_path / "secret.key"
    outside.write_text("private key\n")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "train.py").write_text("print('train')\n")
    os.symlink("/dev/zero", ws / "zero")
    os.symlink(outside, ws / "sub" / "key")
    os.symlink("sub", ws / "linked_dir")
    os.mkfifo(ws / "pipe")
    os.mkfifo(ws / ".torchxignore")
    os.mkfifo(ws / ".dockerignore")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(ws / "agent.sock"))
    try:
        yield ws
    finally:
        sock.close()


def oversized_workspace(tmp_path: Path) -> Path:
    """A workspace of two 700 KiB files: over a 1 MB limit (``TORCHX_WORKSPACE_MAX_MB=1``)
    as a whole, under it file by file, so the limit must count the total."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a.bin", "b.bin"):
        (ws / name).write_bytes(b"x" * (700 << 10))
    return ws
