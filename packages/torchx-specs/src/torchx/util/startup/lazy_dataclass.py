"""Dataclasses that load the :mod:`dataclasses` machinery only when someone asks for it.

Why: ``import dataclasses`` imports :mod:`inspect` (and with it ``ast``, ``dis``,
``tokenize``...), and ``@dataclass`` compiles three or four methods per class. For the
thirty-odd classes of the data model that is more than a bare interpreter start, paid by
every ``torchx`` command (see docs/design.md, "Start-up budget").

A class decorated with :func:`dataclass` here is a dataclass to everyone else:
``dataclasses.is_dataclass``, ``fields``, ``asdict``, ``astuple`` and ``replace`` work, and
users may subclass it with the stdlib ``@dataclasses.dataclass``. The stdlib description
(``__dataclass_fields__``/``__dataclass_params__``) is built on first access, ``__init__``
is compiled on first instantiation, and :func:`fields`/:func:`asdict` here serve torchx's
own code without importing :mod:`dataclasses` at all.

Supported: field defaults and ``field(default=, default_factory=, init=, repr=, compare=,
metadata=)``; ``__post_init__``; ``eq``, ``frozen`` and ``repr`` class options.
"""

import sys
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType

TYPE_CHECKING = False
if TYPE_CHECKING:
    # The type checker sees the stdlib functions, so it checks our classes as dataclasses.
    from dataclasses import dataclass, field
    from typing import Any, TypeVar

    _T = TypeVar("_T")

__all__ = [
    "MISSING",
    "Field",
    "asdict",
    "dataclass",
    "deep_copy",
    "field",
    "fields",
    "is_dataclass",
    "shallow_copy",
]

_FIELDS_ATTR = "__torchx_fields__"
_PARAMS_ATTR = "__torchx_dataclass_params__"


class _MissingType:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: "Any" = _MissingType()
"""No default (this module's sentinel; :func:`fields` maps the stdlib one onto it)."""


class _FactoryType:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


# The default of an __init__ parameter whose field has a default_factory.
_FACTORY = _FactoryType()

_EMPTY_METADATA: "Mapping[str, Any]" = MappingProxyType({})


class Field:
    """One field of a dataclass: the subset of :class:`dataclasses.Field` torchx uses."""

    __slots__ = (
        "compare",
        "default",
        "default_factory",
        "init",
        "metadata",
        "name",
        "repr",
        "type",
    )

    def __init__(
        self,
        default: "Any" = MISSING,
        default_factory: "Any" = MISSING,
        *,
        init: bool = True,
        repr: bool = True,
        compare: bool = True,
        metadata: "Mapping[str, Any] | None" = None,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("a field takes default or default_factory, not both")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare
        self.metadata: Mapping[str, Any] = (
            _EMPTY_METADATA if not metadata else MappingProxyType(dict(metadata))
        )

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, type={self.type!r}, default={self.default!r})"


class _Params:
    __slots__ = ("eq", "frozen", "repr")

    def __init__(self, eq: bool, frozen: bool, repr: bool) -> None:
        self.eq = eq
        self.frozen = frozen
        self.repr = repr


if not TYPE_CHECKING:

    def field(
        *,
        default=MISSING,
        default_factory=MISSING,
        init=True,
        repr=True,
        compare=True,
        metadata=None,
    ):
        """Declares a field with options, like :func:`dataclasses.field`."""
        return Field(
            default, default_factory, init=init, repr=repr, compare=compare, metadata=metadata
        )

    def dataclass(cls=None, /, *, eq=True, frozen=False, repr=True):
        """Makes ``cls`` a dataclass, like ``@dataclasses.dataclass`` (see the module doc)."""

        def wrap(klass):
            return _process(klass, _Params(eq, frozen, repr))

        return wrap if cls is None else wrap(cls)


# ---------------------------------------------------------------------------------------
# class creation


def _is_classvar(annotation: "Any") -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    typing = sys.modules.get("typing")
    return typing is not None and (
        annotation is typing.ClassVar or getattr(annotation, "__origin__", None) is typing.ClassVar
    )


