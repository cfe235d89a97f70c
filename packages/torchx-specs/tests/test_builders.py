"""Component argument parsing (``torchx.specs.builders``), incl. the golden examples of
api-inventory Appendix A.9."""

# ruff: noqa: UP006, UP035, UP045  (legacy typing spellings are what users write)

from __future__ import annotations

from typing import Annotated, Any, Dict, List, Optional

import pytest

import torchx.specs as specs
from torchx.specs.builders import (
    ComponentArgs,
    ComponentArgumentError,
    component_args_from_str,
    make_app_handle,
    materialize_appdef,
    parse_args,
    parse_mounts,
)
from torchx.specs.component_parser import create_args_parser as _create_args_parser


def comp(
    *args: str,
    name: str,
    n: int = 1,
    f: float = 0.5,
    flag: bool = False,
    d: Optional[Dict[str, int]] = None,
    l: Optional[List[str]] = None,  # noqa: E741 - the golden example's name
    h: str = "x",
) -> specs.AppDef:
    """A component with every kind of parameter.

    Args:
        args: program arguments
        name: app name
        n: replicas
    """
    return specs.AppDef(
        name=name,
        roles=[specs.Role(name="r", image="img", entrypoint="echo", args=list(args))],
    )


A9_ARGS = ["--name", "foo", "--flag", "True", "--d", "a=1,b=2", "--l", "x,y", "-h", "H"]


def test_golden_component_args() -> None:
    args = component_args_from_str(comp, [*A9_ARGS, "--", "--a1", "b"])
    assert args == ComponentArgs(
        positional_args={},
        var_args=["--a1", "b"],
        kwargs={
            "name": "foo",
            "n": 1,
            "f": 0.5,
            "flag": True,
            "d": {"a": 1, "b": 2},
            "l": ["x", "y"],
            "h": "H",
        },
    )


def test_golden_usage_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    usage = _create_args_parser(comp).format_usage()
    assert usage == (
        "usage: torchx run <run args...> comp  [--help] --name str [-n int] [-f float]"
        " [--flag str] [-d str] [-l str] [-h str] ...\n"
    )


def test_help_shows_required_and_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    text = _create_args_parser(comp).format_help()
    assert "A component with every kind of parameter." in text
    assert "app name (required)" in text
    assert "replicas (default: 1)" in text
    assert "flag (default: False)" in text


def test_golden_string_defaults_are_converted() -> None:
    args = component_args_from_str(comp, ["--name", "foo"], {"n": "5"})
    assert args.kwargs["n"] == 5


def test_precedence_cli_over_config_over_defaults_over_function() -> None:
    args = component_args_from_str(
        comp,
        ["--name", "cli", "--n", "7"],
        {"n": "5", "f": "2.5", "h": "from-defaults"},
        config={"name": "cfg", "n": 9, "h": "from-config"},
    )
    assert args.kwargs["name"] == "cli"  # explicit CLI wins over config
    assert args.kwargs["n"] == 7
    assert args.kwargs["h"] == "from-config"  # config wins over .torchxconfig defaults
    assert args.kwargs["f"] == 2.5  # .torchxconfig default wins over the function default
    assert args.kwargs["flag"] is False  # function default


def test_config_satisfies_required_parameters() -> None:
    args = component_args_from_str(comp, [], config={"name": "cfg", "l": ["a"]})
    assert args.kwargs["name"] == "cfg"
    assert args.kwargs["l"] == ["a"]


@pytest.mark.parametrize(
    ("word", "expected"),
    [("true", True), ("1", True), ("yes", True), ("False", False), ("0", False), ("no", False)],
)
def test_bool_values(word: str, expected: bool) -> None:
    assert component_args_from_str(comp, ["--name", "x", "--flag", word]).kwargs["flag"] is expected


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (["--n", "3"], r"component `comp`: the following arguments are required: --name"),
        (["--name", "x", "--n", "abc"], r"argument -n/--n: invalid int value: 'abc'"),
        (["--name", "x", "--flag", "maybe"], r"argument --flag: `maybe` is not a boolean.*yes"),
        (["--name", "x", "--d", "a=notint"], r"argument -d/--d: value `notint` is not a valid int"),
    ],
)
def test_bad_arguments_raise_naming_the_parameter(argv: list[str], pattern: str) -> None:
    with pytest.raises(ComponentArgumentError, match=pattern) as info:
        component_args_from_str(comp, argv)
    assert info.value.usage.startswith("usage: torchx run <run args...> comp")


