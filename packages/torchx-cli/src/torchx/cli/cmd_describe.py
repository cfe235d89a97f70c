"""``torchx describe``: the AppDef (roles, images, args, resources) of an app."""

from torchx.cli.cmd_base import AppHandleSubCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from torchx.runner import Runner

__all__ = ["CmdDescribe"]


class CmdDescribe(AppHandleSubCommand):
    """``torchx describe APP_HANDLE [--json]``."""

    OPTION_DEFAULTS = {"json": False}

    def add_arguments(self, subparser: "argparse.ArgumentParser") -> None:
        super().add_arguments(subparser)
        subparser.add_argument("--json", action="store_true", help="print the AppDef as JSON")

    def run_with_runner(self, args: "argparse.Namespace", runner: "Runner") -> None:
        app = runner.describe(args.app_handle)
        if app is None:
            self.exit_missing_app(args.app_handle)
        if args.json:
            from torchx.cli._json import print_json

            print_json(app)
        else:
            from pprint import pformat

            from torchx.util.lazy_dataclass import asdict

            print(pformat(asdict(app), indent=2, width=80))
