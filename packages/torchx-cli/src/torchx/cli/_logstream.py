"""Streams the logs of many replicas to one file, losing no line.

Used by ``torchx log``, ``torchx run --log`` / ``--wait`` and
:py:func:`torchx.util.log_tee_helpers.tee_logs`. One thread per replica reads
``Runner.log_lines`` and writes whole lines (under a lock) behind a stable
``role/replica`` prefix.

Full speed: when the scheduler's line iterator also offers ``raw_chunks()`` (local_cwd),
the thread copies raw blocks of whole lines, inserting the prefix with ``bytes.replace``,
so a 200 MiB log costs no Python work per line. Otherwise lines are written in batches
(one write and flush per batch, or per line while following a log).

No output lost: a follow (``should_tail``) read can end early or fail to start (a job
that ends before its log exists, a scheduler that stops following at the terminal
state before draining). So after following, once the app is terminal, each thread
reads its replica's log again from the start and prints every line past the ones it
already printed.
"""

import threading
from itertools import islice

from torchx.cli._term import palette_for
from torchx.progress import drop_report_lines, is_report_line
from torchx.specs.sweep import AppArray
from torchx.util.strings import terminal_bytes, terminal_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from datetime import datetime
    from typing import TextIO

    from torchx.runner import Runner
    from torchx.schedulers.api import Stream
    from torchx.specs import AppDef

__all__ = [
    "LogPrinter",
    "ReplicaLogStreamer",
    "find_role_replicas",
    "join_streamers",
    "prefix_chunk",
    "prefix_line",
    "stream_replicas",
]

_BATCH_LINES = 1024


def prefix_line(prefix: str, line: str) -> str:
    """Puts ``prefix`` before ``line`` and after every ``\\r`` or inner ``\\n`` in it.

    Keeps a progress bar (``\\r``-rewritten line) or a multi-line chunk attributable.
    """
    if "\r" in line:
        line = line.replace("\r", f"\r{prefix}")
    if "\n" in line[:-1]:
        line = line[:-1].replace("\n", f"\n{prefix}") + line[-1:]
    if not line.startswith("\r"):
        line = f"{prefix}{line}"
    return line


def prefix_chunk(prefix: bytes, chunk: bytes) -> bytes:
    """:py:func:`prefix_line` applied to every line of ``chunk`` (raw whole lines) at once.

    A missing final ``\n`` is added. Works on bytes with ``bytes.replace`` only: no
    decoding, no Python step per line.
    """
    if not chunk.endswith(b"\n"):
        chunk += b"\n"
    if b"\r" in chunk:
        chunk = chunk.replace(b"\r", b"\r" + prefix)
        body = prefix + chunk[:-1].replace(b"\n", b"\n" + prefix) + b"\n"
        # a line that starts with \r already got its prefix right after that \r
        body = body.replace(b"\n" + prefix + b"\r", b"\n\r")
        if body.startswith(prefix + b"\r"):
            body = body[len(prefix) :]
        return body
    return prefix + chunk[:-1].replace(b"\n", b"\n" + prefix) + b"\n"


def find_role_replicas(app: "AppDef", role_name: "str | None") -> list[tuple[str, int]]:
    """``(role, replica index)`` for every replica of ``role_name`` (all roles if None);
    a sweep's replicas are its elements, numbered by their indices in the sweep."""

    if isinstance(app, AppArray):
        return [
            (role.name, element.index)
            for role in app.roles
            if role_name is None or role.name == role_name
            for element in app.elements
        ]
    return [
        (role.name, i)
        for role in app.roles
        if role_name is None or role.name == role_name
        for i in range(role.num_replicas)
    ]


class LogPrinter:
    """Writes prefixed lines from many threads to ``file`` without interleaving them.

    ``colorize=None`` colours the prefix only when ``file`` is a terminal.
    ``strip`` removes surrounding whitespace from each line (the tee helper's format).
    The lines are a job's own output, data: their control characters but carriage returns
    (a progress bar's, redrawn behind its prefix) are written escaped
    (:func:`~torchx.util.strings.terminal_text`) unless ``raw``.
    """

    def __init__(
        self,
        file: "TextIO",
        colorize: "bool | None" = None,
        strip: bool = False,
        *,
        raw: bool = False,
    ) -> None:
        self.file = file
        self.raw = raw
        self._lock = threading.Lock()
        palette = palette_for(file)
        enabled = bool(palette.GREEN) if colorize is None else colorize
        self._start = "\033[32m" if enabled else ""
        self._end = "\033[0m" if enabled else ""
        self.strip = strip
        # raw chunks skip the text layer where it would only re-encode them as UTF-8
        encoding = str(getattr(file, "encoding", "")).lower().replace("-", "").replace("_", "")
        self._binary = getattr(file, "buffer", None) if encoding == "utf8" else None

    def prefix(self, role: str, replica: int) -> str:
        return f"{self._start}{role}/{replica}{self._end} "

    def _format(self, prefix: str, line: str) -> str:
        if not self.raw:
            line = terminal_text(line, keep_cr=True)
        if self.strip:
            return f"{prefix}{line.strip()}\n"
        if not line.endswith("\n"):
            line += "\n"
        return prefix_line(prefix, line)

    def write(self, prefix: str, line: str) -> None:
        self.write_lines(prefix, [line])

    def write_lines(self, prefix: str, lines: "list[str]") -> None:
        """Writes ``lines`` whole, each behind ``prefix``, with one write and flush."""
        if not self.raw:
            lines = [line for line in lines if not is_report_line(line)]
        if not lines:
            return
        text = "".join([self._format(prefix, line) for line in lines])
        with self._lock:
            self.file.write(text)
            self.file.flush()

    def write_chunk(self, prefix: bytes, chunk: bytes) -> None:
        """Writes a block of raw whole lines (see :py:func:`prefix_chunk`) as one write."""
        if not self.raw:
            chunk = terminal_bytes(drop_report_lines(chunk), keep_cr=True)
            if not chunk:
                return
        data = prefix_chunk(prefix, chunk)
        with self._lock:
            if self._binary is None:
                self.file.write(data.decode("utf-8", "replace"))
            else:
                self.file.flush()  # text written earlier goes first
                self._binary.write(data)
                self._binary.flush()
                return
            self.file.flush()


