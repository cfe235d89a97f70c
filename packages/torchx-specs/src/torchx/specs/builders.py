"""Turns a component function plus CLI-style arguments into an ``AppDef``.

Each parameter of the component becomes an option (``--name``; single-letter names also
get ``-n``; ``Annotated[T, "-x"]`` adds ``-x``); ``*args`` collects the trailing program
arguments (after ``--``). Values come from, in order of precedence: the explicit
arguments, the ``config`` dict (JSON ``component_args``), ``.torchxconfig`` defaults
(``cmpnt_defaults``, strings) and finally the function's own defaults.

Bad arguments raise :class:`ComponentArgumentError` naming the parameter; pass
``exit_on_error=True`` to get argparse's print-usage-and-exit behaviour instead.

Imports inside functions are deliberate: ``import torchx.specs`` stays close to bare Python
(packages/torchx-specs/tests/test_specs_import_cost.py).
"""

from __future__ import annotations

import argparse
import typing
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from torchx.specs._help_format import TorchXArgumentHelpFormatter
from torchx.specs.api import AppDef, make_app_handle, parse_mounts
from torchx.util import fn_params
from torchx.util.fn_params import EMPTY
from torchx.util.lazy_dataclass import dataclass
from torchx.util.types import decode, get_argparse_param_type

__all__ = [
    "ComponentArgs",
    "ComponentArgumentError",
    "component_args_from_str",
    "make_app_handle",
    "materialize_appdef",
    "parse_args",
    "parse_mounts",
]


class ComponentArgumentError(ValueError):
    """An argument of a component is missing or cannot be converted to its type.

    ``usage`` holds the component's usage line so a CLI can print it.
    """

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.usage = usage


class _ComponentArgumentParser(argparse.ArgumentParser):
    """argparse that raises :class:`ComponentArgumentError` instead of exiting.

    The help texts come from the component's docstring, parsed only when help is
    formatted: parsing docstrings costs more than building the whole parser.
    """

    def __init__(
        self,
        *args: Any,
        raise_errors: bool = True,
        docstring_of: Callable[..., Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.raise_errors = raise_errors
        self._docstring_of = docstring_of

    def format_help(self) -> str:
        fn, self._docstring_of = self._docstring_of, None
        if fn is not None:
            from torchx.specs.file_linter import get_fn_docstring

            description, param_help = get_fn_docstring(fn)
            self.description = description
            for action in self._actions:
                # argparse hides blank help (and with it the default): keep the name then.
                text = param_help.get(action.dest, "").strip()
                if text:
                    action.help = text
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        if self.raise_errors:
            name = self.prog.split()[-1] if self.prog.split() else "component"
            raise ComponentArgumentError(f"component `{name}`: {message}", self.format_usage())
        super().error(message)


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


def _annotations(fn: Callable[..., Any]) -> dict[str, Any]:
    """Parameter annotations with string annotations resolved when possible."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolvable forward references: use what the signature has
        return {
            param.name: param.annotation
            for param in fn_params.parameters(fn)
            if param.annotation is not EMPTY
        }


def _aliases(annotation: Any) -> list[str]:
    """Extra option spellings from ``Annotated[T, "-x"]`` metadata."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return []
    return [m for m in typing.get_args(annotation)[1:] if isinstance(m, str) and m.startswith("-")]


def _display_default(value: Any) -> Any:
    return str(value) if isinstance(value, bool) else value


def _create_args_parser(
    cmpnt_fn: Callable[..., Any],
    cmpnt_defaults: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    exit_on_error: bool = False,
) -> argparse.ArgumentParser:
    """The argparse parser for ``cmpnt_fn`` (what ``torchx run COMPONENT --help`` shows)."""
    parser = _ComponentArgumentParser(
        prog=f"torchx run <run args...> {cmpnt_fn.__name__} ",
        formatter_class=TorchXArgumentHelpFormatter,
        add_help=False,
        raise_errors=not exit_on_error,
        docstring_of=cmpnt_fn,
    )
    parser.add_argument(
        "--help", action="help", default=argparse.SUPPRESS, help="show this help message and exit"
    )
    defaults = cmpnt_defaults or {}
    config = config or {}
    annotations = _annotations(cmpnt_fn)
    for param in fn_params.parameters(cmpnt_fn):
        name = param.name
        annotation = annotations.get(name, param.annotation)
        typed_param = fn_params.Param(name, param.kind, param.default, annotation)
        help_text = name.replace("_", " ")  # the docstring's text replaces it in format_help
        default: Any = param.default
        if name in defaults:
            default = defaults[name]
        if param.kind == fn_params.VAR_KEYWORD:
            continue  # rejected when the arguments are built
        if param.kind == fn_params.VAR_POSITIONAL:
            parser.add_argument(
                name,
                nargs=argparse.REMAINDER,
                type=get_argparse_param_type(typed_param),
                help=help_text,
                default=default if default is not EMPTY else [],
            )
            continue
        flags = _aliases(annotation)
        if len(name) == 1:
            flags.append(f"-{name}")
        flags.append(f"--{name}")
        has_value = default is not EMPTY or name in config
        parser.add_argument(
            *flags,
            dest=name,
            type=get_argparse_param_type(typed_param),
            help=help_text,
            default=_display_default(default) if default is not EMPTY else None,
            required=not has_value,
        )
    return parser


def _parse(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: list[str],
    cmpnt_defaults: Mapping[str, str] | None,
    config: Mapping[str, Any] | None,
    exit_on_error: bool,
) -> tuple[argparse.ArgumentParser, dict[str, Any]]:
    """Parses and merges every source; returns the parser and ``{param: raw value}``."""
    parser = _create_args_parser(cmpnt_fn, cmpnt_defaults, config, exit_on_error=exit_on_error)
    params = fn_params.parameters(cmpnt_fn)
    if cmpnt_args[:1] == ["--"] and all(p.kind != fn_params.VAR_POSITIONAL for p in params):
        # `torchx run comp -- --name x`: the `--` only ends torchx's own options
        cmpnt_args = cmpnt_args[1:]
    namespace = argparse.Namespace(**{p.name: _UNSET for p in params})
    parsed = vars(parser.parse_args(cmpnt_args, namespace=namespace))
    defaults = cmpnt_defaults or {}
    config = config or {}
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
                import shlex

                values[name] = shlex.split(default)
            else:
                values[name] = default
        elif param.default is not EMPTY:
            values[name] = param.default
        elif param.kind == fn_params.VAR_POSITIONAL:
            values[name] = []
    return parser, values


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
    """
    _, values = _parse(cmpnt_fn, cmpnt_args, cmpnt_defaults, config, exit_on_error)
    return argparse.Namespace(**values)


def _fail(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    parser.error(message)


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
    """
    parser, values = _parse(cmpnt_fn, cmpnt_args, cmpnt_args_defaults, config, exit_on_error)
    annotations = _annotations(cmpnt_fn)
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
        annotation = annotations.get(name, param.annotation)
        if name not in values:
            _fail(parser, f"the following arguments are required: --{name}")
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
            _fail(parser, f"argument {flag}: {e}")
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
    """Calls the component with the parsed arguments and returns its ``AppDef``."""
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
