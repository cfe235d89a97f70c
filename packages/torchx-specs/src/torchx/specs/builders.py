"""Turns a component function plus CLI-style arguments into an ``AppDef``.

Each parameter of the component becomes an option (``--name``; single-letter names also
get ``-n``; ``Annotated[T, "-x"]`` adds ``-x``); ``*args`` collects the trailing program
arguments (after ``--``). Values come from, in order of precedence: the explicit
arguments, the ``config`` dict (JSON ``component_args``), ``.torchxconfig`` defaults
(``cmpnt_defaults``, strings) and finally the function's own defaults.

Bad arguments raise :class:`ComponentArgumentError` naming the parameter; pass
``exit_on_error=True`` to get argparse's print-usage-and-exit behaviour instead. A plain
command line (see :mod:`torchx.util.startup.plain_args`) is read without argparse; argparse reads
every other one and makes every error message.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping

from torchx.specs.api import AppDef, make_app_handle, parse_mounts
from torchx.specs.component_params import (
    ComponentArgumentError,
    option_strings,
    resolved_annotations,
)
from torchx.util.startup import fn_params
from torchx.util.startup.fn_params import EMPTY
from torchx.util.startup.lazy_dataclass import dataclass
from torchx.util.startup.plain_args import split_options
from torchx.util.types import decode, get_argparse_param_type

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any, NoReturn

__all__ = [
    "ComponentArgs",
    "ComponentArgumentError",
    "component_args_from_str",
    "make_app_handle",
    "materialize_appdef",
    "parse_args",
    "parse_mounts",
]


@dataclass
class ComponentArgs:
    """Arguments ready to call a component: ``fn(*positional_args.values(), *var_args,
    **kwargs)``."""

    positional_args: dict[str, Any]
    var_args: list[str]
    kwargs: dict[str, Any]


class _Unset:
    """Marks an option the command line did not set."""

    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


def _parse_plain(
    annotated: Mapping[str, Any],
    params: list[fn_params.Param],
    cmpnt_args: list[str],
    cmpnt_defaults: Mapping[str, str],
    config: Mapping[str, Any],
) -> dict[str, Any] | None:
    """``{param: value}`` of the explicit arguments, as argparse would parse them, when
    they are plain (:func:`~torchx.util.startup.plain_args.split_options`) and complete; ``None``
    lets argparse parse them (and report what is wrong)."""

    spellings: dict[str, str] = {}
    typed: dict[str, fn_params.Param] = {}
    var_positional = None
    for param in params:
        if param.kind == fn_params.VAR_KEYWORD:
            continue
        annotation = annotated.get(param.name, param.annotation)
        typed[param.name] = fn_params.Param(param.name, param.kind, param.default, annotation)
        if param.kind == fn_params.VAR_POSITIONAL:
            var_positional = param.name
            continue
        for flag in option_strings(param.name, annotation):
            if flag in spellings:
                return None  # argparse reports the clash
            spellings[flag] = param.name
    split = split_options(cmpnt_args, {}, spellings)
    if split is None:
        return None
    given, rest = split
    if rest and var_positional is None:
        return None  # unrecognized arguments
    if rest and var_positional is not None:
        given[var_positional] = rest
    parsed: dict[str, Any] = {}
    for name, param in typed.items():
        if name not in given:
            required = param.default is EMPTY and name not in cmpnt_defaults
            if required and name not in config and param.kind != fn_params.VAR_POSITIONAL:
                return None
            continue
        convert = get_argparse_param_type(param)
        value = given[name]
        try:
            if isinstance(value, list):  # the words of *args
                parsed[name] = [convert(word) for word in value]
            else:
                parsed[name] = convert(str(value))
        except (TypeError, ValueError):
            return None
    return parsed


def _parse(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: list[str],
    cmpnt_defaults: Mapping[str, str] | None,
    config: Mapping[str, Any] | None,
    exit_on_error: bool,
) -> tuple[Callable[[str], NoReturn], dict[str, Any], dict[str, Any]]:
    """Parses and merges every source; returns how to fail (argparse's one-line usage
    error), ``{param: raw value}`` and the parameters' resolved annotations."""
    params = fn_params.parameters(cmpnt_fn)
    annotated = resolved_annotations(cmpnt_fn)
    if cmpnt_args[:1] == ["--"] and all(p.kind != fn_params.VAR_POSITIONAL for p in params):
        # `torchx run comp -- --name x`: the `--` only ends torchx's own options
        cmpnt_args = cmpnt_args[1:]
    defaults = cmpnt_defaults or {}
    config = config or {}
    made: list[argparse.ArgumentParser] = []

    def parser() -> argparse.ArgumentParser:
        if not made:
            from torchx.specs.component_parser import create_args_parser

            made.append(
                create_args_parser(cmpnt_fn, cmpnt_defaults, config, exit_on_error=exit_on_error)
            )
        return made[0]

    def fail(message: str) -> NoReturn:
        parser().error(message)

    unknown = sorted(set(config) - {p.name for p in params})
    if unknown:  # a typo in a dict of arguments must not run the component's defaults
        import difflib

        names = [p.name for p in params if p.kind != fn_params.VAR_KEYWORD]
        close = [difflib.get_close_matches(key, names, n=1) for key in unknown]
        hints = [
            f"{key!r} (did you mean {c[0]!r}?)" if c else repr(key)
            for key, c in zip(unknown, close, strict=True)
        ]
        fail(f"unknown argument(s) {', '.join(hints)}; its arguments: {', '.join(names)}")
    parsed = _parse_plain(annotated, params, cmpnt_args, defaults, config)
    if parsed is None:
        import argparse

        namespace = argparse.Namespace(**{p.name: _UNSET for p in params})
        parsed = vars(parser().parse_args(cmpnt_args, namespace=namespace))
    values: dict[str, Any] = {}
    for param in params:
        name = param.name
        value = parsed.get(name, _UNSET)
        if param.kind == fn_params.VAR_POSITIONAL and value == []:
            value = _UNSET  # an empty remainder must not clobber configured values
        if value is not _UNSET:
            values[name] = value
        elif name in config:
            values[name] = config[name]
        elif name in defaults:
            default = defaults[name]
            if param.kind == fn_params.VAR_POSITIONAL and isinstance(default, str):
                values[name] = shlex.split(default)
            else:
                values[name] = default
        elif param.default is not EMPTY:
            values[name] = param.default
        elif param.kind == fn_params.VAR_POSITIONAL:
            values[name] = []
    return fail, values, annotated