def test_exit_on_error_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        component_args_from_str(comp, ["--name", "x", "--flag", "maybe"], exit_on_error=True)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: torchx run <run args...> comp")
    assert "`maybe` is not a boolean" in err


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse_args(comp, ["--help"])
    assert info.value.code == 0
    assert "app name (required)" in capsys.readouterr().out


def test_varargs_passthrough_and_configured_varargs() -> None:
    assert component_args_from_str(comp, ["--name", "x", "--", "-a", "--b"]).var_args == [
        "-a",
        "--b",
    ]
    configured = component_args_from_str(comp, ["--name", "x"], {"args": "-a 'b c'"})
    assert configured.var_args == ["-a", "b c"]
    explicit = component_args_from_str(comp, ["--name", "x", "--", "z"], {"args": "-a b"})
    assert explicit.var_args == ["z"]


def test_positional_parameters_are_passed_positionally() -> None:
    def positional(script: str, nnodes: int = 1, *args: str) -> specs.AppDef:
        return specs.AppDef(name=f"{script}-{nnodes}-{'_'.join(args)}")

    args = component_args_from_str(positional, ["--script", "s.py", "--nnodes", "2", "--", "x"])
    assert args.positional_args == {"script": "s.py", "nnodes": 2}
    assert args.var_args == ["x"]
    app = materialize_appdef(positional, ["--script", "s.py", "--nnodes", "2", "--", "x", "y"])
    assert app.name == "s.py-2-x_y"


def test_annotated_aliases() -> None:
    def hydra(
        config_name: Annotated[str, "-cn"] = "cfg",
        overrides: Annotated[Optional[List[str]], "-o", "not an alias"] = None,
    ) -> specs.AppDef:
        return specs.AppDef(name=config_name, metadata={"o": ",".join(overrides or [])})

    args = component_args_from_str(hydra, ["-cn", "mine", "-o", "a=1,b"])
    assert args.positional_args == {"config_name": "mine", "overrides": ["a=1", "b"]}
    assert (
        component_args_from_str(hydra, ["--config_name", "long"]).positional_args["config_name"]
        == "long"
    )


def test_string_annotations_are_resolved() -> None:
    namespace: dict[str, object] = {"specs": specs}
    exec(  # builds a component whose annotations are strings
        "from __future__ import annotations\n"
        "def late(n: int = 1, flag: bool = False) -> specs.AppDef:\n"
        "    return specs.AppDef(name=str(n) + str(flag))\n",
        namespace,
    )
    late = namespace["late"]
    assert callable(late)
    assert materialize_appdef(late, ["--n", "3", "--flag", "yes"]).name == "3True"


def test_materialize_appdef() -> None:
    app = materialize_appdef(comp, [*A9_ARGS, "--", "--a1", "b"])
    assert app.name == "foo"
    assert app.roles[0].args == ["--a1", "b"]


def test_materialize_rejects_non_appdef_results() -> None:
    def not_a_component(name: str) -> str:
        return name

    with pytest.raises(TypeError, match="returned str, expected AppDef"):
        materialize_appdef(not_a_component, ["--name", "x"])


def test_kwargs_parameters_are_rejected() -> None:
    def bad(name: str, **extra: str) -> specs.AppDef:
        return specs.AppDef(name=name)

    with pytest.raises(TypeError, match=r"\*\*extra"):
        component_args_from_str(bad, ["--name", "x"])


def test_parse_args_returns_raw_values() -> None:
    ns = parse_args(comp, ["--name", "x", "--flag", "yes"])
    assert ns.name == "x"
    assert ns.flag == "yes"
    assert ns.n == 1


def test_reexports() -> None:
    assert make_app_handle("local_cwd", "torchx", "app-1") == "local_cwd://torchx/app-1"
    (mount,) = parse_mounts(["type=bind", "src=/a", "dst=/b", "readonly"])
    assert mount == specs.BindMount(src_path="/a", dst_path="/b", read_only=True)


def test_leading_double_dash_ends_torchx_options_for_a_component_without_varargs() -> None:
    def trainer(name: str, script: str = "train.py") -> specs.AppDef:
        return specs.AppDef(name, [specs.Role("t", "img", entrypoint=script)])

    args = component_args_from_str(trainer, ["--", "--name", "test app", "--script", "a.py"])
    assert args.positional_args == {"name": "test app", "script": "a.py"}