def _process(cls: type, params: _Params) -> type:
    all_fields: dict[str, Field] = {}
    for base in cls.__mro__[-1:0:-1]:
        base_fields = _own_fields(base)
        if base_fields is not None:
            all_fields.update((f.name, f) for f in base_fields)

    # Since Python 3.10 a class's __annotations__ are its own, never a base's.
    for name, annotation in cls.__annotations__.items():
        if _is_classvar(annotation):
            continue
        if not name.isidentifier():
            raise TypeError(f"{cls.__qualname__}: {name!r} is not a valid field name")
        value = cls.__dict__.get(name, MISSING)
        if isinstance(value, Field):
            f = value
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        else:
            if value is not MISSING and type(value).__hash__ is None:
                raise ValueError(
                    f"{cls.__qualname__}.{name}: a mutable default {type(value).__name__} is "
                    "shared by every instance; use field(default_factory=...)"
                )
            f = Field(default=value)
        f.name = name
        f.type = annotation
        all_fields[name] = f

    ordered = tuple(all_fields.values())
    seen_default = ""
    for f in ordered:
        if not f.init:
            continue
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = f.name
        elif seen_default:
            raise TypeError(
                f"{cls.__qualname__}: field {f.name!r} without a default follows "
                f"field {seen_default!r} with one"
            )

    set_attr = type.__setattr__
    set_attr(cls, _FIELDS_ATTR, ordered)
    set_attr(cls, _PARAMS_ATTR, params)
    set_attr(cls, "__dataclass_fields__", _StdlibDescription(cls, "__dataclass_fields__"))
    set_attr(cls, "__dataclass_params__", _StdlibDescription(cls, "__dataclass_params__"))
    set_attr(cls, "__signature__", _InitSignature(cls))
    _add(cls, "__match_args__", tuple(f.name for f in ordered if f.init))
    _add(cls, "__init__", _placeholder_init(cls))
    if params.repr:
        _add(cls, "__repr__", _make_repr(cls, ordered))
    if params.eq:
        _add(cls, "__eq__", _make_eq(cls, ordered))
    declared_hash = cls.__dict__.get("__hash__", MISSING)
    # A class body defining __eq__ gets __hash__ = None from Python: that one is not explicit.
    implicit = declared_hash is MISSING or (declared_hash is None and "__eq__" in cls.__dict__)
    if implicit and params.eq:
        # The stdlib rule: equal-comparable mutable objects are unhashable.
        set_attr(cls, "__hash__", _make_hash(ordered) if params.frozen else None)
    if params.frozen:
        _add(cls, "__setattr__", _make_frozen_setattr(cls, ordered))
        _add(cls, "__delattr__", _make_frozen_delattr(cls, ordered))
    if not cls.__doc__:
        cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in ordered if f.init)})"
    return cls


def _add(cls: type, name: str, value: "Any") -> None:
    if name not in cls.__dict__:
        if callable(value) and hasattr(value, "__qualname__"):
            value.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, value)


def _own_fields(cls: type) -> "tuple[Field, ...] | None":
    """The fields ``cls`` itself declares as a dataclass, or None when it declares none."""
    mine = cls.__dict__.get(_FIELDS_ATTR)
    if mine is not None:
        return mine  # type: ignore[no-any-return]
    stdlib = cls.__dict__.get("__dataclass_fields__")
    if isinstance(stdlib, dict):
        return _from_stdlib(cls)
    return None


def _from_stdlib(cls: type) -> "tuple[Field, ...]":
    import dataclasses

    result = []
    for sf in dataclasses.fields(cls):
        f = Field(
            MISSING if sf.default is dataclasses.MISSING else sf.default,
            MISSING if sf.default_factory is dataclasses.MISSING else sf.default_factory,
            init=sf.init,
            repr=sf.repr,
            compare=bool(sf.compare),
            metadata=sf.metadata,
        )
        f.name = sf.name
        f.type = sf.type
        result.append(f)
    return tuple(result)


# ---------------------------------------------------------------------------------------
# generated methods


# Instances a class makes through the generic __init__ before it compiles its own: a
# command creates a few of each class (compiling costs more than binding them), a listing
# of thousands of apps gets the compiled one.
_GENERIC_INITS = 64


def _placeholder_init(cls: type) -> "Callable[..., None]":
    made = 0

    def __init__(self: "Any", *args: "Any", **kwargs: "Any") -> None:
        nonlocal made
        made += 1
        if made <= _GENERIC_INITS and _generic_init(cls, self, args, kwargs):
            return
        _compiled_init(cls)(self, *args, **kwargs)

    __init__.__torchx_placeholder__ = True  # type: ignore[attr-defined]
    return __init__


