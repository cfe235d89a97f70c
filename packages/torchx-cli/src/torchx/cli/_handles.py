"""Validation of app handles and scheduler names given on the command line.

Checked up front so that a typo yields one line naming what to fix instead of a
scheduler-specific exception from deep inside the runner.
"""

from torchx.cli.errors import EXIT_USAGE, CliError
from torchx.schedulers import get_scheduler_factories

__all__ = [
    "HANDLE_FORMAT",
    "check_app_handle",
    "check_scheduler",
    "installed_schedulers",
    "missing_app_error",
    "shown",
    "split_replica_path",
]

HANDLE_FORMAT = "SCHEDULER://SESSION/APP_ID"
MAX_HANDLE = 1024
"""Longest app handle accepted (an app id is a file or object name on every scheduler)."""


def shown(value: str, limit: int = 80) -> str:
    """``value`` as an error line may show it: control and escape bytes escaped (a handle
    cannot rewrite the terminal), cut to about ``limit`` characters."""
    from torchx.util.strings import escape_unprintable

    text = escape_unprintable(value[: limit + 1])
    return text if len(value) <= limit else text[:limit] + f"... ({len(value)} characters)"


def installed_schedulers() -> list[str]:
    """Names of every registered scheduler, in registration order."""

    return list(get_scheduler_factories())


_RETIRED_SCHEDULERS = {
    "kubernetes_mcad": (
        " (MCAD, which it submitted through, is archived upstream: use -s kubernetes with"
        " -cfg queue=LOCAL_QUEUE, which Kueue admits as one unit)"
    ),
}
"""Schedulers of upstream releases with no counterpart here, and what to use instead."""


def _suggestion(name: str, choices: list[str]) -> str:
    import difflib

    if name in _RETIRED_SCHEDULERS and name not in choices:
        return _RETIRED_SCHEDULERS[name]
    close = difflib.get_close_matches(name, choices, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def check_scheduler(name: str, context: str = "scheduler") -> str:
    """Returns ``name`` if it is a registered scheduler, else fails with the installed ones."""
    names = installed_schedulers()
    if name in names:
        return name
    from torchx.specs.api import SCHEDULER_DISTRIBUTIONS

    installed = ", ".join(names) if names else "<none>"
    dist = SCHEDULER_DISTRIBUTIONS.get(name)
    if dist is not None:
        raise CliError(
            f"{context} '{name}' is not installed: pip install {dist} (installed: {installed})"
        )
    raise CliError(
        f"unknown {context} '{name}'{_suggestion(name, names)}; installed: {installed}"
        " (see `torchx runopts`)"
    )


def check_app_handle(app_handle: str) -> tuple[str, str, str]:
    """Parses ``app_handle`` into (scheduler, session, app_id) or fails with the format."""
    from torchx.specs import parse_app_handle

    if len(app_handle) > MAX_HANDLE or not app_handle.isprintable():
        problem = (
            f"is longer than {MAX_HANDLE} characters"
            if len(app_handle) > MAX_HANDLE
            else "contains control characters"
        )
        raise CliError(
            f"app handle '{shown(app_handle)}' {problem}; pass the handle `torchx run`"
            f" printed ({HANDLE_FORMAT})",
            exit_code=EXIT_USAGE,
        )
    try:
        parsed = parse_app_handle(app_handle)
    except Exception:
        raise CliError(
            f"malformed app handle '{shown(app_handle)}'; expected {HANDLE_FORMAT}"
            " as printed by `torchx run`, e.g. local_cwd://torchx/echo-bcd123",
            exit_code=EXIT_USAGE,
        ) from None
    check_scheduler(parsed.scheduler_backend, context="scheduler in app handle")
    return parsed.scheduler_backend, parsed.session_name, parsed.app_id


def missing_app_error(app_handle: str) -> CliError:
    """The error for a well-formed handle that the scheduler does not know."""
    scheduler = app_handle.split("://", 1)[0]
    return CliError(
        f"app '{app_handle}' not found: it does not exist or was removed from"
        f" {scheduler}'s data plane (see `torchx list -s {scheduler}`)"
    )


def split_replica_path(identifier: str) -> "tuple[str, str, str, list[str]]":
    """``(scheduler, session, app_id, rest)`` of ``SCHEDULER://SESSION/APP_ID[/ROLE[/IDS]]``:
    ``rest`` the parts after the app id (app ids hold no ``/`` on any scheduler). The
    callers (``torchx log``, ``torchx status``) check the form first."""
    scheduler, _, path = identifier.partition("://")
    session, _, rest = path.partition("/")
    app_id, *after = rest.split("/")
    return scheduler, session, app_id, after
