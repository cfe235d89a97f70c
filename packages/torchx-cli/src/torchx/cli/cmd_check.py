"""``torchx check``: whether each installed scheduler and tracker is ready, and how to fix
what is not.

Every scheduler's :meth:`~torchx.schedulers.api.Scheduler.check_ready` and every configured
tracker's ``check_ready(config)`` run concurrently, each in its own thread, all bounded by
one deadline: a probe that has not answered by then is reported as not ready, so the
command ends in a few seconds even when every backend is down or unreachable.
"""

import argparse
import sys
import threading
import time
from functools import partial

from torchx.cli._handles import check_scheduler, installed_schedulers
from torchx.cli._json import print_json
from torchx.cli._table import format_table, terminal_width
from torchx.cli.cmd_base import SubCommand
from torchx.cli.errors import CliError, error_line
from torchx.runner import config
from torchx.runner.api import get_configured_trackers
from torchx.schedulers import get_scheduler_factories
from torchx.tracker.api import check_tracker
from torchx.util.readiness import not_ready, overall, ready
from torchx.util.support.provenance import command_owner, upstream_torchx_version
from torchx.util.support.retry import outage_budget
from torchx.util.types import to_dict
from torchx.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from torchx.util.readiness import ReadinessCheck

__all__ = ["CmdCheck"]

DEFAULT_TIMEOUT_S = 4.0
"""How long the probes may take together (each probe also bounds its own calls)."""
_LOAD_CAP_S = 60.0
"""The most a probe may take to load its backend before its deadline starts anyway."""


class _Target:
    """One scheduler or tracker being checked, in its own thread."""

    def __init__(
        self, kind: str, name: str, run: "Callable[[Callable[[], None]], list[ReadinessCheck]]"
    ) -> None:
        self.kind = kind
        self.name = name
        self.checks: list[ReadinessCheck] | None = None
        self._run = run
        self.loaded = threading.Event()
        """Set once the probe has loaded its backend (SDK, scheduler object): the deadline
        counts the probe's calls, not a loaded machine's imports."""
        self.loaded_at = 0.0
        self.thread = threading.Thread(target=self._main, name=f"check-{name}", daemon=True)

    def _mark_loaded(self) -> None:
        self.loaded_at = time.monotonic()
        self.loaded.set()

    def _main(self) -> None:
        try:
            self.checks = self._run(self._mark_loaded)
        except Exception as e:
            self.checks = [
                not_ready(
                    "load",
                    f"{type(e).__name__}: {error_line(e)}",
                    f"see `torchx plugins` and `torchx --log_level DEBUG check -s {self.name}`",
                )
            ]
        finally:
            if not self.loaded.is_set():  # it ended before loading: nothing to wait for
                self._mark_loaded()


def _scheduler_checks(
    name: str, cfg: "dict[str, Any]", loaded: "Callable[[], None]"
) -> "list[ReadinessCheck]":

    scheduler = get_scheduler_factories()[name](session_name="torchx")
    scheduler.load_for_check()
    loaded()
    try:
        config.apply(name, cfg)
        with outage_budget(0):  # a check reports a service that is away; it does not wait for it
            return list(scheduler.check_ready(cfg))
    finally:
        scheduler.close()


def _tracker_checks(
    name: str, tracker_config: "str | None", loaded: "Callable[[], None]"
) -> "list[ReadinessCheck]":

    loaded()  # a tracker loads its SDK inside its check: the deadline covers that
    with outage_budget(0):
        return check_tracker(name, tracker_config)


