"""``torchx status``: the state of an app and of each of its replicas.

Imports inside functions are deliberate: a command loads only what its own path uses
(start-up is measured by packages/torchx-cli/tests/test_cli_main.py and
benchmarks/bench_cli.py).
"""

from torchx.cli._option_table import Option, add_options
from torchx.cli.cmd_base import AppHandleSubCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from torchx.runner import Runner
    from torchx.specs import AppStatus

__all__ = ["CmdStatus", "parse_list_arg"]


class CmdStatus(AppHandleSubCommand):
    """``torchx status APP_HANDLE [--roles a,b] [--json]``."""

    OPTIONS = (
        Option(
            ("--roles",),
            "roles",
            "comma-separated roles to show (default: all)",
            default="",
            once=False,
        ),
        Option(("--json",), "json", "print the status as JSON", flag=True),
    )

    def add_arguments(self, subparser: "argparse.ArgumentParser") -> None:
        super().add_arguments(subparser)
        add_options(subparser, "status", self.OPTIONS)

    def run_with_runner(self, args: "argparse.Namespace", runner: "Runner") -> None:
        # --json: each element of a sweep with its own progress (a log read per element)
        status = runner.status(args.app_handle, element_progress=bool(args.json))
        if status is not None:
            filter_roles = parse_list_arg(args.roles)
            if filter_roles:
                roles = [r.role for r in status.roles]
                _check_roles(runner, args.app_handle, roles, filter_roles)
        self.print_status(args, status)

    def print_status(self, args: "argparse.Namespace", app_status: "AppStatus | None") -> None:
        """Prints ``app_status`` as ``args`` ask (``--roles``, ``--json``: the status with
        the app's ``handle``, ``app_id``, ``scheduler`` and ``ui_url``, as upstream's head
        adds them); exits as for a missing app when it is None."""
        if app_status is None:
            self.exit_missing_app(args.app_handle)
        filter_roles = parse_list_arg(getattr(args, "roles", ""))
        if getattr(args, "json", False):
            from torchx.cli._json import print_json
            from torchx.specs import parse_app_handle

            scheduler, _, app_id = parse_app_handle(args.app_handle)
            print_json(
                {
                    **app_status.to_json(filter_roles),
                    "handle": args.app_handle,
                    "app_id": app_id,
                    "scheduler": scheduler,
                    "ui_url": app_status.ui_url,
                }
            )
        else:
            print(app_status.format(filter_roles))


def parse_list_arg(arg: str) -> "list[str] | None":
    """``"a, b"`` -> ``["a", "b"]``; ``None`` when nothing is listed (``--roles ''``)."""
    return [item.strip() for item in arg.split(",") if item.strip()] or None


def _check_roles(
    runner: "Runner", app_handle: str, roles: "list[str]", wanted: "list[str]"
) -> None:
    """Fails, as ``torchx log`` does, for a role the app does not have."""
    if not roles:  # some schedulers report no roles in the status: ask for the AppDef
        app = runner.describe(app_handle)
        roles = [role.name for role in app.roles] if app is not None else []
        if not roles:
            return
    unknown = [name for name in wanted if name not in roles]
    if unknown:
        from torchx.cli._errors import CliError

        raise CliError(
            f"app {app_handle} has no role '{unknown[0]}'; its roles: {', '.join(roles)}"
        )
