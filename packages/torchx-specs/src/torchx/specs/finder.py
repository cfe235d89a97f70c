"""Finds components: the functions ``torchx run NAME`` can launch.

Where components come from:

* entry-point group ``torchx.components``: ``prefix = some.module`` exposes every
  component function under ``some.module`` (recursively, regular packages only) as
  ``prefix.<relative module>.<function>``. Keys ``_``, ``_0``, ``_1``... mean "no prefix".
  Registering anything replaces the built-ins; register ``torchx.components`` again
  (``_1 = torchx.components``) to keep them.
* otherwise the built-ins in ``torchx.components`` (shipped by ``torchx-runner``; when it
  is not installed there are simply no built-in components);
* ``path/to/file.py:function`` names a function in a file directly;
* ``package.module.function`` names a function by its import path.

A module that fails to import is reported (warning + :func:`get_component_load_errors`)
and never hides the components of other modules. ``test``/``tests`` packages and
``test_*``/``*_test(s)`` modules are not scanned.

:func:`get_component` does not scan: a registered name says which module holds the
function, so only that module is imported and linted (same answer as a scan). The full
scan runs for listings (:func:`get_components`) and to explain a name that is not found.
Docstrings are parsed only when a component's ``description`` is read.
"""

from __future__ import annotations

import abc
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from types import FunctionType, ModuleType

from torchx.specs import _lint_cache
from torchx.util.entrypoints import entry_points
from torchx.util.io import read_conf_file
from torchx.util.log import get_logger
from torchx.util.startup.lazy_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.specs.file_linter import ComponentFunctionValidator, LinterMessage

__all__ = [
    "BUILTIN_COMPONENTS_MODULE",
    "COMPONENTS_GROUP",
    "ComponentLoadError",
    "ComponentNotFoundException",
    "ComponentValidationException",
    "ComponentsFinder",
    "CustomComponentsFinder",
    "ModuleComponentsFinder",
    "clear_component_cache",
    "get_builtin_source",
    "get_component",
    "get_component_load_errors",
    "get_components",
]

logger = get_logger(__name__)

COMPONENTS_GROUP = "torchx.components"
BUILTIN_COMPONENTS_MODULE = "torchx.components"

# test helpers shipped beside components (upstream skips them too)
_SKIPPED_MODULE_NAMES = frozenset({"test", "tests", "component_test_base", "integration_tests"})


class ComponentValidationException(Exception):
    """The named function exists but is not a valid component (see the linter messages)."""


class ComponentNotFoundException(Exception):
    """No component has the given name."""


@dataclass
class ComponentLoadError:
    """A component module that could not be imported; its components are missing."""

    module: str
    error: str
    entry_point: str | None = None

    def __str__(self) -> str:
        origin = f" (entry point `{self.entry_point}`)" if self.entry_point else ""
        return f"{self.module}{origin}: {self.error}"


class _Component:
    """A discovered component function and the linter's verdict on it.

    ``description`` (the docstring summary; empty for an invalid component) is parsed on
    first access: parsing docstrings is the costly part of discovery and most callers
    never show it. Pass ``None`` to have it computed that way.
    """

    __slots__ = ("_description", "fn", "fn_name", "name", "validation_errors")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __init__(
        self,
        name: str,
        description: str | None,
        fn_name: str,
        fn: Callable[..., Any],
        validation_errors: list[str] | None = None,
    ) -> None:
        self.name = name
        self._description = description
        self.fn_name = fn_name
        self.fn = fn
        self.validation_errors: list[str] = [] if validation_errors is None else validation_errors

    @property
    def description(self) -> str:
        if self._description is None:
            from torchx.specs.file_linter import get_fn_docstring

            self._description = "" if self.validation_errors else get_fn_docstring(self.fn)[0]
        return self._description

    @description.setter
    def description(self, value: str) -> None:
        self._description = value

    def _fields(self) -> tuple[Any, ...]:
        return (self.name, self.description, self.fn_name, self.fn, self.validation_errors)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Component):
            return NotImplemented
        return self._fields() == other._fields()

    def __repr__(self) -> str:
        return (
            f"_Component(name={self.name!r}, description={self.description!r},"
            f" fn_name={self.fn_name!r}, fn={self.fn!r},"
            f" validation_errors={self.validation_errors!r})"
        )


