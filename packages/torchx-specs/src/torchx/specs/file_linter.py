"""Static checks that a function can serve as a component (``torchx run`` target).

A component takes arguments the CLI can express (``int``, ``str``, ``float``, ``bool``,
``list``/``dict``/``tuple`` of those, optionally ``T | None`` or ``Annotated[T, ...]``) and
returns an ``AppDef``. The checks read the source with ``ast`` so that a component file is
never imported just to be linted.
"""

from __future__ import annotations

import abc
import ast
import inspect
from collections.abc import Callable, Sequence

from torchx.specs.help_format import TorchXArgumentHelpFormatter
from torchx.util.io import read_conf_file
from torchx.util.startup.lazy_dataclass import dataclass

__all__ = [
    "ArgTypeValidator",
    "ComponentFunctionValidator",
    "LinterMessage",
    "ReturnTypeValidator",
    "TorchXArgumentHelpFormatter",
    "get_fn_docstring",
    "validate",
]

COMPONENT_BEST_PRACTICES_URL = (
    "https://meta-pytorch.org/torchx/latest/component_best_practices.html"
)


def get_fn_docstring(fn: Callable[..., object]) -> tuple[str, dict[str, str]]:
    """``(description, {param: help})`` from a google-style docstring.

    Parameters missing from the docstring get ``" "`` (argparse hides empty help); a
    function without a docstring gets a description telling the author to add one.
    """
    name = getattr(fn, "__name__", "component")
    default_description = (
        f"{name} TIP: improve this help string by adding a docstring\n"
        f"to your component (see: {COMPONENT_BEST_PRACTICES_URL})"
    )

    params = {p: " " for p in inspect.signature(fn).parameters}
    doc = inspect.getdoc(fn)
    if not doc:
        return default_description, params

    import docstring_parser

    parsed = docstring_parser.parse(doc)
    for param in parsed.params:
        if param.description is not None:
            params[param.arg_name] = param.description
    description = parsed.short_description or default_description
    if parsed.long_description:
        description += "\n" + parsed.long_description
    return description, params


@dataclass
class LinterMessage:
    """One problem found in a component function."""

    name: str
    description: str
    line: int
    char: int
    severity: str = "error"


class ComponentFunctionValidator(abc.ABC):
    """A check run on the ``ast.FunctionDef`` of a component."""

    @abc.abstractmethod
    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        """The problems found in ``app_specs_func_def`` (empty when it passes)."""

    def _gen_linter_message(self, description: str, lineno: int) -> LinterMessage:
        return LinterMessage(
            name="TorchxFunctionValidator",
            description=description,
            line=lineno,
            char=0,
            severity="error",
        )


