"""Why a ``local_cwd`` replica ended, and the root cause of a failed app: a replica's exit
status says how it ended (a stop request from outside, SIGTERM, SIGINT or SIGHUP, is a
preemption; any other signal its own death), the end of its log names the exception, and
torchelastic's error file, where one was written, the failing rank's own report."""

from __future__ import annotations

import json
import signal

from torchx.schedulers._local import records as st
from torchx.specs.vocabulary import Cause
from torchx.util.support.signals import signal_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.specs.failure import Failure

CAUSES: dict[Cause, str | None] = {
    Cause.EXCEPTION: "the traceback at the end of its log, or torchelastic's error file",
    Cause.EXIT_CODE: "its exit status",
    Cause.SIGNAL: "its exit status: killed by a signal (the kernel's OOM killer sends SIGKILL)",
    Cause.OOM: None,
    Cause.TIME_LIMIT: None,
    Cause.PREEMPTED: "SIGTERM, SIGINT or SIGHUP from outside TorchX (an attempt's cause)",
    Cause.NODE_FAILURE: None,
    Cause.IMAGE_PULL: None,
    Cause.REJECTED: None,
    Cause.CANCELLED: None,
    Cause.UNKNOWN: "a failed replica with no exit status on record",
}
"""How this backend names each cause: the native evidence it reads it from, or ``None``
where it never names it (tests/test_backend_wings.py keeps the table whole and true)."""

ENV_TORCHELASTIC_ERROR_FILE = "TORCHELASTIC_ERROR_FILE"
"""Where torchelastic writes a failing rank's own report (a replica's env names the file)."""

INTERRUPTIONS = frozenset(int(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP))
"""Signals that, sent to a replica from outside TorchX, interrupt it (restarted as the next
attempt without spending ``max_retries``); any other death is its own failure (a crash, or
SIGKILL as the OOM killer sends, which would only happen again)."""


def root_failure(request: dict[str, Any], state: dict[str, Any]) -> Failure | None:
    """The first observed failure of a failed app: per failed replica its exit code or
    signal, the end of its log (at most 64 KiB read: a traceback, torchrun's root cause
    block) and its torchelastic error file, earliest first."""
    # a status read: not on `torchx run --dryrun`'s path (bench_cli)
    from torchx.specs.failure import (
        Failure,
        from_error_file,
        from_exit_status,
        from_log_tail,
        read_log_tail,
        root_cause,
    )

    # not at the top: the supervisor imports this module, and its start is on the path
    # of `torchx run --wait` (bench_cli)

    failures = []
    for role_doc, replicas in zip(request["roles"], state["roles"], strict=True):
        for i, (params, rec) in enumerate(zip(role_doc["replicas"], replicas, strict=True)):
            if rec["state"] != st.FAILED:
                continue
            failure = Failure(role=role_doc["name"], replica_id=i, time=rec.get("ended"))
            code = rec.get("exit_code")
            from_exit_status(failure, code if isinstance(code, int) else None)
            log = params.get("combined") or params.get("stderr")
            if log:
                from_log_tail(failure, read_log_tail(log))
            error_file = read_error_file(params["env"].get(ENV_TORCHELASTIC_ERROR_FILE))
            if error_file is not None:
                from_error_file(failure, error_file)
            failures.append(failure)
    return root_cause(failures, [role["name"] for role in request["roles"]])


def read_error_file(path: str | None) -> str | None:
    """A torchelastic reply file, normalized to compact JSON (raw text if it is not JSON)."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    try:
        return json.dumps(json.loads(text))
    except ValueError:
        return text


def attempt_cause(code: int) -> str:
    """Why an attempt ended, from its replica's exit status: a stop request from outside
    (SIGTERM, SIGINT, SIGHUP: what a preemption or a node drain sends) is ``preempted``."""
    if code >= 0:
        return "exit_code"
    return "preempted" if -code in INTERRUPTIONS else "signal"


def failure_message(role: str, replica_id: int, code: int) -> str:
    if code < 0:
        return f"replica {role}[{replica_id}] was killed by {signal_name(-code)}"
    return f"replica {role}[{replica_id}] exited with code {code}"