def is_namespace_package(module: ModuleType) -> bool:
    """A package without ``__init__.py`` (no ``__file__``)."""
    return hasattr(module, "__path__") and getattr(module, "__file__", None) is None


def is_package(module: ModuleType) -> bool:
    """A regular package (has ``__init__.py``)."""
    return hasattr(module, "__path__") and getattr(module, "__file__", None) is not None


def module_relname(module: ModuleType, relative_to: ModuleType) -> str:
    """``a.b.c`` relative to ``a`` is ``b.c``; ValueError when not a submodule."""
    name, base = module.__name__, relative_to.__name__
    if name == base:
        return ""
    if not name.startswith(f"{base}."):
        raise ValueError(f"`{name}` is not a submodule of `{base}`")
    return name[len(base) + 1 :]


def _is_skipped_module(short_name: str) -> bool:
    return (
        short_name in _SKIPPED_MODULE_NAMES
        or short_name.startswith("test_")
        or short_name.endswith(("_test", "_tests"))
    )


def _describe_error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _lint_messages(messages: list[LinterMessage]) -> list[str]:
    return [m.description for m in messages]


def _lint_file(
    path: str, fn_name: str, validators: Sequence[ComponentFunctionValidator] | None
) -> list[str]:
    """The linter's complaints about ``fn_name`` in the file at ``path`` (a syntax error
    counts as one); raises ``OSError`` when the file cannot be read."""
    return _lint_functions(path, [fn_name], validators)[fn_name]


def _lint_functions(
    path: str, fn_names: Sequence[str], validators: Sequence[ComponentFunctionValidator] | None
) -> dict[str, list[str]]:
    """``{fn_name: complaints}``; verdicts of the default validators come from a cache."""

    def compute() -> dict[str, list[str]]:
        from torchx.specs.file_linter import LinterMessage, parse_source, validate_tree

        tree = parse_source(read_conf_file(path), path)
        if isinstance(tree, LinterMessage):
            return {name: [tree.description] for name in fn_names}
        return {name: _lint_messages(validate_tree(tree, name, validators)) for name in fn_names}

    if validators is not None:
        return compute()

    return _lint_cache.lint(path, fn_names, compute)


def _defined_function(module: ModuleType, fn_name: str) -> Callable[..., Any] | None:
    """``module.<fn_name>`` when it is a public function defined in ``module`` itself."""
    fn = vars(module).get(fn_name)
    if (
        fn_name.startswith("_")
        or not isinstance(fn, FunctionType)
        or getattr(fn, "__module__", None) != module.__name__
    ):
        return None
    return fn


def _try_import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except Exception as e:  # discovery reports it; a lookup just skips the module
        logger.debug("cannot import component module %s: %s", name, _describe_error(e))
        return None


class ComponentsFinder(abc.ABC):
    """Discovers components from one source."""

    def __init__(self) -> None:
        self.load_errors: list[ComponentLoadError] = []

    @abc.abstractmethod
    def find(
        self, validators: Sequence[ComponentFunctionValidator] | None = None
    ) -> list[_Component]:
        """The components of this source, valid or not."""


def _components_of_module(
    module: ModuleType,
    name_prefix: str,
    validators: Sequence[ComponentFunctionValidator] | None,
) -> list[_Component]:
    """Every public function defined in ``module`` (by name), linted against its file."""
    functions = [
        (fn_name, fn)
        for fn_name in sorted(vars(module))
        if (fn := _defined_function(module, fn_name)) is not None
    ]
    if not functions:
        return []
    path = getattr(module, "__file__", None)
    if not path:
        return []
    verdicts = _lint_functions(path, [fn_name for fn_name, _ in functions], validators)
    components = []
    for fn_name, fn in functions:
        errors = verdicts[fn_name]
        components.append(
            _Component(
                name=".".join(p for p in (name_prefix, fn_name) if p),
                description=None,
                fn_name=fn_name,
                fn=fn,
                validation_errors=errors,
            )
        )
    return components


