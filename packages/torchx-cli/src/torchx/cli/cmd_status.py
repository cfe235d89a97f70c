"""``torchx status``: the state of an app and of each of its replicas."""

from torchx.cli._handles import shown, split_replica_path
from torchx.cli._json import print_json
from torchx.cli._option_table import Option, add_options
from torchx.cli.cmd_base import AppHandleSubCommand
from torchx.cli.errors import EXIT_USAGE, CliError
from torchx.specs import parse_app_handle

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from torchx.runner import Runner
    from torchx.specs import AppStatus

__all__ = ["CmdStatus", "parse_list_arg", "split_replica"]


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
        handle, role, replica_id = split_replica(args.app_handle)
        if role is not None:  # HANDLE/ROLE[/ID]: that role, or one replica (sweep element)
            args.app_handle = handle
            args.roles = role
        # --json and one replica: a sweep's elements with their own progress (a log read each)
        wanted = bool(args.json) or replica_id is not None
        status = runner.status(handle, element_progress=wanted)
        if status is not None:
            filter_roles = parse_list_arg(args.roles)
            if filter_roles:
                roles = [r.role for r in status.roles]
                _check_roles(runner, handle, roles, filter_roles)
        if status is None or role is None or replica_id is None:
            self.print_status(args, status)
            return
        _print_replica(args, status, role, replica_id)

    def print_status(self, args: "argparse.Namespace", app_status: "AppStatus | None") -> None:
        """Prints ``app_status`` as ``args`` ask (``--roles``, ``--json``: the status with
        the app's ``handle``, ``app_id``, ``scheduler`` and ``ui_url``, as upstream's head
        adds them); exits as for a missing app when it is None."""
        if app_status is None:
            self.exit_missing_app(args.app_handle)
        filter_roles = parse_list_arg(getattr(args, "roles", ""))
        if getattr(args, "json", False):
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


def split_replica(given: str) -> "tuple[str, str | None, int | None]":
    """``(handle, role, replica id)`` of ``SCHEDULER://SESSION/APP_ID[/ROLE[/ID]]``; a part
    that is absent is None."""

    scheduler, session, app_id, after = split_replica_path(given)
    if not after or "://" not in given:
        return given, None, None
    handle = f"{scheduler}://{session}/{app_id}"
    role, ids = after[0], after[1:]
    if ids in ([], [""]):
        return handle, role or None, None
    if len(ids) == 1 and ids[0].isdigit():
        return handle, role, int(ids[0])

    raise CliError(
        f"malformed app handle '{shown(given)}'; expected SCHEDULER://SESSION/APP_ID, optionally"
        " followed by /ROLE or /ROLE/ID (a replica, or a sweep's element index)",
        exit_code=EXIT_USAGE,
    )


def _print_replica(
    args: "argparse.Namespace", status: "AppStatus", role: str, replica_id: int
) -> None:
    """``torchx status HANDLE/ROLE/ID``: one replica, or one element of a sweep."""

    if status.replica(role, replica_id) is None:
        ids = ", ".join(str(r.id) for rs in status.roles if rs.role == role for r in rs.replicas)
        what = (
            "this sweep has no element"
            if status.array is not None
            else f"role {role} has no replica"
        )
        raise CliError(
            f"{what} {replica_id}; its {'elements' if status.array else 'replicas'}: {ids}"
        )
    if getattr(args, "json", False):
        print_json({**status.replica_json(role, replica_id), "handle": args.app_handle})
    else:
        print(status.format_replica(role, replica_id), end="")


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
        raise CliError(
            f"app {app_handle} has no role '{unknown[0]}'; its roles: {', '.join(roles)}"
        )