def _generic_init(
    cls: type, self: "Any", args: "tuple[Any, ...]", kwargs: "dict[str, Any]"
) -> bool:
    """Does what the compiled ``__init__`` of ``cls`` does, for arguments that bind; returns
    False, having set nothing, for any that do not (the compiled one raises Python's own
    ``TypeError`` for them)."""
    ordered: tuple[Field, ...] = cls.__dict__[_FIELDS_ATTR]
    params = [f for f in ordered if f.init]
    if len(args) > len(params):
        return False
    given = {f.name: value for f, value in zip(params, args, strict=False)}
    for name, value in kwargs.items():
        if name in given or not any(f.name == name for f in params):
            return False
        given[name] = value
    if any(
        f.name not in given and f.default is MISSING and f.default_factory is MISSING
        for f in params
    ):
        return False
    assign = object.__setattr__ if cls.__dict__[_PARAMS_ATTR].frozen else setattr
    for f in ordered:
        if f.init and f.name in given:
            value = given[f.name]
        elif f.default_factory is not MISSING:
            value = f.default_factory()
        elif f.init:
            value = f.default
        else:
            continue
        assign(self, f.name, value)
    if hasattr(cls, "__post_init__"):
        self.__post_init__()
    return True


def _compiled_init(cls: type) -> "Callable[..., None]":
    """Compiles and installs ``cls.__init__``: one compile per class, on first use."""
    current = cls.__dict__["__init__"]
    if not getattr(current, "__torchx_placeholder__", False):
        return current  # type: ignore[no-any-return]
    ordered: tuple[Field, ...] = cls.__dict__[_FIELDS_ATTR]
    frozen = cls.__dict__[_PARAMS_ATTR].frozen
    namespace: dict[str, Any] = {"__FACTORY": _FACTORY, "__set": object.__setattr__}
    params, body = ["self"], []
    for i, f in enumerate(ordered):
        value = f.name
        if f.default_factory is not MISSING:
            namespace[f"__factory_{i}"] = f.default_factory
            if f.init:
                params.append(f"{f.name}=__FACTORY")
                value = f"__factory_{i}() if {f.name} is __FACTORY else {f.name}"
            else:
                value = f"__factory_{i}()"
        elif not f.init:
            continue
        elif f.default is not MISSING:
            namespace[f"__default_{i}"] = f.default
            params.append(f"{f.name}=__default_{i}")
        else:
            params.append(f.name)
        if frozen:
            body.append(f"__set(self, {f.name!r}, {value})")
        else:
            body.append(f"self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    source = f"def __init__({', '.join(params)}):\n " + "\n ".join(body or ["pass"])
    # Safe: every name in the source is a Python identifier checked at class creation.
    exec(compile(source, f"<dataclass {cls.__qualname__}>", "exec"), namespace)  # noqa: S102
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {f.name: f.type for f in ordered if f.init} | {"return": None}
    type.__setattr__(cls, "__init__", init)
    return init  # type: ignore[no-any-return]


def _make_repr(cls: type, ordered: "tuple[Field, ...]") -> "Callable[[Any], str]":
    names = tuple(f.name for f in ordered if f.repr)
    active: set[tuple[int, int]] = set()

    def __repr__(self: "Any") -> str:
        key = (id(self), threading.get_ident())
        if key in active:
            return "..."
        active.add(key)
        try:
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        finally:
            active.discard(key)
        return f"{type(self).__qualname__}({inner})"

    return __repr__


def _make_eq(cls: type, ordered: "tuple[Field, ...]") -> "Callable[[Any, object], Any]":
    names = tuple(f.name for f in ordered if f.compare)

    def __eq__(self: "Any", other: object) -> "Any":
        if other.__class__ is not self.__class__:
            return NotImplemented
        mine = tuple([getattr(self, n) for n in names])
        return mine == tuple([getattr(other, n) for n in names])

    return __eq__


def _make_hash(ordered: "tuple[Field, ...]") -> "Callable[[Any], int]":
    names = tuple(f.name for f in ordered if f.compare)

    def __hash__(self: "Any") -> int:
        return hash(tuple(getattr(self, n) for n in names))

    return __hash__


def _frozen_error(name: str) -> Exception:
    import dataclasses

    return dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _make_frozen_setattr(cls: "type[Any]", ordered: "tuple[Field, ...]") -> "Callable[..., None]":
    names = frozenset(f.name for f in ordered)

    def __setattr__(self: "Any", name: str, value: "Any") -> None:
        if type(self) is cls or name in names:
            raise _frozen_error(name)
        super(cls, self).__setattr__(name, value)

    return __setattr__


def _make_frozen_delattr(cls: "type[Any]", ordered: "tuple[Field, ...]") -> "Callable[..., None]":
    names = frozenset(f.name for f in ordered)

    def __delattr__(self: "Any", name: str) -> None:
        if type(self) is cls or name in names:
            raise _frozen_error(name)
        super(cls, self).__delattr__(name)

    return __delattr__


class _StdlibDescription:
    """``__dataclass_fields__``/``__dataclass_params__`` of ``owner``, built on first read.

    Built by applying the stdlib decorator to a stand-in class with the same fields, so the
    Field objects are the stdlib's own. Both attributes are then stored on ``owner``.
    """

    def __init__(self, owner: type, attr: str) -> None:
        self.owner = owner
        self.attr = attr

    def __get__(self, instance: object, objtype: "type | None" = None) -> "Any":
        import dataclasses

        owner = self.owner
        params: _Params = owner.__dict__[_PARAMS_ATTR]
        namespace: dict[str, Any] = {
            "__annotations__": {},
            "__module__": owner.__module__,
            "__qualname__": owner.__qualname__,
        }
        for f in owner.__dict__[_FIELDS_ATTR]:
            namespace["__annotations__"][f.name] = f.type
            namespace[f.name] = dataclasses.field(
                default=f.default if f.default is not MISSING else dataclasses.MISSING,
                default_factory=(
                    f.default_factory if f.default_factory is not MISSING else dataclasses.MISSING
                ),
                init=f.init,
                repr=f.repr,
                compare=f.compare,
                metadata=dict(f.metadata) or None,
            )
        decorate = dataclasses.dataclass(eq=params.eq, frozen=params.frozen, repr=params.repr)
        stand_in: type = decorate(type(owner.__name__, (), namespace))
        for attr in ("__dataclass_fields__", "__dataclass_params__"):
            type.__setattr__(owner, attr, stand_in.__dict__[attr])
        return owner.__dict__[self.attr]


class _InitSignature:
    """``__signature__`` for :func:`inspect.signature`: the compiled ``__init__``'s."""

    def __init__(self, owner: type) -> None:
        self.owner = owner

    def __get__(self, instance: object, objtype: "type | None" = None) -> "Any":
        owner = self.owner
        if instance is not None or objtype is None:
            return None
        inherited = next(k.__dict__["__init__"] for k in objtype.__mro__ if "__init__" in vars(k))
        if objtype is not owner and inherited is not owner.__dict__["__init__"]:
            return None  # a subclass with an __init__ of its own
        import inspect

        signature = inspect.signature(_compiled_init(owner))
        return signature.replace(parameters=list(signature.parameters.values())[1:])


# ---------------------------------------------------------------------------------------
# introspection without importing dataclasses


_FIELDS_CACHE: dict[type, tuple[Field, ...]] = {}


def _fields_of_type(cls: type) -> "tuple[Field, ...] | None":
    cached = _FIELDS_CACHE.get(cls)
    if cached is not None:
        return cached
    for klass in cls.__mro__:
        found = _own_fields(klass)
        if found is not None:
            _FIELDS_CACHE[cls] = found
            return found
    return None


def is_dataclass(obj: object) -> bool:
    """True for a dataclass (ours or the stdlib's) or an instance of one."""
    cls = obj if isinstance(obj, type) else type(obj)
    return _fields_of_type(cls) is not None


def fields(class_or_instance: object) -> "tuple[Field, ...]":
    """The fields of a dataclass (ours or the stdlib's) in declaration order."""
    cls = class_or_instance if isinstance(class_or_instance, type) else type(class_or_instance)
    found = _fields_of_type(cls)
    if found is None:
        raise TypeError(f"{cls.__qualname__} is not a dataclass")
    return found


def asdict(obj: object) -> "dict[str, Any]":
    """``obj`` as nested dicts, lists and deep-copied leaves, like :func:`dataclasses.asdict`."""
    if isinstance(obj, type) or _fields_of_type(type(obj)) is None:
        raise TypeError(f"asdict() takes a dataclass instance, not {type(obj).__qualname__}")
    return _asdict(obj)  # type: ignore[no-any-return]


def _asdict(value: "Any") -> "Any":
    found = None if isinstance(value, type) else _fields_of_type(type(value))
    if found is not None:
        return {f.name: _asdict(getattr(value, f.name)) for f in found}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*[_asdict(v) for v in value])
    if isinstance(value, list | tuple):
        return type(value)(_asdict(v) for v in value)
    if isinstance(value, dict):
        factory = getattr(value, "default_factory", MISSING)
        if factory is not MISSING:  # a defaultdict keeps its factory
            result = type(value)(factory)
            for k, v in value.items():
                result[_asdict(k)] = _asdict(v)
            return result
        return type(value)((_asdict(k), _asdict(v)) for k, v in value.items())
    return deep_copy(value)