def parse_args(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: list[str],
    cmpnt_defaults: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    exit_on_error: bool = False,
) -> argparse.Namespace:
    """The component's arguments as a namespace of raw (not yet decoded) values.

    Precedence: explicit ``cmpnt_args`` > ``config`` > ``cmpnt_defaults`` > the
    function's defaults.

    Args:
        cmpnt_fn: the component function.
        cmpnt_args: its arguments as on the command line (``["--script", "t.py"]``).
        cmpnt_defaults: defaults by argument name, as strings (``[component:NAME]``
            sections of ``.torchxconfig``).
        config: values by argument name (``--stdin``'s ``component_args``, a dict given
            to ``Runner.run_component``); a name the component does not take is refused.
        exit_on_error: print argparse's usage error and exit 2 instead of raising.

    Returns:
        ``argparse.Namespace`` of the raw values, by argument name.

    Raises:
        ComponentArgumentError: an argument is unknown, missing, repeated or does not
            parse (a ``ValueError``; with ``exit_on_error`` the process exits instead).
    """
    import argparse

    _, values, _ = _parse(cmpnt_fn, cmpnt_args, cmpnt_defaults, config, exit_on_error)
    return argparse.Namespace(**values)


def component_args_from_str(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: list[str],
    cmpnt_args_defaults: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    exit_on_error: bool = False,
) -> ComponentArgs:
    """Parses ``cmpnt_args`` and decodes each value into its annotated type.

    ``bool`` takes ``true/false/1/0/yes/no/on/off``; ``list[T]`` takes ``a,b``;
    ``dict[K, V]`` takes ``k=v,k2=v2``; an empty string for a list or dict is ``None``.

    Args:
        cmpnt_fn: the component function.
        cmpnt_args: its arguments as on the command line (``["--script", "t.py"]``).
        cmpnt_defaults: defaults by argument name, as strings (``[component:NAME]``
            sections of ``.torchxconfig``).
        config: values by argument name (``--stdin``'s ``component_args``, a dict given
            to ``Runner.run_component``); a name the component does not take is refused.
        exit_on_error: print argparse's usage error and exit 2 instead of raising.

    Returns:
        The positional, ``*args`` and keyword-only values to call the function with.

    Raises:
        ComponentArgumentError: an argument is unknown, missing, repeated or does not
            parse (a ``ValueError``; with ``exit_on_error`` the process exits instead).
    """
    fail, values, annotated = _parse(
        cmpnt_fn, cmpnt_args, cmpnt_args_defaults, config, exit_on_error
    )
    positional_args: dict[str, Any] = {}
    var_args: list[str] = []
    kwargs: dict[str, Any] = {}
    for param in fn_params.parameters(cmpnt_fn):
        name = param.name
        if param.kind == fn_params.VAR_KEYWORD:
            raise TypeError(
                f"component `{cmpnt_fn.__name__}` has `**{name}`; components cannot take"
                " **kwargs because each parameter must be a named CLI option"
            )
        annotation = annotated.get(name, param.annotation)
        if name not in values:
            fail(f"the following arguments are required: --{name}")
        value = values[name]
        if param.kind == fn_params.VAR_POSITIONAL:
            items = list(value)
            if items and items[0] == "--":
                items = items[1:]
            var_args = [str(v) for v in items]
            continue
        try:
            decoded = decode(value, annotation)
        except ValueError as e:
            flag = f"-{name}/--{name}" if len(name) == 1 else f"--{name}"
            fail(f"argument {flag}: {e}")
        if param.kind == fn_params.KEYWORD_ONLY:
            kwargs[name] = decoded
        else:
            positional_args[name] = decoded
    return ComponentArgs(positional_args, var_args, kwargs)


