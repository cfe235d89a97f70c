"""torchx.util.startup.lazy_dataclass: classes that are dataclasses to every stdlib API and user.

The data model (AppDef, Role, Resource...) is declared with it, so these are the
guarantees users of ``dataclasses.asdict(app)``, ``dataclasses.replace(role, ...)`` or a
``@dataclasses.dataclass`` subclass of ``Role`` rely on.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import inspect
import json
import pickle
import subprocess
import sys
from typing import Any, ClassVar, NamedTuple

import pytest

from torchx.util.startup import lazy_dataclass as ldc


@ldc.dataclass
class Point:
    """A point."""

    x: int
    y: int = 0
    tags: dict[str, str] = ldc.field(default_factory=dict)
    note: str = ldc.field(default="", repr=False, compare=False)
    kind: ClassVar[str] = "point"


@ldc.dataclass
class Shape:
    name: str
    points: list[Point] = ldc.field(default_factory=list)

    def __post_init__(self) -> None:
        self.size = len(self.points)


@ldc.dataclass(frozen=True)
class Key:
    a: str
    b: int = 1


@ldc.dataclass
class Point3(Point):
    z: int = 0


class Pair(NamedTuple):
    left: Any
    right: Any


def test_instances_behave_like_stdlib_dataclasses() -> None:
    p = Point(1)
    assert (p.x, p.y, p.tags, p.note) == (1, 0, {}, "")
    assert Point(1).tags is not p.tags  # a fresh default per instance
    assert repr(p) == "Point(x=1, y=0, tags={})"
    assert p == Point(1, note="ignored by eq") and p != Point(2)
    assert Point.__eq__(p, "other") is NotImplemented
    with pytest.raises(TypeError, match="unhashable"):
        hash(p)
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    assert Point.kind == "point" and "kind" not in [f.name for f in ldc.fields(Point)]
    assert Point.__match_args__ == ("x", "y", "tags", "note")
    assert Shape("s", [p]).size == 1  # __post_init__ runs
    assert Point3(1, z=3) == Point3(1, 0, {}, "", 3)


def test_frozen_classes_refuse_assignment_and_hash_by_value() -> None:
    k = Key("q")
    with pytest.raises(dataclasses.FrozenInstanceError):
        k.a = "z"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del k.a
    assert hash(k) == hash(Key("q")) and {k, Key("q")} == {k}


def test_stdlib_dataclasses_api_works_on_them() -> None:
    p, s = Point(1, 2, {"a": "b"}), Shape("s", [Point(3)])
    assert dataclasses.is_dataclass(Point) and dataclasses.is_dataclass(p)
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y", "tags", "note"]
    assert dataclasses.fields(Point)[2].default_factory is dict
    assert dataclasses.fields(Point)[3].compare is False
    assert dataclasses.asdict(s) == {
        "name": "s",
        "points": [{"x": 3, "y": 0, "tags": {}, "note": ""}],
    }
    assert dataclasses.astuple(p) == (1, 2, {"a": "b"}, "")
    assert dataclasses.replace(p, y=5) == Point(1, 5, {"a": "b"})
    assert dataclasses.replace(Key("q"), b=2) == Key("q", 2)


def test_a_stdlib_subclass_extends_the_fields() -> None:
    @dataclasses.dataclass
    class Labeled(Point):
        label: str = "l"

    lp = Labeled(1, label="here")
    assert (lp.x, lp.label) == (1, "here")
    assert [f.name for f in dataclasses.fields(lp)] == ["x", "y", "tags", "note", "label"]
    assert [f.name for f in ldc.fields(lp)] == ["x", "y", "tags", "note", "label"]
    assert str(inspect.signature(Labeled)).endswith("label: 'str' = 'l') -> None")


def test_signature_and_doc_match_the_stdlib_form() -> None:
    @ldc.dataclass
    class Undocumented:
        a: int
        b: list[int] = ldc.field(default_factory=list)

    text = "(a: 'int', b: 'list[int]' = <factory>) -> None"
    assert str(inspect.signature(Undocumented)) == text
    assert Undocumented.__doc__ == "Undocumented(a, b)"
    assert str(inspect.signature(Point)).startswith("(x: 'int', y: 'int' = 0")

    class Plain(Point):
        pass

    assert str(inspect.signature(Plain)) == str(inspect.signature(Point))


def test_copy_and_pickle_round_trip() -> None:
    s = Shape("s", [Point(1, tags={"k": "v"})])
    assert copy.deepcopy(s) == s and copy.deepcopy(s).points[0] is not s.points[0]
    assert pickle.loads(pickle.dumps(s)) == s


def test_declaration_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"Bad\.items: a mutable default list"):

        @ldc.dataclass
        class Bad:
            items: list[int] = []

    with pytest.raises(TypeError, match="field 'b' without a default follows field 'a'"):

        @ldc.dataclass
        class Order:
            a: int = 1
            b: int  # type: ignore[misc]

    with pytest.raises(ValueError, match="not both"):
        ldc.field(default=1, default_factory=int)  # type: ignore[call-overload]


def test_own_fields_and_asdict_read_stdlib_dataclasses_too() -> None:
    @dataclasses.dataclass
    class Std:
        a: int
        b: list[int] = dataclasses.field(default_factory=list)

    assert [(f.name, f.default, f.default_factory) for f in ldc.fields(Std)] == [
        ("a", ldc.MISSING, ldc.MISSING),
        ("b", ldc.MISSING, list),
    ]
    value = Shape("s", [Point(1)])
    nested = {"std": Std(1), "pair": Pair(value, 2), "dd": collections.defaultdict(list)}
    holder = Shape("h", [Point(0, tags=nested)])  # type: ignore[arg-type]
    out = ldc.asdict(holder)
    tags = out["points"][0]["tags"]
    assert tags["std"] == {"a": 1, "b": []}
    assert isinstance(tags["pair"], Pair) and tags["pair"].left["name"] == "s"
    assert isinstance(tags["dd"], collections.defaultdict)
    assert ldc.asdict(value) == dataclasses.asdict(value)
    assert ldc.is_dataclass(Std) and ldc.is_dataclass(value) and not ldc.is_dataclass(1)
    with pytest.raises(TypeError, match="not a dataclass"):
        ldc.fields(int)
    with pytest.raises(TypeError, match="dataclass instance"):
        ldc.asdict(Point)


def test_declaring_and_using_imports_neither_dataclasses_nor_inspect() -> None:
    code = (
        "import sys, json\n"
        "from torchx.util.startup.lazy_dataclass import dataclass, field, fields, asdict\n"
        "@dataclass\n"
        "class A:\n"
        "    x: int\n"
        "    y: list = field(default_factory=list)\n"
        "a = A(1)\n"
        "out = (repr(a), a == A(1), asdict(a), [f.name for f in fields(A)])\n"
        "print(json.dumps(['dataclasses' in sys.modules, 'inspect' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == [False, False]


@ldc.dataclass(frozen=True)
class Frozen:
    a: int
    b: list[int] = ldc.field(default_factory=list)
    c: str = "c"
    hidden: dict[str, int] = ldc.field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "c", self.c.upper())


@pytest.mark.parametrize(
    ("cls", "args", "kwargs"),
    [
        (Point, (1,), {}),
        (Point, (1, 2, {"k": "v"}), {"note": "n"}),
        (Point, (), {"x": 3, "tags": {}}),
        (Frozen, (1,), {}),
        (Frozen, (1, [2]), {"c": "x"}),
    ],
)
def test_first_instances_bind_without_compiling_and_equal_compiled_ones(
    cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """A class's first instances are made by a generic __init__ (compiling one per class
    costs a command more than it saves); they must be exactly what the compiled one makes."""

    @ldc.dataclass
    class Fresh:  # a class no test has instantiated yet
        x: int
        y: int = 0

    assert Fresh.__init__.__torchx_placeholder__  # type: ignore[attr-defined]
    assert Fresh(1).y == 0
    assert getattr(Fresh.__init__, "__torchx_placeholder__", False), "compiled too early"

    generic = cls(*args, **kwargs)
    compiled_init = ldc._compiled_init(cls)
    compiled = cls.__new__(cls)
    compiled_init(compiled, *args, **kwargs)
    assert vars(generic) == vars(compiled)
    assert generic == compiled


def test_arguments_that_do_not_bind_get_pythons_own_errors() -> None:
    @ldc.dataclass
    class Strict:
        x: int
        y: int = 0

    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Strict()
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Strict(1, z=2)
    with pytest.raises(TypeError, match="takes from 2 to 3 positional arguments"):
        Strict(1, 2, 3)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        Strict(1, x=2)


def test_a_class_compiles_its_init_after_many_instances() -> None:
    @ldc.dataclass
    class Many:
        x: int

    items = [Many(i) for i in range(ldc._GENERIC_INITS + 1)]
    assert [m.x for m in items] == list(range(ldc._GENERIC_INITS + 1))
    assert not getattr(Many.__init__, "__torchx_placeholder__", False)


class _Custom:
    """Not ours: copied by the copy module."""

    def __init__(self) -> None:
        self.items = [1, 2]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Custom) and other.items == self.items


def test_deep_copy_is_copy_deepcopy_for_the_data_model() -> None:
    """The runner copies every app it submits; without importing copy, the copy must be
    what copy.deepcopy makes: equal, independent, shared references kept shared."""
    import torchx.specs as specs

    shared_env = {"A": "1"}
    role = specs.Role(
        name="r",
        image="img",
        args=["a", "b"],
        env=shared_env,
        resource=specs.Resource(cpu=1, gpu=0, memMB=64, devices={"x": 1}),
        mounts=[specs.BindMount(src_path="/a", dst_path="/b")],
        metadata={"custom": _Custom(), "pair": (1, [2]), "same": ("x", 1)},
        retry_policy=specs.RetryPolicy.REPLICA,
    )
    other = specs.Role(name="o", image="img", env=shared_env)
    app = specs.AppDef(name="app", roles=[role, other], metadata={"k": "v"})
    memo = {id(role.overrides): role.overrides}
    ours = ldc.deep_copy(app, dict(memo))
    theirs = copy.deepcopy(app, dict(memo))
    assert ours == theirs == app
    assert ours.roles[0].env is ours.roles[1].env  # shared stays shared
    assert ours.roles[0].env is not shared_env
    assert ours.roles[0].overrides is role.overrides  # the memo is honoured
    assert ours.roles[0].retry_policy is specs.RetryPolicy.REPLICA
    assert ours.roles[0].metadata["same"] is role.metadata["same"]  # as copy: atomic tuple
    assert ours.roles[0].metadata["pair"] is not role.metadata["pair"]
    custom = ours.roles[0].metadata["custom"]
    assert isinstance(custom, _Custom) and custom is not role.metadata["custom"]
    assert custom.items == [1, 2] and custom.items is not role.metadata["custom"].items
    ours.roles[0].args.append("c")
    assert role.args == ["a", "b"]


def test_deep_copy_keeps_cycles_and_shallow_copy_shares() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    copied = ldc.deep_copy(loop)
    assert copied[1] is copied and copied is not loop
    point = Point(1, tags={"a": "b"})
    clone = ldc.shallow_copy(point)
    assert clone == point and clone is not point and clone.tags is point.tags
