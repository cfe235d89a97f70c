"""A ``local_cwd`` app's log files: made before the supervisor starts (so ``torchx log``
finds them at once), and the end of the first replica's, where ``torchx.progress``
reports."""

from __future__ import annotations

from collections.abc import Callable

from torchx.schedulers._local import records as st
from torchx.util.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

log = get_logger(__name__)


def progress_tail(request: dict[str, Any]) -> Callable[[], str] | None:
    """Reads the end of the first role's replica 0 log, where ``torchx.progress`` reports
    (its stderr file; the one file when both streams go to one)."""
    replicas = request["roles"][0]["replicas"] if request["roles"] else []
    log = (replicas[0].get("combined") or replicas[0].get("stderr")) if replicas else None
    if not log:
        return None

    def tail() -> str:
        # a status read: not on `torchx run --dryrun`'s path (bench_cli)
        from torchx.specs.failure import read_log_tail

        return read_log_tail(log)

    return tail


def create_log_files(paths: list[str]) -> None:
    """Creates the (empty) log files of an app that already runs: best effort, as their
    directories exist and the supervisor creates any file it has output for."""
    for path in paths:
        try:
            st.create_private_file(path)
        except OSError as e:
            log.warning(
                "cannot create the log file %s (%s); it appears with the first output",
                path,
                e.strerror,
            )
            return