class ModuleComponentsFinder(ComponentsFinder):
    """Components in ``module`` and its submodules, named ``group.<relative>.<fn>``."""

    def __init__(
        self, module: str | ModuleType, group: str, entry_point: str | None = None
    ) -> None:
        super().__init__()
        self.base_module = module
        self.group = group
        self.entry_point = entry_point

    def _record(self, module: str, error: BaseException | str) -> None:
        text = error if isinstance(error, str) else _describe_error(error)
        load_error = ComponentLoadError(module, text, self.entry_point)
        logger.warning("skipping components of %s", load_error)
        self.load_errors.append(load_error)

    def _import(self, name: str) -> ModuleType | None:
        try:
            return importlib.import_module(name)
        except Exception as e:  # any failure hides this module only
            self._record(name, e)
            return None

    def _iter_modules(self, base: ModuleType) -> list[ModuleType]:
        """``base`` and its importable submodules (regular packages recursed)."""
        import pkgutil

        modules = [base]
        if not hasattr(base, "__path__"):
            return modules
        for info in pkgutil.iter_modules(base.__path__):
            if _is_skipped_module(info.name):
                continue
            module = self._import(f"{base.__name__}.{info.name}")
            if module is None:
                continue
            if is_package(module):
                modules += self._iter_modules(module)
            elif not is_namespace_package(module):
                modules.append(module)
        return modules

    def lookup(
        self, name: str, validators: Sequence[ComponentFunctionValidator] | None = None
    ) -> _Component | None:
        """The component :meth:`find` would list as ``name``, or ``None``.

        Imports and lints only the one module the name points at (``group.rel.fn`` is
        function ``fn`` of ``<base>.rel``), applying the rules of :meth:`find`: no
        ``test``/``tests`` modules, only regular packages are entered, the function must
        be public and defined in that module. A module that fails to import or to read
        lists nothing, as in :meth:`find`.
        """
        relative = name
        if self.group:
            if not name.startswith(f"{self.group}."):
                return None
            relative = name[len(self.group) + 1 :]
        module_path, _, fn_name = relative.rpartition(".")
        if not fn_name:
            return None
        base = self.base_module
        module = _try_import(base) if isinstance(base, str) else base
        for part in module_path.split(".") if module_path else ():
            if module is None or not part or _is_skipped_module(part):
                return None
            if not hasattr(module, "__path__"):
                return None  # a plain module has no submodules to scan
            module = _try_import(f"{module.__name__}.{part}")
            if module is not None and is_namespace_package(module):
                return None  # discovery does not enter namespace packages
        if module is None:
            return None
        fn = _defined_function(module, fn_name)
        path = getattr(module, "__file__", None)
        if fn is None or not path:
            return None
        try:
            errors = _lint_file(path, fn_name, validators)
        except Exception as e:  # unreadable source: discovery reports it
            logger.debug("cannot read component module %s: %s", path, _describe_error(e))
            return None
        return _Component(name, None, fn_name, fn, errors)

    def find(
        self, validators: Sequence[ComponentFunctionValidator] | None = None
    ) -> list[_Component]:
        base = self.base_module
        if isinstance(base, str):
            imported = self._import(base)
            if imported is None:
                return []
            base = imported
        components: list[_Component] = []
        for module in self._iter_modules(base):
            prefix = ".".join(p for p in (self.group, module_relname(module, base)) if p)
            try:
                components += _components_of_module(module, prefix, validators)
            except Exception as e:  # unreadable source: report, keep the others
                self._record(module.__name__, e)
        return components


class _ParentMissing(Exception):
    """The package a component file belongs to cannot be imported in this process."""