def _dotted_name(node: ast.expr) -> str | None:
    """``Optional`` for ``Optional`` / ``typing.Optional``; None for other expressions."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _parse_string_annotation(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return node
    return node


def _subscript_args(node: ast.Subscript) -> list[ast.expr]:
    slice_ = node.slice
    return list(slice_.elts) if isinstance(slice_, ast.Tuple) else [slice_]


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _unwrap(node: ast.expr) -> ast.expr:
    """Removes ``Annotated[T, ...]`` and ``Optional[T]`` / ``T | None`` / ``None | T``."""
    node = _parse_string_annotation(node)
    while True:
        if isinstance(node, ast.Subscript):
            wrapper = _dotted_name(node.value)
            args = _subscript_args(node)
            if wrapper in ("Annotated", "Optional") and args:
                node = _parse_string_annotation(args[0])
                continue
            if wrapper == "Union":
                members = [a for a in args if not _is_none(a)]
                if len(members) == 1 and len(args) == 2:
                    node = _parse_string_annotation(members[0])
                    continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            if _is_none(node.right):
                node = node.left
                continue
            if _is_none(node.left):
                node = node.right
                continue
        return node


def _is_simple(node: ast.expr) -> bool:
    """A plain type name (``int``, ``str``, ``MyEnum``), possibly module-qualified."""
    return isinstance(node, (ast.Name, ast.Attribute))


class ArgTypeValidator(ComponentFunctionValidator):
    """Every parameter is annotated with a type the CLI can decode."""

    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        args = app_specs_func_def.args
        params = list(args.posonlyargs) + list(args.args)
        if args.vararg:
            params.append(args.vararg)
        params += list(args.kwonlyargs)
        messages: list[LinterMessage] = []
        for param in params:
            reason = self._check(param.annotation)
            if reason:
                messages.append(
                    self._gen_linter_message(
                        f"{reason} for argument {ast.unparse(param)!r} in function"
                        f" {app_specs_func_def.name!r}",
                        param.lineno,
                    )
                )
        return messages

    def _check(self, annotation: ast.expr | None) -> str | None:
        if annotation is None:
            return "Missing type annotation"
        node = _unwrap(annotation)
        if _is_simple(node):
            return None
        if not isinstance(node, ast.Subscript):
            return f"Unsupported argument type {ast.unparse(node)!r}"
        container = _dotted_name(node.value) or ast.unparse(node.value)
        args = [_unwrap(a) for a in _subscript_args(node)]
        if container in ("Dict", "dict"):
            if len(args) != 2:
                return f"Dict type {ast.unparse(node)!r} must have exactly a key and a value type"
            key, value = args
            if not _is_simple(key):
                return f"Non-primitive key type {ast.unparse(key)!r}"
            if not _is_simple(value):
                return f"Non-primitive value type {ast.unparse(value)!r}"
            return None
        if container in ("List", "list"):
            if len(args) != 1 or not _is_simple(args[0]):
                return f"Non-primitive element type {ast.unparse(node.slice)!r}"
            return None
        if container in ("Tuple", "tuple"):
            for i, element in enumerate(args):
                is_ellipsis = isinstance(element, ast.Constant) and element.value is Ellipsis
                if is_ellipsis and i == len(args) - 1 and i > 0:
                    continue
                if not _is_simple(element):
                    return f"Non-primitive element type {ast.unparse(element)!r}"
            return None
        return f"Unsupported container type {container!r}"


class ReturnTypeValidator(ComponentFunctionValidator):
    """The function is annotated to return ``supported_return_type`` (``AppDef``)."""

    def __init__(self, supported_return_type: str) -> None:
        self._supported_return_type = supported_return_type

    @staticmethod
    def _return_annotation(fn: ast.FunctionDef) -> str | None:
        node = fn.returns
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value.rsplit(".", 1)[-1].strip()
        return _dotted_name(node)

    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        expected = self._supported_return_type
        actual = self._return_annotation(app_specs_func_def)
        name = app_specs_func_def.name
        if not actual:
            description = (
                f"Function: {name} missing return annotation or has unknown annotations."
                f" Supported return annotation: {expected}"
            )
        elif actual != expected:
            description = (
                f"Function: {name} has incorrect return annotation `{actual}`,"
                f" supported annotation: {expected}"
            )
        else:
            return []
        return [self._gen_linter_message(description, app_specs_func_def.lineno)]


def default_validators() -> list[ComponentFunctionValidator]:
    """The checks ``validate`` runs when none are given."""
    return [ArgTypeValidator(), ReturnTypeValidator("AppDef")]


def _find_function(tree: ast.AST, name: str) -> ast.FunctionDef | None:
    """The first function definition called ``name`` (top level preferred)."""
    if isinstance(tree, ast.Module):
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return node
    for candidate in ast.walk(tree):
        if isinstance(candidate, ast.FunctionDef) and candidate.name == name:
            return candidate
    return None


def _find_class(tree: ast.AST, name: str) -> ast.ClassDef | None:
    """The top-level class definition called ``name``."""
    for node in tree.body if isinstance(tree, ast.Module) else []:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def validate_tree(
    tree: ast.AST,
    component_function: str,
    validators: Sequence[ComponentFunctionValidator] | None = None,
) -> list[LinterMessage]:
    """``validate`` on an already parsed module (lets the finder parse each file once)."""
    fn_def = _find_function(tree, component_function)
    if fn_def is None and (cls := _find_class(tree, component_function)) is not None:
        # a class component (``Cls(...).build()``): statically, only a ``build`` written in
        # the class is checked (an inherited one is checked when the class is loaded)
        builds = [s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "build"]
        return [m for b in builds for m in ReturnTypeValidator("AppDef").validate(b)]
    if fn_def is None:
        return [
            LinterMessage(
                name="TorchXValidator",
                description=f"Function {component_function} not found",
                line=0,
                char=0,
            )
        ]
    messages: list[LinterMessage] = []
    for validator in default_validators() if validators is None else validators:
        messages += validator.validate(fn_def)
    return messages


def parse_source(source: str, filename: str = "<component>") -> ast.Module | LinterMessage:
    """The parsed module, or the syntax error as a ``LinterMessage``."""
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as e:
        return LinterMessage(
            name="TorchXValidator",
            description=e.msg,
            line=e.lineno or 0,
            char=e.offset or 0,
        )


def validate(
    path: str,
    component_function: str,
    validators: Sequence[ComponentFunctionValidator] | None = None,
) -> list[LinterMessage]:
    """Checks that ``component_function`` in the file at ``path`` is a valid component.

    Rules (default validators): every parameter is annotated with a CLI-decodable type
    and the function returns ``AppDef``. A syntax error or a missing function is
    reported as a message, not raised.
    """
    tree = parse_source(read_conf_file(path), path)
    if isinstance(tree, LinterMessage):
        return [tree]
    return validate_tree(tree, component_function, validators)
