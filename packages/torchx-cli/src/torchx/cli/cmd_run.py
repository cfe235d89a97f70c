"""``torchx run``: launch a component on a scheduler (or print what would be launched).

On success the app handle is the only line on stdout (scripts capture it). Apps on
``local_cwd``, and any app with ``--wait``/``--log``, are waited for while every
replica's log lines stream to stderr behind a ``role/replica`` prefix; the exit code is
0 only if the app SUCCEEDED.
"""

import json
import os
import sys
import threading
from contextvars import ContextVar

from torchx.cli._cli_defaults import explicitly_given
from torchx.cli._handles import check_app_handle, check_scheduler, installed_schedulers
from torchx.cli._option_table import Option, add_options, read_plain, scheduler_options
from torchx.cli.cfg import parse_cfg_json, parse_cfg_str, scheduler_runopts
from torchx.cli.cmd_base import SubCommand
from torchx.cli.cmd_builtins import CmdBuiltins
from torchx.cli.errors import EXIT_USAGE, CliError, Terminated, usage_error
from torchx.runner import config, get_runner
from torchx.runner.sweep import parse_sweep_flags
from torchx.schedulers import get_default_scheduler_name
from torchx.specs import NONE, AppState, InvalidRunConfigException, parse_app_handle
from torchx.specs.builders import ComponentArgumentError
from torchx.specs.component_params import resolved_annotations
from torchx.util.log import get_logger
from torchx.util.startup import fn_params
from torchx.util.startup.lazy_dataclass import asdict, dataclass, field, fields
from torchx.util.strings import escape_unprintable
from torchx.util.types import get_argparse_param_type

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any, NoReturn

    from torchx.runner import Runner
    from torchx.specs import AppDryRunInfo, AppStatus, CfgVal

__all__ = [
    "LOCAL_SCHEDULER_WARNING_MSG",
    "MISSING_COMPONENT_ERROR_MSG",
    "CmdBuiltins",
    "CmdRun",
    "TorchXRunArgs",
    "torchx_run_args_from_argparse",
    "torchx_run_args_from_json",
]

logger = get_logger(__name__)

LOCAL_SCHEDULER_WARNING_MSG = "the `local` scheduler is deprecated; use `local_cwd`"
MISSING_COMPONENT_ERROR_MSG = (
    "missing component name, either provide it from the CLI or in .torchxconfig"
)
_LOG_JOIN_TIMEOUT_S = 60.0
_EXIT_INTERRUPTED = 130


@dataclass
class TorchXRunArgs:
    """Everything ``torchx run`` needs; the JSON object read by ``torchx run --stdin``."""

    component_name: str
    scheduler: str
    scheduler_args: "dict[str, Any]"
    scheduler_cfg: "dict[str, CfgVal]" = field(default_factory=dict)
    dryrun: bool = False
    wait: bool = False
    log: bool = False
    detach: bool = False
    workspace: str = ""
    parent_run_id: "str | None" = None
    tee_logs: bool = False
    idempotency_key: "str | None" = None
    sweep: "dict[str, list[str]]" = field(default_factory=dict)
    max_parallel: "int | None" = None
    component_args: "dict[str, Any]" = field(default_factory=dict)
    component_args_str: "list[str]" = field(default_factory=list)


_REQUIRED_JSON_FIELDS = ("component_name", "scheduler", "scheduler_args")


def torchx_run_args_from_json(json_data: "dict[str, Any]") -> TorchXRunArgs:
    """Builds :py:class:`TorchXRunArgs` from a JSON object; unknown or missing keys fail.

    An empty ``workspace`` means the current directory.
    """
    known = {f.name for f in fields(TorchXRunArgs)}
    unknown = sorted(set(json_data) - known)
    if unknown:
        raise ValueError(
            f"unknown key(s) in run arguments JSON: {', '.join(unknown)};"
            f" accepted: {', '.join(sorted(known))}"
        )
    missing = [name for name in _REQUIRED_JSON_FIELDS if name not in json_data]
    if missing:
        raise ValueError(
            f"missing required key(s) in run arguments JSON: {', '.join(missing)}"
            f" (required: {', '.join(_REQUIRED_JSON_FIELDS)})"
        )
    _check_json_types(json_data)
    args = TorchXRunArgs(**json_data)
    if not args.workspace:
        args.workspace = os.getcwd()
    return args