def _module_identities(path: str) -> list[tuple[str, str]]:
    """(module name, the ``sys.path`` root it is found from) to load ``path`` as: its
    dotted name in its package when it is in one, then its stem beside it."""
    directory, filename = os.path.split(path)
    stem = filename[:-3] if filename.endswith(".py") else filename
    parts = [stem]
    root = directory
    while os.path.isfile(os.path.join(root, "__init__.py")):
        root, package = os.path.split(root)
        parts.insert(0, package)
    found = []
    if len(parts) > 1 and all(part.isidentifier() for part in parts):
        found.append((".".join(parts), root))
    if stem.isidentifier():
        found.append((stem, directory))
    return found


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _load_file_module(path: str, name: str, root: str) -> ModuleType:
    """``path`` imported as module ``name`` with ``root`` on ``sys.path``."""

    base, n = name, 0
    while (existing := sys.modules.get(name)) is not None:
        if getattr(existing, "__file__", None) and _same_file(existing.__file__ or "", path):
            return existing
        n += 1
        name = f"{base}_{n}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ComponentNotFoundException(f"{path} cannot be loaded as a Python module")
    added = root not in sys.path
    if added:
        sys.path.append(root)
    parent_name, _, leaf = name.rpartition(".")
    parent = None
    module = importlib.util.module_from_spec(spec)
    try:
        if parent_name:
            try:
                parent = importlib.import_module(parent_name)
            except ImportError as e:
                if e.name is not None and parent_name.startswith(e.name):
                    raise _ParentMissing(parent_name) from None
                raise
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        if added and root in sys.path:
            sys.path.remove(root)
        raise
    if parent is not None:
        setattr(parent, leaf, module)
    return module


def _class_component(cls: type) -> tuple[Callable[..., Any] | None, str | None]:
    """A class as a component (upstream's #1416): its constructor's parameters are the
    component's arguments and ``build(self) -> AppDef`` makes the app. Returns the function
    that does ``cls(...).build()``, which argparse and ``--help`` read like any component
    (the class's signature, docstring and annotations), or the reason it is no component."""
    if not callable(getattr(cls, "build", None)):
        return None, (
            f"Class component `{cls.__name__}` must define a `build(self) -> AppDef` method"
        )
    import inspect

    def component(*args: Any, **kwargs: Any) -> Any:
        return cls(*args, **kwargs).build()

    init: Any = cls.__init__  # type: ignore[misc]  # the class's own constructor
    component.__name__ = cls.__name__
    component.__qualname__ = cls.__qualname__
    component.__module__ = cls.__module__
    component.__doc__ = cls.__doc__
    component.__signature__ = inspect.signature(cls)  # type: ignore[attr-defined]
    hints = dict(getattr(init, "__annotations__", {}))
    hints.pop("return", None)
    component.__annotations__ = hints
    # where the annotations are evaluated (typing.get_type_hints follows __wrapped__)
    component.__wrapped__ = init  # type: ignore[attr-defined]
    return component, None