class ReplicaLogStreamer:
    """Prints the log of one replica; see the module docstring for the catch-up read.

    ``app_done`` is set by whoever waits for the app; without one, the thread asks the
    runner whether the app is terminal once following ends.
    """

    def __init__(
        self,
        runner: "Runner",
        app_handle: str,
        role: str,
        replica: int,
        printer: LogPrinter,
        *,
        regex: "str | None" = None,
        should_tail: bool = False,
        streams: "Stream | None" = None,
        since: "datetime | None" = None,
        until: "datetime | None" = None,
        app_done: "threading.Event | None" = None,
    ) -> None:
        self.runner = runner
        self.app_handle = app_handle
        self.role = role
        self.replica = replica
        self.printer = printer
        self.regex = regex
        self.should_tail = should_tail
        self.streams = streams
        self.since = since
        self.until = until
        self.app_done = app_done
        self.printed = 0  # lines
        # bytes printed from raw chunks; they count for a later read only while every
        # printed line came from raw chunks (printed == _chunked), else lines are skipped
        self._printed_bytes = 0
        self._chunked = 0
        self.error: BaseException | None = None

    def _lines(self, should_tail: bool) -> "Iterable[str]":
        return self.runner.log_lines(
            self.app_handle,
            self.role,
            self.replica,
            self.regex,
            since=self.since,
            until=self.until,
            should_tail=should_tail,
            streams=self.streams,
        )

    def _app_is_terminal(self) -> bool:
        if self.app_done is not None:
            self.app_done.wait()
            return True
        status = self.runner.status(self.app_handle)
        return status is not None and status.is_terminal()

    def run(self) -> None:
        """Prints the replica's lines; records (does not raise) the first error."""
        try:
            self._print(self._lines(self.should_tail), following=self.should_tail)
        except BrokenPipeError:
            raise
        except Exception as e:
            self.error = e
        if not self.should_tail:
            return
        try:
            if not self._app_is_terminal():
                return
            self._print(self._lines(False), following=False)
            self.error = None  # the full read succeeded: nothing was lost
        except BrokenPipeError:
            raise
        except Exception as e:
            self.error = self.error or e

    def _print(self, lines: "Iterable[str]", following: bool) -> None:
        """Prints what ``lines`` holds past what this streamer already printed."""
        prefix = self.printer.prefix(self.role, self.replica)
        raw_chunks = getattr(lines, "raw_chunks", None)
        if raw_chunks is not None and not self.printer.strip and self.printed == self._chunked:
            self._print_chunks(prefix.encode(), raw_chunks())
            return
        it = islice(iter(lines), self.printed, None)
        if following:  # each line as soon as it is read
            for line in it:
                self.printer.write(prefix, line)
                self.printed += 1
            return
        while batch := list(islice(it, _BATCH_LINES)):
            self.printer.write_lines(prefix, batch)
            self.printed += len(batch)

    def _print_chunks(self, prefix: bytes, chunks: "Iterable[bytes]") -> None:
        skip = self._printed_bytes
        for chunk in chunks:
            if skip >= len(chunk):
                skip -= len(chunk)
                continue
            new = chunk[skip:] if skip else chunk
            skip = 0
            self.printer.write_chunk(prefix, new)
            self._printed_bytes += len(new)
            self.printed += new.count(b"\n") + (not new.endswith(b"\n"))
            self._chunked = self.printed

    def start(self) -> threading.Thread:
        thread = threading.Thread(
            target=self._run_quietly, name=f"log-{self.role}-{self.replica}", daemon=True
        )
        thread.start()
        return thread

    def _run_quietly(self) -> None:
        try:
            self.run()
        except BaseException as e:  # surfaced by the joining thread
            self.error = e


def stream_replicas(
    runner: "Runner",
    app_handle: str,
    replicas: "list[tuple[str, int]]",
    printer: LogPrinter,
    *,
    regex: "str | None" = None,
    should_tail: bool = False,
    streams: "Stream | None" = None,
    since: "datetime | None" = None,
    until: "datetime | None" = None,
    app_done: "threading.Event | None" = None,
) -> "tuple[list[ReplicaLogStreamer], list[threading.Thread]]":
    """Starts one streamer thread per replica; returns the streamers and their threads."""
    streamers = [
        ReplicaLogStreamer(
            runner,
            app_handle,
            role,
            k,
            printer,
            regex=regex,
            should_tail=should_tail,
            streams=streams,
            since=since,
            until=until,
            app_done=app_done,
        )
        for role, k in replicas
    ]
    return streamers, [s.start() for s in streamers]


def join_streamers(
    streamers: "list[ReplicaLogStreamer]",
    threads: "list[threading.Thread]",
    timeout: "float | None" = None,
    on_error: "Callable[[str], None] | None" = None,
) -> None:
    """Waits for the streamer threads and raises the first error they recorded.

    Further errors are passed to ``on_error`` (e.g. a logger) so none goes unreported.
    """
    for thread in threads:
        thread.join(timeout)
    errors = [s.error for s in streamers if s.error is not None]
    if not errors:
        return
    for extra in errors[1:]:
        if on_error is not None:
            on_error(f"{type(extra).__name__}: {extra}")
    raise errors[0]