# ---------------------------------------------------------------------------------------
# copies without importing copy (with weakref, it costs a tenth of a `torchx run`)

# Immutable values copy.deepcopy returns as they are.
_ATOMIC = frozenset(
    {type(None), bool, int, float, complex, str, bytes, range, type(...), type(NotImplemented)}
)


def _plain_instance(value: "Any") -> bool:
    """Whether ``value`` is one of our dataclasses' instances whose copy is its ``__dict__``
    copied (what :mod:`copy` does when a class customizes nothing)."""
    cls = type(value)
    if _fields_of_type(cls) is None or not hasattr(value, "__dict__"):
        return False
    copyreg = sys.modules.get("copyreg")
    if copyreg is not None and cls in copyreg.dispatch_table:
        return False
    plain = (
        getattr(cls, "__reduce_ex__", None) is object.__reduce_ex__
        and getattr(cls, "__reduce__", None) is object.__reduce__
        and getattr(cls, "__getstate__", None) is getattr(object, "__getstate__", None)
        and not hasattr(cls, "__setstate__")
        and not hasattr(cls, "__copy__")
    )
    return plain and not any("__slots__" in vars(klass) for klass in cls.__mro__[:-1])


def shallow_copy(value: "_T") -> "_T":
    """:func:`copy.copy`, for our dataclasses without importing :mod:`copy`."""
    if not _plain_instance(value):
        import copy

        return copy.copy(value)
    result = type(value).__new__(type(value))
    vars(result).update(vars(value))
    return result


