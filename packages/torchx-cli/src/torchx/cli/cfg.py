"""Turns ``-cfg k=v,...`` (or ``--stdin``'s ``scheduler_args``) into a checked run config.

Upstream dropped an unknown key with a warning and let a bad value raise from deep inside
a cast; a typo in ``-cfg`` then silently ran the job with a default. Here both are errors
naming the key, the accepted options and ``torchx runopts <scheduler>``.
"""

import json

from torchx.cli.errors import EXIT_USAGE, CliError, one_line
from torchx.specs import get_type_name
from torchx.util.log import get_logger
from torchx.util.types import to_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from torchx.runner import Runner
    from torchx.specs import CfgVal, runopts

__all__ = [
    "invalid_run_config_error",
    "parse_cfg_json",
    "parse_cfg_str",
    "parse_cfg_str_for",
    "scheduler_runopts",
]


def scheduler_runopts(runner: "Runner", scheduler: str) -> "runopts":
    """The run options of ``scheduler``; a scheduler that cannot load is a one-line error."""
    try:
        return runner.scheduler_run_opts(scheduler)
    except Exception as e:
        raise CliError(
            f"scheduler '{scheduler}' could not be loaded: {type(e).__name__}: {e}"
            " (see `torchx plugins`)"
        ) from e


def _check_key(opts: "runopts", scheduler: str, key: str) -> bool:
    """Whether ``key`` is a run option to keep: an option of an upstream release that has
    no successor is dropped with one warning; an unknown key is an error."""
    if opts.get(key) is not None:
        return True
    from torchx.schedulers.retired_options import retired_option

    why = retired_option(scheduler, key)
    if why is not None:
        get_logger("torchx").warning(
            "run option '%s' of scheduler '%s' is from an older TorchX and is ignored: %s",
            key,
            scheduler,
            why,
        )
        return False
    import difflib

    names = [name for name, _ in opts]
    close = difflib.get_close_matches(key, names, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    accepted = ", ".join(names) if names else "<none>"
    raise CliError(
        f"unknown run option '{key}' for scheduler '{scheduler}'{hint}; accepted: {accepted}"
        f" (see `torchx runopts {scheduler}`)"
    )


def parse_cfg_str(opts: "runopts", scheduler: str, cfg_str: "str | None") -> "dict[str, CfgVal]":
    """Parses ``k1=v1,k2=v2`` into typed values; unknown keys and bad values are errors."""
    if not cfg_str or not cfg_str.strip():
        return {}
    raw = _pairs(cfg_str, f" (see `torchx runopts {scheduler}`)")
    return _typed(opts, scheduler, {k: v for k, v in raw.items() if _check_key(opts, scheduler, k)})


def _pairs(cfg_str: str, see: str) -> "dict[str, str]":
    """``k1=v1,k2=v2`` as strings; a malformed one is a usage error (``see``: its hint)."""

    try:
        return to_dict(cfg_str)
    except ValueError as e:
        raise CliError(
            f"malformed -cfg '{cfg_str}': {e}; expected KEY=VALUE pairs separated by ','{see}",
            exit_code=EXIT_USAGE,
        ) from None


def _typed(opts: "runopts", scheduler: str, raw: "Mapping[str, str]") -> "dict[str, CfgVal]":
    """``raw``'s values cast to the types of ``opts`` (whose keys they are)."""

    cfg: dict[str, CfgVal] = {}
    for key, value in raw.items():
        opt = opts.get(key)
        assert opt is not None
        try:
            cfg[key] = opt.cast_to_type(value)
        except (ValueError, TypeError) as e:
            raise CliError(
                f"invalid value '{value}' for run option '{key}' of scheduler '{scheduler}'"
                f" (type {get_type_name(opt.opt_type)}): {e} (see `torchx runopts {scheduler}`)"
            ) from None
    return cfg


def parse_cfg_str_for(
    opts_of: "Mapping[str, runopts]", cfg_str: "str | None"
) -> "dict[str, dict[str, CfgVal]]":
    """``-cfg k1=v1,...`` for several schedulers at once (``torchx ui``): each key goes to
    every scheduler that has that run option; a key none of them has is an error."""
    if len(opts_of) == 1:
        ((scheduler, opts),) = opts_of.items()
        return {scheduler: parse_cfg_str(opts, scheduler, cfg_str)}
    found: dict[str, dict[str, CfgVal]] = {scheduler: {} for scheduler in opts_of}
    if not cfg_str or not cfg_str.strip():
        return found
    raw = _pairs(cfg_str, "")
    names = ", ".join(opts_of)
    for key in raw:
        if not any(opts.get(key) is not None for opts in opts_of.values()):
            raise CliError(
                f"-cfg {key}: none of {names} has a run option '{key}'"
                " (see `torchx runopts SCHEDULER`)",
                exit_code=EXIT_USAGE,
            )
    for scheduler, opts in opts_of.items():
        mine = {key: value for key, value in raw.items() if opts.get(key) is not None}
        found[scheduler] = _typed(opts, scheduler, mine)
    return found


def parse_cfg_json(
    opts: "runopts", scheduler: str, scheduler_args: "Mapping[str, Any]"
) -> "dict[str, CfgVal]":
    """Converts the JSON ``scheduler_args`` of ``--stdin``; unknown keys are errors."""

    kept = {key: value for key, value in scheduler_args.items() if _check_key(opts, scheduler, key)}
    try:
        return opts.cfg_from_json_repr(json.dumps(kept))
    except (ValueError, TypeError, AttributeError) as e:
        raise CliError(f"invalid scheduler_args for scheduler '{scheduler}': {e}") from None


def invalid_run_config_error(exc: Exception, scheduler: str) -> CliError:
    """One line for an ``InvalidRunConfigException`` saying how to provide the option."""

    key = getattr(exc, "cfg_key", None) or "KEY"
    # Drop the "Given: {cfg}" tail: the whole config may hold values not meant for a log.
    reason = one_line(str(exc)).split(". Given: ", 1)[0]
    return CliError(
        f"{reason}; pass it as `-cfg {key}=VALUE` or set it in the [{scheduler}]"
        f" section of .torchxconfig (see `torchx runopts {scheduler}`)"
    )