def aliased(
    *script_args: str,
    config_name: Annotated[str, "-cn"],
    j: str = "1x1",
    retries: int = 0,
    ratio: float = 1.0,
) -> specs.AppDef:
    """Aliases, a one-letter option and program arguments."""
    return specs.AppDef(name=config_name)


PLAIN_COMPONENT_LINES = [
    (comp, ["--name", "foo"]),
    (comp, ["--name=foo", "-n", "3", "--f", "0.25", "--flag", "true"]),
    (comp, ["--name", "foo", "--d", "a=1", "--l", "x,y", "-h", "H", "prog", "--x", "-y"]),
    (aliased, ["-cn", "c"]),
    (aliased, ["--config_name", "c", "-j", "2x4", "--retries", "2", "train.py", "--lr"]),
]
OTHER_COMPONENT_LINES = [  # argparse parses them, or reports what is wrong
    (comp, ["--name", "foo", "--name", "bar"]),
    (comp, ["--nam", "foo"]),
    (comp, ["--name", "foo", "-n", "three"]),
    (comp, ["--name", "-x"]),
    (comp, ["--flag", "true"]),  # --name is required
    (comp, ["--name", "foo", "--", "--a1"]),
    (comp, ["--help"]),
    (aliased, ["-cn", "c", "--config_name", "d"]),
]


@pytest.mark.parametrize(
    ("fn", "args"),
    PLAIN_COMPONENT_LINES + OTHER_COMPONENT_LINES,
    ids=[" ".join(args) for _, args in PLAIN_COMPONENT_LINES + OTHER_COMPONENT_LINES],
)
def test_plain_component_arguments_read_as_argparse_would(fn: Any, args: list[str]) -> None:
    """Plain component arguments are read without argparse; what is read must be what
    argparse would have parsed, and anything else is left to argparse."""
    import argparse

    from torchx.specs import builders
    from torchx.specs.component_params import resolved_annotations
    from torchx.util.startup import fn_params

    params = fn_params.parameters(fn)
    plain = builders._parse_plain(resolved_annotations(fn), params, list(args), {}, {})
    if (fn, args) not in PLAIN_COMPONENT_LINES:
        assert plain is None
        return
    assert plain is not None
    namespace = argparse.Namespace(**{p.name: builders._UNSET for p in params})
    parsed = vars(_create_args_parser(fn).parse_args(args, namespace=namespace))
    given = {k: v for k, v in parsed.items() if v is not builders._UNSET and v != []}
    assert plain == given


def test_plain_component_arguments_build_the_same_app() -> None:
    args = component_args_from_str(comp, ["--name", "foo", "-n", "2", "--l", "a,b", "p", "q"])
    assert args.kwargs["n"] == 2 and args.kwargs["l"] == ["a", "b"]
    assert args.var_args == ["p", "q"]
    with pytest.raises(ComponentArgumentError, match="argument -n/--n: invalid int value"):
        component_args_from_str(comp, ["--name", "foo", "-n", "two"])
    with pytest.raises(ComponentArgumentError, match="required: --name"):
        component_args_from_str(comp, ["--flag", "yes"])


STRING_ANNOTATED_MODULE = """
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Annotated, Optional

import torchx.specs as specs


def comp(name: Annotated[str, "-nm"], n: int = 1, tag: Optional[str] = None) -> specs.AppDef:
    return specs.AppDef(name=f"{name}-{n}-{tag}")


def simple(name: str, n: int = 1) -> specs.AppDef:
    return specs.AppDef(name=f"{name}-{n}")
"""


def test_string_annotations_resolve_with_typing_names_imported_for_type_checking_only(
    tmp_path: Any,
) -> None:
    """A component module with ``from __future__ import annotations`` may import
    ``Annotated``/``Optional`` under ``TYPE_CHECKING`` only: the aliases still work."""
    import types

    from torchx.specs.component_params import resolved_annotations

    module = types.ModuleType("string_annotated_components")
    exec(compile(STRING_ANNOTATED_MODULE, "string_annotated_components.py", "exec"), vars(module))
    app = materialize_appdef(module.comp, ["-nm", "x", "--n", "2", "--tag", "t"])
    assert app.name == "x-2-t"
    assert resolved_annotations(module.simple) == {"name": str, "n": int}
    assert materialize_appdef(module.simple, ["--name", "y"]).name == "y-1"
