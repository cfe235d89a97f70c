"""A job's files on the cluster, for a submission over ssh: its directory, its workspace
and its logs, reached through the login node (``torchx.schedulers._slurm.ssh``).

The client may not see the cluster's file system at all: the workspace is sent as a tar
stream into a directory made there, and logs are read there from the byte where the last
read stopped, one ``tail`` per file and round.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping
from typing import Any

from torchx.schedulers._slurm import commands
from torchx.schedulers._slurm.ssh import SlurmSshError, SshTarget, remote_command, ssh_argv
from torchx.specs.api import is_terminal

__all__ = ["follow_logs", "home", "make_job_dir", "remove_dir", "send_files"]

_CHUNK = 8 << 20  # at most this much of one log per round trip
_POLL_MIN_S = 0.1
_POLL_MAX_S = 1.0  # an idle follower asks the login node once a second at most


def _check(code: int, err: str, what: str, via: SshTarget) -> None:
    if code != 0:
        raise SlurmSshError(f"{what} on {via.host} failed: {commands.first_error_line(err)}")


def _one_line(out: str) -> str:
    """A path a command printed: only the line break ``pwd`` adds is removed (a name may
    end in blanks)."""
    return out[:-1] if out.endswith("\n") else out


def home(via: SshTarget) -> str:
    """The directory commands start in on the login node (the account's home)."""
    code, out, err = commands.run_once(["pwd", "-P"], via=via)
    _check(code, err, "pwd", via)
    return _one_line(out)


MARKER = ".torchx-owner"
"""The file a submission writes into the job dir it made, holding a token of its own: only
a directory holding it with that token is ever removed (never one recognised by name)."""


def make_job_dir(via: SshTarget, job_dir: str, token: str) -> str:
    """Makes ``job_dir`` (private, parents as needed; relative to the home there) on the
    login node, marks it as this submission's with ``token`` and returns its absolute path;
    refuses one that exists."""
    script = (
        'mkdir -p -- "$(dirname -- "$1")" && mkdir -m 700 -- "$1" && cd -- "$1"'
        f' && (umask 077 && printf %s "$2" >{MARKER}) && pwd -P'
    )
    code, out, err = commands.run_once(["sh", "-c", script, "sh", job_dir, token], via=via)
    if code != 0 and "exists" in err:
        raise FileExistsError(
            f"job_dir {job_dir!r} already exists on {via.host}; pass a new directory (each"
            " job gets its own)"
        )
    _check(code, err, f"making job_dir {job_dir!r}", via)
    return _one_line(out)


def remove_dir(via: SshTarget, path: str, token: str) -> None:
    """Removes ``path`` on the login node (a job dir whose submission failed) if it holds
    this submission's marker; best effort."""
    script = f'[ "$(cat -- "$1/{MARKER}" 2>/dev/null)" = "$2" ] && rm -rf -- "$1"'
    with contextlib.suppress(commands.SlurmCommandError):
        commands.run_once(["sh", "-c", script, "sh", path, token], via=via)


def send_files(
    via: SshTarget, job_dir: str, workspace: str | None, files: Mapping[str, bytes]
) -> None:
    """Copies ``files`` (name -> content, private) and the ``workspace`` directory (a local
    copy, links kept as links) into ``job_dir`` on the login node, as one tar stream
    written while it is read (never whole in memory). TorchX's files come first and the
    login node's tar never replaces a file, so no workspace entry can stand in for them."""

    argv = ["tar", "-x", "-k", "-f", "-", "-C", job_dir]
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            ssh_argv(via, remote_command(argv)),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        assert proc.stdin is not None
        try:
            with tarfile.open(fileobj=proc.stdin, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                for name, content in files.items():
                    info = tarfile.TarInfo(name)
                    info.size = len(content)
                    info.mode = 0o600
                    info.mtime = int(time.time())
                    tar.addfile(info, io.BytesIO(content))
                if workspace is not None:
                    for name in sorted(os.listdir(workspace)):
                        _add_tree(tar, os.path.join(workspace, name), name)
        except BrokenPipeError:
            pass  # the far end stopped reading: its exit status and stderr say why
        finally:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
            code = proc.wait()
        errors.seek(0)
        err = errors.read().decode("utf-8", "replace")
    commands.check_remote_result(via, argv[0], code, err)
    _check(code, err, f"copying the workspace into {job_dir}", via)


def _add_tree(tar: Any, path: str, arcname: str) -> None:
    """``tar.add`` of a workspace entry, except that a sparse file goes as GNU's sparse
    format (PAX 1.0), which the login node's tar extracts with its holes: a preallocated
    checkpoint is not sent, nor written there, at its full size."""

    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        tar.add(path, arcname=arcname, recursive=False)
        for name in sorted(os.listdir(path)):
            _add_tree(tar, os.path.join(path, name), f"{arcname}/{name}")
        return
    segments = _data_segments(path, st) if stat.S_ISREG(st.st_mode) else None
    if segments is None:
        tar.add(path, arcname=arcname, recursive=False)
        return
    info = tar.gettarinfo(path, arcname=arcname)
    sparse_map = f"{len(segments)}\n" + "".join(f"{o}\n{n}\n" for o, n in segments)
    head = sparse_map.encode().ljust(-(-len(sparse_map) // 512) * 512, b"\0")
    info.name = f"{os.path.dirname(arcname) or '.'}/GNUSparseFile.0/{os.path.basename(arcname)}"
    info.size = len(head) + sum(n for _, n in segments)
    info.pax_headers = {
        "GNU.sparse.major": "1",
        "GNU.sparse.minor": "0",
        "GNU.sparse.name": arcname,
        "GNU.sparse.realsize": str(st.st_size),
    }
    with open(path, "rb") as f:
        tar.addfile(info, _SparseReader(head, f, segments))


def _data_segments(path: str, st: os.stat_result) -> list[tuple[int, int]] | None:
    """``[(offset, length)]`` of a file's data, or None when it has no hole."""
    if st.st_blocks * 512 >= st.st_size or not hasattr(os, "SEEK_DATA"):
        return None
    segments = []
    with open(path, "rb") as f:
        fd, offset = f.fileno(), 0
        while offset < st.st_size:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError:  # no data after offset: the rest is a hole
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            segments.append((start, end - start))
            offset = end
    if not segments or segments[-1][0] + segments[-1][1] < st.st_size:
        segments.append((st.st_size, 0))  # the file's length, for a file ending in a hole
    return segments


class _SparseReader:
    """The data area of a sparse member: the map, then each data segment's bytes."""

    def __init__(self, head: bytes, f: Any, segments: list[tuple[int, int]]) -> None:
        self._head, self._f, self._segments = head, f, list(segments)

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes, fewer only at the end (tarfile expects whole reads)."""
        parts: list[bytes] = []
        want = size if size >= 0 else 1 << 62
        while want > 0:
            piece = self._next(want)
            if not piece:
                break
            parts.append(piece)
            want -= len(piece)
        return b"".join(parts)

    def _next(self, size: int) -> bytes:
        if self._head:
            chunk, self._head = self._head[:size], self._head[size:]
            return chunk
        while self._segments and self._segments[0][1] == 0:
            self._segments.pop(0)
        if not self._segments:
            return b""
        offset, length = self._segments[0]
        self._f.seek(offset)
        data: bytes = self._f.read(min(size, length))
        if not data:  # the file shrank meanwhile: zeros keep the member whole
            data = bytes(min(size, length))
        self._segments[0] = (offset + len(data), length - len(data))
        return data


def _read(via: SshTarget, path: str, offset: int) -> bytes:
    """What ``path`` holds from byte ``offset`` on (at most ``_CHUNK``); nothing while the
    file does not exist."""
    script = 'tail -c "+$1" -- "$2" 2>/dev/null | head -c "$3"'
    code, out, err = commands.run_raw(
        ["sh", "-c", script, "sh", str(offset + 1), path, str(_CHUNK)], via=via
    )
    _check(code, err, f"reading {path}", via)
    return out


def _finished(watcher: Any, app_id: str) -> bool:
    desc = watcher.describe(app_id)
    return desc is None or is_terminal(desc.state)


def follow_logs(
    via: SshTarget, watcher: Any, app_id: str, paths: list[str], follow: bool
) -> Iterator[str]:
    """Lines of a replica's log files on the cluster, each file's in order; followed until
    the app ends when ``follow`` (only whole lines while it runs; a partial last line once
    it has ended)."""
    offsets = dict.fromkeys(paths, 0)
    partial = dict.fromkeys(paths, b"")
    delay = _POLL_MIN_S
    while True:
        # asked before reading: the app's final state is written after its logs
        finished = not follow or _finished(watcher, app_id)
        got_data = False
        for path in paths:
            while True:
                data = _read(via, path, offsets[path])
                if not data:
                    break
                got_data = True
                offsets[path] += len(data)
                *lines, partial[path] = (partial[path] + data).split(b"\n")
                for line in lines:
                    yield line.decode("utf-8", "replace") + "\n"
                if len(data) < _CHUNK:
                    break
        if finished:
            for rest in partial.values():
                if rest:
                    yield rest.decode("utf-8", "replace")
            return
        delay = _POLL_MIN_S if got_data else min(delay * 2, _POLL_MAX_S)
        time.sleep(delay)