class CustomComponentsFinder(ComponentsFinder):
    """The component ``function`` defined in the Python file ``filepath``."""

    def __init__(self, filepath: str, function_name: str) -> None:
        super().__init__()
        self._filepath = filepath
        self._function_name = function_name

    def _load_module(self, source: str) -> ModuleType:
        """The file as Python itself would load it (upstream's #1414): a file of a package
        (its directory holds ``__init__.py``) under its dotted name, the package's parent
        directory on ``sys.path`` and the package imported first, so relative and sibling
        imports resolve; any other file under its stem, its directory on ``sys.path``. The
        module is in ``sys.modules`` (dataclasses, typing and pickle find it); loading a
        file again gives the same module, and a name another file holds gets a suffix."""
        path = os.path.abspath(self._filepath)
        if not os.path.isfile(path):
            return self._exec_source(source, path)
        for name, root in _module_identities(path):
            try:
                return _load_file_module(path, name, root)
            except _ParentMissing:
                continue  # the package is not importable here: load the file alone
            except SystemExit as e:  # would end torchx silently, mid-command
                raise ComponentValidationException(
                    f"component file {self._filepath} called sys.exit({e.code!r}) while it"
                    ' was loaded; move script code under `if __name__ == "__main__":`'
                ) from None
        return self._exec_source(source, path)

    def _exec_source(self, source: str, path: str) -> ModuleType:
        """A file that is not on this file system: its source run in a new module."""
        import zlib

        name = f"_torchx_component_file_{zlib.crc32(path.encode()):08x}"
        module = ModuleType(name)
        module.__file__ = path
        sys.modules[name] = module  # dataclasses and pickling look the module up by name
        try:
            exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 - user's own file
        except SystemExit as e:  # would end torchx silently, mid-command
            sys.modules.pop(name, None)
            raise ComponentValidationException(
                f"component file {self._filepath} called sys.exit({e.code!r}) while it was"
                ' loaded; move script code under `if __name__ == "__main__":`'
            ) from None
        return module

    def _check_defined(self, tree: Any) -> None:
        """Refuses, before the file runs, a function name the file never binds at its top
        level (a ``def``, an import, an assignment): loading it would run the user's
        script (a training run, say) only to find nothing there."""
        import ast

        functions: list[str] = []
        bound: set[str] = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append(node.name)
                bound.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".")[0] for a in node.names)
                if any(a.name == "*" for a in node.names):
                    return  # a star import may bring it: only running the file tells
            elif not isinstance(node, ast.Expr):
                # assignments, if/try/with/for blocks, classes: anything may bind it there
                bound.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
                if isinstance(node, ast.ClassDef):
                    bound.add(node.name)
        if self._function_name in bound:
            return
        listed = ", ".join(functions) if functions else "none"
        raise ComponentNotFoundException(
            f"{self._filepath} has no function {self._function_name}; its functions: {listed}"
            " (nothing was run)"
        )

    def find(
        self, validators: Sequence[ComponentFunctionValidator] | None = None
    ) -> list[_Component]:
        source = read_conf_file(self._filepath)
        from torchx.specs.file_linter import LinterMessage, parse_source, validate_tree

        tree = parse_source(source, self._filepath)
        if isinstance(tree, LinterMessage):
            raise ComponentValidationException(
                f"{self._filepath}:{tree.line}: {tree.description}; fix the syntax error"
            )
        self._check_defined(tree)
        module = self._load_module(source)
        fn = getattr(module, self._function_name, None)
        name = f"{self._filepath}:{self._function_name}"
        if isinstance(fn, type) and fn.__module__ == module.__name__:
            adapted, problem = _class_component(fn)
            if problem is not None:
                return [_Component(name, None, self._function_name, fn, [problem])]
            fn = adapted
        if not isinstance(fn, FunctionType):
            return []
        errors = _lint_messages(validate_tree(tree, self._function_name, validators))
        return [
            _Component(
                name=name,
                description=None,
                fn_name=self._function_name,
                fn=fn,
                validation_errors=errors,
            )
        ]


def _entry_point_finders() -> list[ModuleComponentsFinder]:
    finders = []
    for ep in entry_points(COMPONENTS_GROUP):
        group = "" if ep.name.startswith("_") else ep.name
        label = f"{ep.name} = {ep.value}"
        target: str | ModuleType = ep.module
        if ep.attr is not None:
            try:
                loaded = ep.load()
            except Exception as e:
                finder = ModuleComponentsFinder(ep.module, group, label)
                finder._record(ep.value, e)
                finders.append(finder)
                continue
            if isinstance(loaded, (str, ModuleType)):
                target = loaded
            else:
                finder = ModuleComponentsFinder(ep.module, group, label)
                finder._record(
                    ep.value,
                    f"must name a module (or a module name string), got {type(loaded).__name__}",
                )
                finders.append(finder)
                continue
        finders.append(ModuleComponentsFinder(target, group, label))
    return finders


def _builtin_finders() -> list[ModuleComponentsFinder]:
    """The built-ins, or nothing when ``torchx.components`` is not installed."""
    try:
        importlib.import_module(BUILTIN_COMPONENTS_MODULE)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if missing == BUILTIN_COMPONENTS_MODULE or BUILTIN_COMPONENTS_MODULE.startswith(
            f"{missing}."
        ):
            return []
    except Exception:  # noqa: S110 - the finder records the error when it imports again
        pass
    return [ModuleComponentsFinder(BUILTIN_COMPONENTS_MODULE, "")]