def _check_json_types(json_data: "dict[str, Any]") -> None:
    """Checks each value's JSON type (``"dryrun": "yes"`` is not a bool, a dict is not an
    argument); one line naming the first key that is wrong."""
    from typing import Any

    from pydantic import BaseModel, ConfigDict, ValidationError

    class RunArgsJSON(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        component_name: str
        scheduler: str
        scheduler_args: dict[str, Any]
        scheduler_cfg: dict[str, Any] = {}
        dryrun: bool = False
        wait: bool = False
        log: bool = False
        detach: bool = False
        workspace: str = ""
        parent_run_id: str | None = None
        tee_logs: bool = False
        idempotency_key: str | None = None
        sweep: dict[str, list[str]] = {}
        max_parallel: int | None = None
        component_args: dict[str, Any] = {}
        component_args_str: list[str] = []

    try:
        RunArgsJSON.model_validate(json_data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(
            f"`{where}` is {type(first['input']).__name__} {first['input']!r}:"
            f" {first['msg'].lower()}"
        ) from None


def torchx_run_args_from_argparse(
    args: "argparse.Namespace",
    component_name: str,
    component_args: "list[str]",
    scheduler_cfg: "dict[str, CfgVal]",
) -> TorchXRunArgs:
    """Builds :py:class:`TorchXRunArgs` from parsed ``torchx run`` flags."""
    return TorchXRunArgs(
        component_name=component_name,
        scheduler=args.scheduler,
        scheduler_args={},
        scheduler_cfg=scheduler_cfg,
        dryrun=args.dryrun,
        wait=args.wait,
        log=args.log,
        detach=bool(getattr(args, "detach", False)),
        workspace=args.workspace,
        parent_run_id=args.parent_run_id,
        tee_logs=args.tee_logs,
        idempotency_key=getattr(args, "idempotency_key", None),
        sweep=_sweep_of(args),
        max_parallel=_max_parallel_of(args),
        component_args_str=component_args,
    )


def _sweep_of(args: "argparse.Namespace") -> "dict[str, list[str]]":
    """``--sweep`` flags as ``{ARG: [values]}`` (one line for a malformed one)."""
    flags = getattr(args, "sweep", None) or []
    if not flags:
        return {}

    try:
        return parse_sweep_flags(flags)
    except ValueError as e:
        raise CliError(str(e), exit_code=EXIT_USAGE) from None


def _max_parallel_of(args: "argparse.Namespace") -> "int | None":
    raw = getattr(args, "max_parallel", None)
    if raw is None:
        return None
    if not getattr(args, "sweep", None):
        raise CliError(
            "--max-parallel limits the elements of a sweep; give --sweep ARG=V1,V2 too",
            exit_code=EXIT_USAGE,
        )
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise CliError(
            f"--max-parallel {raw!r}: give a whole number of at least 1", exit_code=EXIT_USAGE
        )
    return value


def _parse_component_name_and_args(
    component_name_and_args: "list[str]",
    subparser: "argparse.ArgumentParser | None" = None,
    dirs: "list[str] | None" = None,
) -> "tuple[str, list[str]]":
    """Splits ``[COMPONENT] [ARGS...]``; the component defaults to ``[cli:run] component``.

    A leading ``--`` is dropped. If the first token is an option, every token is a
    component argument. A token repeated within one ``--``-delimited group (``--msg a
    --msg b``) is an error (reported by ``subparser``, else as ``torchx run`` reports
    usage errors).
    """

    component = config.get_config(prefix="cli", name="run", key="component", dirs=dirs)
    args = list(component_name_and_args)
    if args and args[0] == "--":
        args = args[1:]
    component_args: list[str] = []
    if args:
        if args[0].startswith("-"):
            component_args = args
        else:
            component, component_args = args[0], args[1:]

    group: list[str] = []
    for arg in [*component_args, "--"]:
        if arg != "--":
            group.append(arg)
            continue
        # whole tokens, as upstream compares them (``--msg=a --msg=b`` is no repeat), and
        # bare dashes (``-``: stdin) are no options
        options = [a for a in group if a.startswith("-") and a.strip("-")]
        duplicates = sorted({o for o in options if options.count(o) > 1})
        if duplicates:
            _run_usage_error(subparser, f"Repeated Command Line Arguments: {duplicates}")
        group = []

    if not component:
        _run_usage_error(subparser, MISSING_COMPONENT_ERROR_MSG)
    return component, component_args


def _check_config_files(component: str) -> None:
    """Typos of the config files, said where they are (:mod:`torchx.runner.config_check`):
    a warning for each misspelled section or key, an error for a value of the component's
    section that does not fit its argument. A component that cannot be found is left to
    the run to report."""

    if not config.find_configs():
        return  # no file, no typo (and nothing more is imported on the run path)
    from torchx.runner.config_check import check_component_values, warn_typos

    if ":" in component:  # a file's component: looking it up here would run the file twice
        from torchx.cli._component_cache import load_component_names

        listed = [name for name, _ in load_component_names() or []]
        warn_typos(installed_schedulers(), None, (), listed)
        return
    try:
        from torchx.specs.finder import get_component

        fn = get_component(component).fn
    except Exception:
        return
    from torchx.cli._component_cache import load_component_names

    params = {p.name: p for p in fn_params.parameters(fn)}
    listed = [name for name, _ in load_component_names() or []]
    warn_typos(installed_schedulers(), component, params, listed)

    annotations = resolved_annotations(fn)

    def convert(key: str, raw: str) -> object:
        param = params.get(key)
        if param is None or param.kind == fn_params.VAR_POSITIONAL:
            return raw
        typed = fn_params.Param(
            key, param.kind, param.default, annotations.get(key, param.annotation)
        )
        kind = get_argparse_param_type(typed)
        try:
            return kind(raw)
        except ValueError:
            raise ValueError(f"expected {kind.__name__}") from None

    try:
        check_component_values(component, config.get_configs("component", component), convert)
    except config.ConfigError as e:
        raise CliError(str(e)) from None


def _run_usage_error(subparser: "argparse.ArgumentParser | None", message: str) -> "NoReturn":
    if subparser is not None:
        subparser.error(message)
    usage_error("torchx run", message)


def _default_scheduler() -> "str | None":
    try:
        return get_default_scheduler_name()
    except RuntimeError:
        return None  # reported when `run` needs one


class CmdRun(SubCommand):
    """``torchx run [-s S] [-cfg K=V,...] [--dryrun] [--wait] [--log] ... COMPONENT [ARGS]``."""

    def __init__(self) -> None:
        self._subparser: argparse.ArgumentParser | None = None

    def add_arguments(self, subparser: "argparse.ArgumentParser") -> None:
        import argparse

        self._subparser = subparser
        subparser.usage = "torchx run [OPTIONS] COMPONENT [COMPONENT_ARGS...]"
        subparser.formatter_class = argparse.RawDescriptionHelpFormatter
        subparser.epilog = (
            "examples:\n"
            '  torchx run utils.echo --msg "hello"              # on local_cwd, the default\n'
            "  torchx run -s slurm --wait dist.ddp -j 2x4 --script train.py\n"
            "  torchx run ./my_component.py:train --lr 0.1     # a component of your own\n"
            "  torchx run dist.ddp --help                       # a component's arguments"
        )
        add_options(subparser, "run", RUN_OPTIONS)
        subparser.add_argument(
            "component_name_and_args",
            nargs=argparse.REMAINDER,
            metavar="COMPONENT [COMPONENT_ARGS...]",
            help="component name (`torchx builtins`) or path/to/file.py:function, then its"
            " arguments (`torchx run COMPONENT --help`)",
        )

    def parse_plain(self, words: "list[str]") -> "dict[str, object] | None":
        """``torchx run [OPTIONS] [COMPONENT [ARGS...]]`` read without argparse when it is a
        plain line of :data:`RUN_OPTIONS` (a subclass adding options goes to argparse)."""
        if type(self).add_arguments is not CmdRun.add_arguments:
            return None

        return read_plain(words, "run", RUN_OPTIONS, "component_name_and_args")

    @property
    def subparser(self) -> "argparse.ArgumentParser":
        if self._subparser is None:
            raise RuntimeError("CmdRun.add_arguments() must be called before run()")
        return self._subparser

    def run(self, args: "argparse.Namespace") -> None:
        os.environ["TORCHX_CONTEXT_NAME"] = os.environ.get("TORCHX_CONTEXT_NAME", "cli_run")

        if args.stdin:
            self._check_stdin_flags(args)
        component_defaults = config.load_sections(prefix="component")
        with get_runner(component_defaults=component_defaults) as runner:
            if getattr(args, "retry_failed", None):
                self._retry_failed(runner, args)
                return
            if args.stdin:
                run_args = self._run_args_from_stdin(runner, dryrun=args.dryrun)
            else:
                run_args = self._run_args_from_flags(runner, args)
            token = _JSON_OUTPUT.set(bool(getattr(args, "json", False)))
            try:
                self._run(runner, run_args)
            finally:
                _JSON_OUTPUT.reset(token)

    def _check_stdin_flags(self, args: "argparse.Namespace") -> None:
        given = explicitly_given(args)

        def differs(dest: str) -> bool:  # given with a value other than its default
            return dest in given and getattr(args, dest) != self.subparser.get_default(dest)

        conflicts = [
            flag
            for flag, used in (
                ("-s/--scheduler", differs("scheduler")),
                ("-cfg/--scheduler_args", differs("scheduler_args") and args.scheduler_args),
                ("--wait", args.wait),
                ("--log", args.log),
                ("--workspace", differs("workspace")),
                ("--parent_run_id", differs("parent_run_id")),
                ("--tee_logs", args.tee_logs),
                ("--idempotency-key", args.idempotency_key is not None),
                ("--sweep", bool(getattr(args, "sweep", None))),
                ("--max-parallel", getattr(args, "max_parallel", None) is not None),
                ("--retry-failed", getattr(args, "retry_failed", None) is not None),
                ("COMPONENT", bool(args.component_name_and_args)),
            )
            if used
        ]
        if conflicts:
            self.subparser.error(
                f"--stdin cannot be combined with {', '.join(conflicts)}"
                " (only --dryrun is allowed; put everything else in the JSON)"
            )

    @staticmethod
    def _run_sweep(
        runner: "Runner",
        run_args: TorchXRunArgs,
        component_args: "list[str] | dict[str, Any]",
        cfg: "dict[str, CfgVal]",
        workspace: "str | None",
    ) -> "str | None":
        """Submits (or, with ``--dryrun``, prints) the sweep; its handle, or None."""
        if run_args.dryrun:
            info = runner.dryrun_sweep(
                run_args.component_name,
                component_args,
                run_args.sweep,
                run_args.scheduler,
                cfg=cfg,
                workspace=workspace,
                parent_run_id=run_args.parent_run_id,
                max_parallel=run_args.max_parallel,
                idempotency_key=run_args.idempotency_key,
            )
            _print_dryrun(info)
            return None
        return runner.run_sweep(
            run_args.component_name,
            component_args,
            run_args.sweep,
            run_args.scheduler,
            cfg=cfg,
            workspace=workspace,
            parent_run_id=run_args.parent_run_id,
            max_parallel=run_args.max_parallel,
            idempotency_key=run_args.idempotency_key,
        )

    def _retry_failed(self, runner: "Runner", args: "argparse.Namespace") -> None:
        """``torchx run --retry-failed HANDLE``: the failed elements as one new array."""
        others = [
            flag
            for flag, used in (
                ("COMPONENT", bool(args.component_name_and_args)),
                ("--sweep", bool(getattr(args, "sweep", None))),
                ("--max-parallel", getattr(args, "max_parallel", None) is not None),
                ("--dryrun", args.dryrun),
                ("--idempotency-key", args.idempotency_key is not None),
                ("-cfg/--scheduler_args", bool(args.scheduler_args)),
            )
            if used
        ]
        if others:
            raise CliError(
                f"--retry-failed cannot be combined with {', '.join(others)}: it resubmits"
                " the failed elements as they were first submitted",
                exit_code=EXIT_USAGE,
            )

        handle = args.retry_failed
        check_app_handle(handle)
        try:
            new_handle = runner.retry_failed(handle)
        except ValueError as e:
            raise CliError(str(e)) from None
        scheduler = new_handle.split("://", 1)[0]
        if args.wait or args.log or scheduler in _FOREGROUND_SCHEDULERS:
            notes = _PendingNotes(new_handle)
            _wait_and_exit(runner, new_handle, tee=args.tee_logs, notes=notes)
        else:
            _print_next_steps(runner, new_handle)

    def _run_args_from_stdin(self, runner: "Runner", dryrun: bool) -> TorchXRunArgs:
        try:
            data = json.load(sys.stdin)
        except json.JSONDecodeError as e:
            raise CliError(f"invalid JSON on stdin for `torchx run --stdin`: {e}") from None
        if not isinstance(data, dict):
            raise CliError(
                "`torchx run --stdin` expects a JSON object with component_name, scheduler"
                f" and scheduler_args; got {type(data).__name__}"
            )
        try:
            run_args = torchx_run_args_from_json(data)
        except (TypeError, ValueError) as e:
            raise CliError(f"invalid `torchx run --stdin` JSON: {e}") from None
        check_scheduler(run_args.scheduler)
        if run_args.scheduler_args:
            opts = scheduler_runopts(runner, run_args.scheduler)
            run_args.scheduler_cfg = parse_cfg_json(
                opts, run_args.scheduler, run_args.scheduler_args
            )
        run_args.dryrun = run_args.dryrun or dryrun
        return run_args

    def _run_args_from_flags(self, runner: "Runner", args: "argparse.Namespace") -> TorchXRunArgs:
        component, component_args = _parse_component_name_and_args(
            args.component_name_and_args, self._subparser
        )
        if not args.scheduler:
            raise CliError("no scheduler is installed; install torchx-runner for local_cwd")
        check_scheduler(args.scheduler)
        cfg: dict[str, CfgVal] = {}
        if args.scheduler_args:
            opts = scheduler_runopts(runner, args.scheduler)
            cfg = parse_cfg_str(opts, args.scheduler, args.scheduler_args)
        return torchx_run_args_from_argparse(args, component, component_args, cfg)

    def _run(self, runner: "Runner", run_args: TorchXRunArgs) -> None:
        scheduler = run_args.scheduler
        component = run_args.component_name
        if scheduler == "local":
            logger.warning(LOCAL_SCHEDULER_WARNING_MSG)
        cfg = dict(run_args.scheduler_cfg)
        _check_config_files(component)
        config.apply(scheduler=scheduler, cfg=cfg)
        component_args: list[str] | dict[str, Any] = (
            run_args.component_args_str or run_args.component_args
        )
        workspace = run_args.workspace or None
        if run_args.detach and (run_args.wait or run_args.log):
            raise CliError(
                "--detach returns at once; --wait and --log follow the app: give one or the other",
                exit_code=EXIT_USAGE,
            )
        if run_args.max_parallel is not None and not run_args.sweep:
            raise CliError(
                "max_parallel limits the elements of a sweep; give a sweep too",
                exit_code=EXIT_USAGE,
            )
        try:
            if run_args.sweep:
                app_handle = self._run_sweep(runner, run_args, component_args, cfg, workspace)
                if not app_handle:
                    return
            elif run_args.dryrun:
                info = runner.dryrun_component(
                    component,
                    component_args,
                    scheduler,
                    cfg=cfg,
                    workspace=workspace,
                    parent_run_id=run_args.parent_run_id,
                    idempotency_key=run_args.idempotency_key,
                )
                _print_dryrun(info)
                return
            else:
                app_handle = runner.run_component(
                    component,
                    component_args,
                    scheduler,
                    cfg=cfg,
                    workspace=workspace,
                    parent_run_id=run_args.parent_run_id,
                    idempotency_key=run_args.idempotency_key,
                )
        except InvalidRunConfigException as e:
            from torchx.cli.cfg import invalid_run_config_error

            raise invalid_run_config_error(e, scheduler) from e
        except ComponentArgumentError as e:
            raise CliError(
                f"{e} (see `torchx run {component} --help`)", exit_code=EXIT_USAGE
            ) from e
        except ValueError as e:
            where = _config_origin(str(e), scheduler, cfg)
            if where is None:
                raise
            raise CliError(f"{e} (set in {where})") from e

        # local_cwd runs in the foreground as upstream's does; every other scheduler (including
        # local_docker, whose containers outlive this command) returns once the app is started.
        is_local = scheduler in _FOREGROUND_SCHEDULERS and not run_args.detach
        notes = _PendingNotes(app_handle)
        following = run_args.wait or run_args.log
        # on a local scheduler the run waits: a found app's end is this run's exit status
        if run_args.idempotency_key is not None and not following and not is_local:
            found = runner.found_by_idempotency_key(app_handle)
            if found:  # the runner's warning said so; the app is not this command's to follow
                _print_handle(app_handle)
                _print_run_json(runner, app_handle)
                return
        try:
            if is_local or run_args.wait or run_args.log:
                try:
                    _wait_and_exit(runner, app_handle, tee=run_args.tee_logs, notes=notes)
                except CliError:
                    _print_run_json(runner, app_handle)  # the outcome, then the exit code
                    raise
            else:
                _print_next_steps(runner, app_handle)
            _print_run_json(runner, app_handle)
        except KeyboardInterrupt:
            if is_local:
                runner.cancel(app_handle)
                message = f"torchx: interrupted; cancelled {app_handle}"
            elif notes.last_state in ("PENDING", "SUBMITTED"):
                message = (
                    f"torchx: stopped waiting; {app_handle} is still queued"
                    f" (remove it with `torchx cancel {app_handle}`)"
                )
            else:
                message = (
                    f"torchx: stopped waiting; {app_handle} keeps running"
                    f" (stop it with `torchx cancel {app_handle}`)"
                )
            print(message, file=sys.stderr, flush=True)
            raise SystemExit(_EXIT_INTERRUPTED) from None
        except Terminated:  # SIGTERM: the command ends, the app does not
            print(
                f"torchx: terminated; {app_handle} keeps running (stop it with `torchx"
                f" cancel {app_handle}`, follow it with `torchx log -f {app_handle}`)",
                file=sys.stderr,
                flush=True,
            )
            raise SystemExit(_EXIT_TERMINATED) from None


_EXIT_TERMINATED = 143
"""What a command ended by SIGTERM exits with (128 + 15)."""

_FOREGROUND_SCHEDULERS = ("local_cwd", "local")

RUN_OPTIONS = [
    *scheduler_options("run", "run on", _default_scheduler),
    Option(
        ("--dryrun",),
        "dryrun",
        "print the app and the scheduler request without submitting",
        flag=True,
    ),
    Option(
        ("--detach",),
        "detach",
        "start the app and return at once, printing its handle, also on a local scheduler"
        " (where run otherwise waits for it); the app runs on",
        flag=True,
    ),
    Option(
        ("--wait",),
        "wait",
        "wait for the app to finish, streaming its logs; exit 1 unless it succeeds",
        flag=True,
    ),
    Option(
        ("--json",),
        "json",
        "print one JSON object on stdout instead of the handle (everything else goes to"
        " stderr): the app's handle, id, scheduler, state and ui_url; with --dryrun the"
        " scheduler, cfg, app and request",
        flag=True,
    ),
    Option(
        ("--log",),
        "log",
        "stream the app's logs until it finishes (implies --wait)",
        flag=True,
    ),
    Option(
        ("--workspace",),
        "workspace",
        "local workspace to build into the image ('' to disable; default: the"
        " current directory or [cli:run] workspace)",
        default=os.getcwd,
        configured=True,
    ),
    # upstream's alias, for Buck users: works, never shown
    Option(("--buck-target",), "workspace", configured=True, hidden=True),
    Option(
        ("--parent_run_id",),
        "parent_run_id",
        "tracker run id this run belongs to (groups runs for experiment tracking)",
    ),
    Option(
        ("--idempotency-key",),
        "idempotency_key",
        "submit at most once per KEY: when an app with this key exists already on the"
        " target (the scheduler and the run options that choose where), print its handle"
        " and submit nothing; the app's $TORCHX_RUN_ID is KEY",
        metavar="KEY",
    ),
    Option(
        ("--sweep",),
        "sweep",
        "run the component once per value of its argument ARG, as one array submission"
        " (a Slurm job array, a Kubernetes Indexed Job, an AWS Batch array job...);"
        " repeat it for the Cartesian product; each element sees $TORCHX_ARRAY_INDEX"
        " and $TORCHX_ARRAY_SIZE",
        metavar="ARG=V1,V2,...",
        repeat=True,
    ),
    Option(
        ("--max-parallel",),
        "max_parallel",
        "with --sweep: at most K elements run at once",
        metavar="K",
        plain=False,
    ),
    Option(
        ("--retry-failed",),
        "retry_failed",
        "submit the failed elements of sweep HANDLE again (their values and indices), as"
        " one new array; prints the new handle",
        metavar="HANDLE",
        plain=False,
    ),
    Option(
        ("--tee_logs",),
        "tee_logs",
        "when streaming logs, print them stripped as `role/replica line`",
        flag=True,
    ),
    Option(
        ("--stdin",),
        "stdin",
        "read the run arguments as a JSON object from stdin (TorchXRunArgs fields);"
        " only --dryrun may be combined with it (and other flags at their defaults)",
        flag=True,
        plain=False,
    ),
]
"""``torchx run``'s options, read by argparse and by :meth:`CmdRun.parse_plain`."""


def _config_origin(message: str, scheduler: str, cfg: "dict[str, CfgVal]") -> "str | None":
    """The config file, section and key behind the run option an error names, if a
    ``.torchxconfig`` set it (so the one line says which file to fix)."""

    for key in cfg:
        if f"option {key}=" in message or f"{key} {cfg[key]!r}" in message:
            where = config.origin(scheduler, key)
            if where is not None:
                return where
    return None


_JSON_OUTPUT: "ContextVar[bool]" = ContextVar("torchx_run_json", default=False)
"""``torchx run --json``: stdout carries one JSON object, nothing else."""


def _print_run_json(runner: "Runner", app_handle: str) -> None:
    """``--json``'s object for a submitted app: ``handle``, ``app_id``, ``scheduler``,
    ``state`` and ``ui_url`` (None when the scheduler gives no status), as upstream's
    ``torchx run --json`` (keys are only ever added)."""
    if not _JSON_OUTPUT.get():
        return

    status = runner.status(app_handle, progress=False)
    scheduler, _, app_id = parse_app_handle(app_handle)
    found = {
        "handle": app_handle,
        "app_id": app_id,
        "scheduler": scheduler,
        "state": str(status.state) if status is not None else None,
        "ui_url": status.ui_url if status is not None else None,
    }
    print(json.dumps(found), flush=True)


def _print_dryrun(info: "AppDryRunInfo[Any]") -> None:
    if _JSON_OUTPUT.get():  # one object: the scheduler, the cfg, the app and the request
        from dataclasses import is_dataclass

        request = info.request
        found = {
            "scheduler": info._scheduler,
            "cfg": dict(info.cfg),
            "app": asdict(info.app) if info.app is not None else None,
            "request": asdict(request)
            if is_dataclass(request) and not isinstance(request, type)
            else str(info),
        }
        print(json.dumps(found, default=str), flush=True)
        return
    app = info.app
    data = asdict(app) if app is not None else None
    elements = (data or {}).get("elements") or []
    more = ""
    if data is not None and len(elements) > 1:  # a sweep: one element, then the others' values
        data["elements"] = elements[:1]
        shown = [
            f"#   [{e['index']}] " + ", ".join(f"{k}={v}" for k, v in e["values"].items())
            for e in elements[1 : 1 + _DRYRUN_ELEMENTS]
        ]
        rest = len(elements) - 1 - len(shown)
        more = (
            f"# {len(elements) - 1} more element{'s' if len(elements) > 2 else ''}, as the"
            " first with these values:\n"
            + "\n".join(shown)
            + (f"\n#   ... and {rest} more" if rest > 0 else "")
            + "\n"
        )
    # JSON, not pprint: pprint imports dataclasses and inspect (see docs/design.md).
    application = json.dumps(data, indent=2, default=str) if data is not None else "<unknown>"
    print(f"\n=== APPLICATION ===\n{application}\n{more}", end="" if more else "\n")
    request = str(info)
    lines = request.splitlines()
    if len(elements) > 1 and len(lines) > _DRYRUN_REQUEST_LINES:
        cut = len(lines) - _DRYRUN_REQUEST_LINES
        request = "\n".join(lines[:_DRYRUN_REQUEST_LINES]) + (
            f"\n# ... {cut} more lines of the sweep's request"
            " (`torchx run --dryrun --json` prints it whole)"
        )
    print(f"\n=== SCHEDULER REQUEST ===\n{request}")


_DRYRUN_ELEMENTS = 20
"""A sweep's dry run lists the values of this many elements after the first."""
_DRYRUN_REQUEST_LINES = 120
"""A sweep's dry run shows at most this many lines of its request."""


def _print_handle(app_handle: str) -> None:
    """The handle, once the scheduler has been asked about the app (a local_cwd app is
    then running): scripts capture it from stdout, where it is the only line printed
    (with ``--json``, the JSON object is, instead)."""
    if not _JSON_OUTPUT.get():
        print(app_handle, flush=True)


def _print_next_steps(runner: "Runner", app_handle: str) -> None:
    status = runner.status(app_handle)
    _print_handle(app_handle)
    state = f" ({status.state})" if status is not None else ""
    print(
        f"torchx: launched {app_handle}{state}\n"
        f"  status:  torchx status {app_handle}\n"
        f"  logs:    torchx log {app_handle}\n"
        f"  cancel:  torchx cancel {app_handle}",
        file=sys.stderr,
        flush=True,
    )


class _PendingNotes:
    """Says why a waited-for app is not running yet, each time the reason changes."""

    def __init__(self, app_handle: str) -> None:
        self.app_handle = app_handle
        self.last_state: str | None = None
        self._said: str | None = None

    def __call__(self, status: "AppStatus") -> None:
        self.last_state = status.state.name
        if status.state not in (AppState.PENDING, AppState.SUBMITTED):
            self._said = None
            return
        reason = status.msg if status.msg and status.msg != NONE else "pending"
        if reason != self._said:
            self._said = reason

            shown = escape_unprintable(reason)
            print(f"torchx: {self.app_handle} is waiting: {shown}", file=sys.stderr, flush=True)


def _wait_and_exit(
    runner: "Runner", app_handle: str, tee: bool, notes: "_PendingNotes | None" = None
) -> None:
    """Streams every replica's log to stderr until the app ends; fails unless it succeeded."""

    from torchx.cli._logstream import (
        LogPrinter,
        find_role_replicas,
        join_streamers,
        stream_replicas,
    )

    app_done = threading.Event()
    app = runner.describe(app_handle)
    runner.status(app_handle)  # the scheduler's first look (a local_cwd app runs from here)
    _print_handle(app_handle)
    replicas = find_role_replicas(app, None) if app is not None else []
    printer = LogPrinter(sys.stderr, strip=tee)
    streamers, threads = stream_replicas(
        runner,
        app_handle,
        replicas,
        printer,
        should_tail=True,
        app_done=app_done,
    )
    try:
        notes = notes or _PendingNotes(app_handle)
        status = runner.wait(app_handle, wait_interval=1, on_status=notes)
    finally:
        app_done.set()

    problems: list[str] = []
    try:
        join_streamers(streamers, threads, timeout=_LOG_JOIN_TIMEOUT_S, on_error=problems.append)
    except Exception as e:
        problems.insert(0, f"{type(e).__name__}: {e}")
    # `torchx delete` of the app (it cancels, then removes the app and its logs): the
    # logs could not be read to the end, which is no news to whoever deleted it
    if status is None or (problems and runner.status(app_handle) is None):
        raise CliError(f"app {app_handle} was cancelled and deleted while torchx waited for it")
    for problem in problems:
        logger.warning("could not stream the logs of %s: %s", app_handle, problem)
    if status.state != AppState.SUCCEEDED:
        print(status.format(), file=sys.stderr, flush=True)
        raise CliError(f"app {app_handle} finished {status.state}")
    # The outcome is the CLI's own summary line, not a log record: printing it directly
    # keeps `logging` (~6 ms) off the path of every successful `torchx run --wait`.
    print(f"torchx: app {app_handle} finished {status.state}", file=sys.stderr, flush=True)
