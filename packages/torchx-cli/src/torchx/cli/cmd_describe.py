"""``torchx describe``: the AppDef (roles, images, args, resources) of an app."""

from pprint import pformat

from torchx.cli._json import print_json, to_jsonable
from torchx.cli._option_table import Option, add_options
from torchx.cli.cmd_base import AppHandleSubCommand
from torchx.util.startup.lazy_dataclass import asdict
from torchx.util.strings import terminal_text
from torchx.util.support.secrets import shown_env_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from torchx.runner import Runner
    from torchx.specs import AppDef

__all__ = ["CmdDescribe"]


def mask_secrets(app: "AppDef") -> None:
    """Replaces, in place, the env values of ``app``'s roles that are secrets, and the
    credentials inside the others (:mod:`torchx.util.support.secrets`: by name and by value)."""

    for role in app.roles:
        role.env = {k: shown_env_value(k, v) for k, v in role.env.items()}


class CmdDescribe(AppHandleSubCommand):
    """``torchx describe APP_HANDLE [--json] [--show-secrets]``.

    Env values whose names look like secrets are shown as ``****`` unless
    ``--show-secrets`` is given: terminals and CI logs are read by others.
    """

    OPTIONS = (
        Option(("--json",), "json", "print the AppDef as JSON", flag=True),
        Option(
            ("--show-secrets",),
            "show_secrets",
            "print env values in clear; by default a value whose name looks secret"
            " (*SECRET*, *TOKEN*, *PASSWORD*, *KEY*, *_PASS, *_PAT, *_AUTH, *_CREDS, ...) is"
            " shown as ****, and credentials inside any value (URL user-info, ?access_token=,"
            " known token shapes) are masked",
            flag=True,
        ),
    )

    def add_arguments(self, subparser: "argparse.ArgumentParser") -> None:
        super().add_arguments(subparser)
        add_options(subparser, "describe", self.OPTIONS)

    def run_with_runner(self, args: "argparse.Namespace", runner: "Runner") -> None:
        app = runner.describe(args.app_handle)
        if app is None:
            self.exit_missing_app(args.app_handle)
        if not args.show_secrets:
            mask_secrets(app)
        status = runner.status(args.app_handle, progress=False)
        attempts = status.attempts if status is not None else []
        if args.json:
            print_json({**to_jsonable(app), "attempts": [a.to_json() for a in attempts]})
        else:
            print(terminal_text(pformat(asdict(app), indent=2, width=80)))
            if attempts:
                print("attempts (local time):")
                for attempt in attempts:
                    print("  " + terminal_text(attempt.line()))