def _finders() -> list[ModuleComponentsFinder]:
    """The finders of registered components, in priority order (first one wins a name)."""
    return _entry_point_finders() or _builtin_finders()


class _Discovery:
    """Everything the finders found: components by name, and modules that failed."""

    __slots__ = ("components", "load_errors")

    def __init__(
        self, components: dict[str, _Component], load_errors: list[ComponentLoadError]
    ) -> None:
        self.components = components
        self.load_errors = load_errors


_cache: dict[Any, _Discovery] = {}
_lookups: dict[Any, _Component] = {}
_NO_CACHE = object()


def _cache_key(validators: Sequence[ComponentFunctionValidator] | None) -> Any:
    """The key results for ``validators`` are cached under (``_NO_CACHE``: don't cache)."""
    key = None if validators is None else tuple(validators)
    try:
        hash(key)
    except TypeError:  # unhashable validators
        return _NO_CACHE
    return key


def _discover(validators: Sequence[ComponentFunctionValidator] | None) -> _Discovery:
    key = _cache_key(validators)
    cached = _cache.get(key) if key is not _NO_CACHE else None
    if cached is not None:
        return cached
    finders = _finders()
    components: dict[str, _Component] = {}
    load_errors: list[ComponentLoadError] = []
    for finder in finders:
        for component in finder.find(validators):
            components.setdefault(component.name, component)
        load_errors += finder.load_errors
    discovery = _Discovery(components, load_errors)
    if key is not _NO_CACHE:
        _cache[key] = discovery
    return discovery


def _lookup(
    name: str, validators: Sequence[ComponentFunctionValidator] | None
) -> _Component | None:
    """What discovery would return for ``name``, importing only the module it names.

    Finders are asked in discovery's order and the first that lists ``name`` wins, so the
    answer equals ``_discover(validators).components.get(name)``.
    """
    key = _cache_key(validators)
    if key is not _NO_CACHE:
        discovery = _cache.get(key)
        if discovery is not None:
            return discovery.components.get(name)
        cached = _lookups.get((key, name))
        if cached is not None:
            return cached
    for finder in _finders():
        component = finder.lookup(name, validators)
        if component is not None:
            if key is not _NO_CACHE:
                _lookups[key, name] = component
            return component
    return None


def clear_component_cache() -> None:
    """Forgets discovered components (the next lookup scans again)."""
    _cache.clear()
    _lookups.clear()


def get_component_load_errors(
    validators: Sequence[ComponentFunctionValidator] | None = None,
) -> list[ComponentLoadError]:
    """Component modules that failed to import during discovery."""
    return list(_discover(validators).load_errors)


def _find_components(
    validators: Sequence[ComponentFunctionValidator] | None = None,
) -> dict[str, _Component]:
    return _discover(validators).components


def get_components(
    validators: Sequence[ComponentFunctionValidator] | None = None,
) -> dict[str, _Component]:
    """``{name: component}`` of every discovered component that passes the linter."""
    return {
        name: component
        for name, component in _find_components(validators).items()
        if not component.validation_errors
    }


def _from_import_path(
    name: str,
    validators: Sequence[ComponentFunctionValidator] | None,
    classes: bool = False,
) -> _Component | None:
    """``package.module.function`` → that function, when it is a component; with
    ``classes`` (``pkg.mod:Name``), a class with ``build()`` defined there too."""
    module_name, _, fn_name = name.rpartition(".")
    if not module_name or not fn_name:
        return None
    try:
        module = importlib.import_module(module_name)
    except Exception:
        return None
    fn = getattr(module, fn_name, None)
    if getattr(fn, "__module__", None) != module.__name__:
        return None
    if classes and isinstance(fn, type):
        adapted, problem = _class_component(fn)
        if problem is not None:
            return _Component(name, None, fn_name, fn, [problem])
        fn = adapted
    if not isinstance(fn, FunctionType):
        return None
    path = getattr(module, "__file__", None)
    if not path:
        return None
    return _Component(name, None, fn_name, fn, _lint_file(path, fn_name, validators))


