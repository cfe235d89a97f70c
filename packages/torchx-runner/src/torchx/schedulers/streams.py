"""``Tee``: copies several growing files into one writer (kept for API compatibility).

The durable ``local_cwd`` scheduler no longer needs it (its supervisor writes
``combined.log`` directly from the replicas' pipes); it remains for code that used it to
merge ``stdout``/``stderr`` files of a process into one file.
"""

from __future__ import annotations

import io
import os
import threading
import time

__all__ = ["Tee"]

_READ_SIZE = 64000
_IDLE_SLEEP_S = 0.1


class Tee:
    """Copies everything appended to ``sources`` into ``out`` from a background thread.

    The thread polls the sources without blocking (the files are usually written by a
    child process) and sleeps briefly when none of them has new data. ``close()`` copies
    what is left, then closes the sources and ``out``. ``write`` lets the owner add bytes
    of its own; the order relative to copied data is not defined.
    """

    def __init__(self, out: io.FileIO, *sources: str) -> None:
        if not sources:
            raise ValueError("Tee needs at least one source file to copy from")
        self.out = out
        self.streams_lock = threading.Lock()
        self.streams: list[io.FileIO] = []
        for source in sources:
            stream = io.FileIO(source, "rb")
            os.set_blocking(stream.fileno(), False)
            self.streams.append(stream)
        self._closed = False
        self.thread = threading.Thread(target=self._copy_loop, name="torchx-tee", daemon=True)
        self.thread.start()

    def _copy_once(self) -> bool:
        copied = False
        for stream in self.streams:
            data = stream.read(_READ_SIZE)
            if data:
                copied = True
                self.write(data)
        return copied

    def _copy_loop(self) -> None:
        while True:
            if self._copy_once():
                continue
            if self._closed:
                return
            time.sleep(_IDLE_SLEEP_S)

    def close(self) -> None:
        """Stops after copying what the sources hold now; idempotent."""
        if self._closed:
            return
        self._closed = True
        self.thread.join()
        with self.streams_lock:
            for stream in self.streams:
                stream.close()
            self.out.close()

    def write(self, s: bytes) -> int:
        with self.streams_lock:
            written = self.out.write(s)
            return len(s) if written is None else written
