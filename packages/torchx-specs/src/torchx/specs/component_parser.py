"""The argparse parser of a component: ``torchx run COMPONENT --help``, and every command
line of a component that is not in the plain form :mod:`torchx.specs.builders` reads itself
(its errors included).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from torchx.specs.component_params import (
    ComponentArgumentError,
    option_strings,
    resolved_annotations,
)
from torchx.specs.file_linter import get_fn_docstring
from torchx.specs.help_format import TorchXArgumentHelpFormatter, plain_text
from torchx.util.startup import fn_params
from torchx.util.startup.fn_params import EMPTY
from torchx.util.types import get_argparse_param_type

__all__ = ["ComponentArgumentParser", "create_args_parser"]


class ComponentArgumentParser(argparse.ArgumentParser):
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
            description, param_help = get_fn_docstring(fn)
            self.description = plain_text(description)
            for action in self._actions:
                # argparse hides blank help (and with it the default): keep the name then.
                text = plain_text(param_help.get(action.dest, "").strip())
                if text:
                    action.help = text
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        if self.raise_errors:
            name = self.prog.split()[-1] if self.prog.split() else "component"
            raise ComponentArgumentError(f"component `{name}`: {message}", self.format_usage())
        super().error(message)


def _display_default(value: Any) -> Any:
    return str(value) if isinstance(value, bool) else value


def create_args_parser(
    cmpnt_fn: Callable[..., Any],
    cmpnt_defaults: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    exit_on_error: bool = False,
) -> argparse.ArgumentParser:
    """The argparse parser for ``cmpnt_fn`` (what ``torchx run COMPONENT --help`` shows)."""
    parser = ComponentArgumentParser(
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
    annotated = resolved_annotations(cmpnt_fn)
    for param in fn_params.parameters(cmpnt_fn):
        name = param.name
        annotation = annotated.get(name, param.annotation)
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
                metavar=name,  # not its type (`str`): the name says what goes there
                help=help_text,
                default=default if default is not EMPTY else [],
            )
            continue
        flags = option_strings(name, annotation)
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