def _is_module_path(text: str) -> bool:
    """Whether ``text`` (before a ``:``) is a dotted module name rather than a file: no
    path separator, no ``.py``, no such file here, and each part an identifier."""
    if not text or "/" in text or os.sep in text or text.endswith(".py") or os.path.exists(text):
        return False
    return all(part.isidentifier() for part in text.split("."))


def _not_found(name: str, discovery: _Discovery) -> ComponentNotFoundException:
    import difflib

    valid = [n for n, c in discovery.components.items() if not c.validation_errors]
    message = f"Component `{name}` not found."
    close = difflib.get_close_matches(name, valid, n=3)
    if close:
        message += f" Did you mean: {', '.join(close)}?"
    if discovery.load_errors:
        message += " These component modules failed to load: " + "; ".join(
            str(e) for e in discovery.load_errors
        )
        message += "."
    message += (
        " Run `torchx builtins` to list the available components, or name a function in a"
        " file as `path/to/file.py:function`."
    )
    if name.endswith(".py") and os.path.isfile(name):
        message = _file_without_function(name)
    return ComponentNotFoundException(message)


def _file_without_function(path: str) -> str:
    """The error for ``torchx run ./comp.py``: the file exists, the function is not named."""
    import ast

    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), filename=path)
        functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    except (OSError, SyntaxError, ValueError):
        functions = []
    example = functions[0] if functions else "FUNCTION"
    found = f" (its functions: {', '.join(functions)})" if functions else ""
    return (
        f"`{path}` is a file, not a component: name the component function in it as"
        f" `{path}:{example}`{found}"
    )


def _check_valid(component: _Component) -> _Component:
    if component.validation_errors:
        raise ComponentValidationException(
            f"Component {component.name} has validation errors: "
            + "; ".join(component.validation_errors)
        )
    return component


def get_component(
    name: str, validators: Sequence[ComponentFunctionValidator] | None = None
) -> _Component:
    """The component called ``name`` (discovered name, ``file.py:fn`` or import path).

    Raises ``ComponentNotFoundException`` (with close matches and load errors) or
    ``ComponentValidationException`` (with the linter messages).
    """
    if ":" in name:
        filepath, _, fn_name = name.rpartition(":")
        if _is_module_path(filepath):  # `pkg.mod:fn`, as upstream's head names one
            dotted = _from_import_path(f"{filepath}.{fn_name}", validators, classes=True)
            if dotted is None:
                raise ComponentNotFoundException(
                    f"Component `{name}` not found: module `{filepath}` cannot be imported or"
                    f" has no component function `{fn_name}`"
                )
            return _check_valid(dotted)
        found = CustomComponentsFinder(filepath, fn_name).find(validators)
        if not found:
            raise ComponentNotFoundException(
                f"Function `{fn_name}` not found in `{filepath}`; check the name after `:`"
            )
        return _check_valid(found[0])
    # Importing just the module the name points at is exact and spares importing and
    # linting every component module; the full scan only runs to explain a miss.
    component = _lookup(name, validators) or _from_import_path(name, validators)
    if component is None:
        discovery = _discover(validators)
        component = discovery.components.get(name)
        if component is None:
            raise _not_found(name, discovery)
    return _check_valid(component)


def get_builtin_source(
    name: str, validators: Sequence[ComponentFunctionValidator] | None = None
) -> str:
    """The source of a component: its file's imports followed by the function.

    Meant as a starting point for a custom component (``torchx builtins --print``).
    """
    import ast
    import inspect

    fn = get_component(name, validators).fn
    path = inspect.getsourcefile(fn) or ""
    source = read_conf_file(path)
    fn_source = inspect.getsource(fn)
    def_line = fn.__code__.co_firstlineno
    imports = [
        ast.get_source_segment(source, node) or ""
        for node in ast.parse(source).body
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno < def_line
    ]
    header = "\n".join(i for i in imports if i)
    return f"{header}\n\n\n{fn_source}" if header else fn_source