def materialize_appdef(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: list[str],
    cmpnt_defaults: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    exit_on_error: bool = False,
) -> AppDef:
    """Calls the component with the parsed arguments and returns its ``AppDef``.

    Args:
        cmpnt_fn: the component function.
        cmpnt_args: its arguments as on the command line (``["--script", "t.py"]``).
        cmpnt_defaults: defaults by argument name, as strings (``[component:NAME]``
            sections of ``.torchxconfig``).
        config: values by argument name (``--stdin``'s ``component_args``, a dict given
            to ``Runner.run_component``); a name the component does not take is refused.
        exit_on_error: print argparse's usage error and exit 2 instead of raising.

    Returns:
        The app the component built.

    Raises:
        ComponentArgumentError: an argument is unknown, missing, repeated or does not
            parse (a ``ValueError``; with ``exit_on_error`` the process exits instead).
        TypeError: the component returned something other than an ``AppDef``.
    """
    args = component_args_from_str(
        cmpnt_fn, cmpnt_args, cmpnt_defaults, config, exit_on_error=exit_on_error
    )
    appdef = cmpnt_fn(*args.positional_args.values(), *args.var_args, **args.kwargs)
    if not isinstance(appdef, AppDef):
        raise TypeError(
            f"component `{cmpnt_fn.__name__}` returned {type(appdef).__name__}, expected"
            " AppDef; a component must return torchx.specs.AppDef"
        )
    return appdef