def deep_copy(value: "_T", memo: "dict[int, Any] | None" = None) -> "_T":
    """:func:`copy.deepcopy`, for the data model's trees without importing :mod:`copy`.

    Our dataclasses, lists, dicts, tuples and immutable values are copied here; anything
    else (and any class that customizes copying) by :func:`copy.deepcopy`, with the same
    ``memo``, so shared and recursive references come out as :mod:`copy` makes them.
    """
    if memo is None:
        memo = {}
    cls = type(value)
    if cls in _ATOMIC:
        return value
    key = id(value)
    if key in memo:
        return memo[key]  # type: ignore[no-any-return]
    result: Any
    if cls is list:
        result = memo[key] = []
        result.extend(deep_copy(item, memo) for item in value)  # type: ignore[attr-defined]
    elif cls is dict:
        result = memo[key] = {}
        for k, v in value.items():  # type: ignore[attr-defined]
            result[deep_copy(k, memo)] = deep_copy(v, memo)
    elif cls is tuple:
        items = [deep_copy(item, memo) for item in value]  # type: ignore[attr-defined]
        if key in memo:  # the tuple was reached through itself
            return memo[key]  # type: ignore[no-any-return]
        if all(a is b for a, b in zip(items, value, strict=True)):  # type: ignore[call-overload]
            return value
        result = memo[key] = tuple(items)
    elif getattr(cls, "__deepcopy__", None) is not None:
        result = value.__deepcopy__(memo)  # type: ignore[attr-defined]
        if result is not value:
            memo[key] = result
    elif _plain_instance(value):
        result = memo[key] = cls.__new__(cls)
        state = vars(result)
        for name, item in vars(value).items():
            state[name] = deep_copy(item, memo)
    else:
        import copy

        result = copy.deepcopy(value, memo)
    return result  # type: ignore[no-any-return]
