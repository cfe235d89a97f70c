"""Reading replica log files (compat path): the follower lives in ``torchx-specs``.

:mod:`torchx.schedulers.log_files` is shared by every file-based scheduler (``local_cwd``
here, ``slurm`` in ``torchx-sched-slurm``); this module keeps the old import path working.
"""

from __future__ import annotations

from torchx.schedulers.log_files import LogIterator, follow_lines, open_log, read_lines

__all__ = ["LogIterator", "follow_lines", "open_log", "read_lines"]