class CmdCheck(SubCommand):
    """``torchx check [-s SCHEDULER ...] [-t TRACKER ...] [-cfg K=V,...] [--json]``."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument(
            "-s",
            "--scheduler",
            action="append",
            default=[],
            metavar="SCHEDULER",
            help="check only these schedulers (repeat, or comma-separated); default: every"
            " installed scheduler and every configured tracker",
        )
        subparser.add_argument(
            "-t",
            "--tracker",
            action="append",
            default=[],
            metavar="TRACKER",
            help="check these trackers (repeat, or comma-separated); default: the configured"
            " ones when no scheduler is named",
        )
        subparser.add_argument(
            "-cfg",
            "--scheduler_args",
            type=str,
            default="",
            help="run options to check with, as KEY=VALUE,... (e.g. queue=my-queue); the"
            " .torchxconfig values apply too",
        )
        subparser.add_argument(
            "--timeout",
            type=float,
            default=DEFAULT_TIMEOUT_S,
            help=f"seconds the probes may take in all (default: {DEFAULT_TIMEOUT_S:g})",
        )
        subparser.add_argument("--json", action="store_true", help="print the result as JSON")

    def run(self, args: argparse.Namespace) -> None:
        named = [n.strip() for value in args.scheduler for n in value.split(",") if n.strip()]
        trackers_named = [
            n.strip() for value in args.tracker for n in value.split(",") if n.strip()
        ]
        schedulers = [check_scheduler(n) for n in named] if named else []
        if not named and not trackers_named:
            schedulers = installed_schedulers()
        cfg = _parse_cfg(args.scheduler_args)
        if args.timeout <= 0:
            raise CliError(f"--timeout must be positive, got {args.timeout:g}", exit_code=2)

        targets = [
            _Target("scheduler", n, partial(_scheduler_checks, n, dict(cfg))) for n in schedulers
        ]
        trackers = _trackers_to_check(trackers_named, checking_all=not named)
        targets += [
            _Target("tracker", n, partial(_tracker_checks, n, c)) for n, c in trackers.items()
        ]
        _run_all(targets, args.timeout)
        install = _install_checks()
        results = [(t.kind, t.name, t.checks or []) for t in targets]
        if args.json:
            print_json({"install": _json_entry(install), **_as_json(results)})
        else:
            (line,) = install
            print(f"{line.found}" + (f"\n  fix: {line.fix}" if line.fix else "") + "\n")
            print(_as_table(results, no_tracker=not trackers and not named))
        explicit = set(named) | set(trackers_named) | {"torchx"}
        failing = [
            name
            for _, name, checks in [("install", "torchx", install), *results]
            if name in explicit and any(c.status in ("not ready", "not configured") for c in checks)
        ]
        if failing:
            sys.stdout.flush()
            raise CliError(f"not ready: {', '.join(failing)} (see the fixes above)")


def _install_checks() -> "list[ReadinessCheck]":
    """Which TorchX this is, and whether upstream's `torchx` overwrites it here."""

    upstream = upstream_torchx_version()
    if upstream is not None:
        owner = command_owner()
        command = {
            "torchx-cli": f"the `torchx` command is torchx-cli {__version__}'s (installed last)",
            "torchx": f"the `torchx` command is upstream's {upstream} (installed last)",
        }.get(owner or "", "the `torchx` command's origin is unknown")
        return [
            not_ready(
                "torchx",
                f"a mixed install: upstream TorchX {upstream} (PyPI's `torchx`) and torchx-cli"
                f" {__version__} overwrite each other's modules; {command}",
                "pip uninstall torchx, then reinstall torchx-cli and your backends",
            )
        ]
    return [ready("torchx", f"torchx-cli {__version__}: the multi-distribution TorchX")]


def _parse_cfg(text: str) -> "dict[str, str]":
    """``-cfg KEY=VALUE,...`` split as ``torchx run`` splits it; each probe reads the keys
    it knows (one ``-cfg`` may serve several schedulers)."""
    if not text.strip():
        return {}

    try:
        return dict(to_dict(text))
    except ValueError as e:
        raise CliError(
            f"malformed -cfg '{text}': {e}; expected KEY=VALUE pairs separated by ','",
            exit_code=2,
        ) from None


def _trackers_to_check(named: "list[str]", checking_all: bool) -> "dict[str, str | None]":
    configured = get_configured_trackers() if (named or checking_all) else {}
    if not named:
        return configured
    return {name: configured.get(name) for name in named}


def _run_all(targets: "list[_Target]", timeout: float) -> None:
    """Starts every probe and waits until all answered or the deadline passed."""

    for target in targets:
        target.thread.start()
    load_by = time.monotonic() + _LOAD_CAP_S
    for target in targets:
        # each probe's deadline starts once it has loaded its backend (a busy machine's
        # import of an SDK is not the service being slow)
        target.loaded.wait(max(0.0, load_by - time.monotonic()))
        started = target.loaded_at if target.loaded.is_set() else time.monotonic()
        target.thread.join(max(0.0, started + timeout - time.monotonic()))
        if target.thread.is_alive():
            target.checks = [
                not_ready(
                    "answer",
                    f"no answer within {timeout:g} s",
                    "the service is slow or unreachable: check its address (or pass a"
                    " longer --timeout)",
                )
            ]


def _json_entry(checks: "list[ReadinessCheck]") -> "dict[str, Any]":
    return {
        "status": overall(checks),
        "checks": [
            {"name": c.name, "status": c.status, "found": c.found, "fix": c.fix} for c in checks
        ],
    }


def _as_json(results: "list[tuple[str, str, list[ReadinessCheck]]]") -> "dict[str, Any]":
    out: dict[str, Any] = {"schedulers": {}, "trackers": {}}
    for kind, name, checks in results:
        out[f"{kind}s"][name] = _json_entry(checks)
    return out


def _as_table(results: "list[tuple[str, str, list[ReadinessCheck]]]", no_tracker: bool) -> str:
    rows: list[list[str]] = []
    for kind, name, checks in results:
        label = name if kind == "scheduler" else f"{name} (tracker)"
        status = overall(checks)
        for i, check in enumerate(checks):
            rows.append(
                [label if i == 0 else "", status if i == 0 else "", check.name, check.found]
            )
            if check.fix:
                rows.append(["", "", "", f"fix: {check.fix}"])
    table = format_table(rows, ["BACKEND", "STATUS", "CHECK", "FOUND"], width=terminal_width())
    if no_tracker:
        table += "\n\nno tracker configured (optional: see `torchx tracker` and [torchx:tracker])"
    return table
