"""Overlays: operator keys, merge rules, storage in metadata, files, validation."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from torchx.specs import AppDef, Role
from torchx.specs.overlays import (
    DEL,
    JOIN,
    PUT,
    OverlaySpec,
    apply_overlay,
    get_overlay,
    set_overlay,
    validate_overlay,
)


def test_operator_key_encoding() -> None:
    assert PUT("containers") == "__put__:containers"
    assert JOIN("containers", on="name") == "__join__:containers:name"
    assert DEL("x") == "__del__:x"


def test_apply_overlay_merge_rules() -> None:
    base: dict[str, Any] = {
        "spec": {"a": 1, "nested": {"keep": True}},
        "items": [1, 2],
        "replace_me": [1, 2],
        "scalar": 1,
        "null": None,
    }
    overlay: dict[str, Any] = {
        "spec": {"b": 2, "nested": {"added": "x"}},
        "items": [3],
        "replace_me": (9,),
        "scalar": "now a string",
        "new": ({"t": 1},),
        "null": {"filled": 1},
    }
    apply_overlay(base, overlay)
    assert base == {
        "spec": {"a": 1, "b": 2, "nested": {"keep": True, "added": "x"}},
        "items": [1, 2, 3],
        "replace_me": [9],
        "scalar": "now a string",
        "new": [{"t": 1}],
        "null": {"filled": 1},
    }
    # inserted values are copies
    overlay["spec"]["nested"]["added"] = "changed"
    assert base["spec"]["nested"]["added"] == "x"


@pytest.mark.parametrize(
    ("base", "overlay"),
    [
        ({"a": {"x": 1}}, {"a": 1}),
        ({"a": [1]}, {"a": {"x": 1}}),
        ({"a": 1}, {"a": [1]}),
        ({"a": "s"}, {"a": {"x": 1}}),
    ],
)
def test_apply_overlay_type_mismatch(base: dict[str, Any], overlay: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match="type mismatch for attr: 'a'"):
        apply_overlay(base, overlay)


def test_put_join_del() -> None:
    base: dict[str, Any] = {
        "spec": {
            "containers": [
                {"name": "main", "image": "a", "env": [{"name": "X"}]},
                {"name": "side", "image": "b"},
            ],
            "tolerations": [{"key": "old"}],
            "gone": 1,
            "null_me": 1,
        }
    }
    apply_overlay(
        base,
        {
            "spec": {
                JOIN("containers", on="name"): [
                    {"name": "main", "image": "c", "stdin": True},
                    {"name": "new", "image": "d"},
                ],
                PUT("tolerations"): [{"key": "new"}],
                DEL("gone"): None,
                DEL("absent"): None,
                "null_me": None,
                JOIN("volumes", on="name"): [{"name": "v"}],
            }
        },
    )
    assert base == {
        "spec": {
            "containers": [
                {"name": "main", "image": "c", "env": [{"name": "X"}], "stdin": True},
                {"name": "side", "image": "b"},
                {"name": "new", "image": "d"},
            ],
            "tolerations": [{"key": "new"}],
            "null_me": None,
            "volumes": [{"name": "v"}],
        }
    }


def test_join_errors() -> None:
    with pytest.raises(TypeError, match="list of dicts"):
        apply_overlay({"l": [{"n": 1}]}, {JOIN("l", on="n"): [1]})
    with pytest.raises(TypeError, match="base value"):
        apply_overlay({"l": [1]}, {JOIN("l", on="n"): [{"n": 1}]})
    with pytest.raises(ValueError, match="malformed JOIN key"):
        apply_overlay({}, {"__join__:nokey": []})


def test_set_overlay_storage_format_and_accumulation() -> None:
    role = Role("r", "i")
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {PUT("containers"): [{"name": "a"}]}})
    set_overlay(role, "kubernetes", "V1Pod", {DEL("x"): None, JOIN("l", on="name"): [{"name": 1}]})
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {"nodeSelector": {"a": "1"}}})
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {"nodeSelector": {"b": "2"}}})
    assert role.metadata == {
        "kubernetes": {
            "__torchx_overlays__": True,
            "V1Pod": {
                "spec": {
                    "__put__:containers": [{"name": "a"}],
                    "nodeSelector": {"a": "1", "b": "2"},
                },
                "__del__:x": None,
                "__join__:l:name": [{"name": 1}],
            },
        }
    }


def test_set_overlay_latest_operation_on_a_field_wins() -> None:
    role = Role("r", "i")
    set_overlay(role, "ns", "K", {"f": [1]})
    set_overlay(role, "ns", "K", {PUT("f"): [2]})
    set_overlay(role, "ns", "K", {"f": [3]})
    set_overlay(role, "ns", "K", {PUT("f"): [4]})
    stored = get_overlay(role, "ns", "K")
    assert stored == {"__put__:f": [4]}
    base = {"f": [0]}
    apply_overlay(base, stored)
    assert base == {"f": [4]}
    set_overlay(role, "ns", "K", {"f": [5]})
    base = {"f": [0]}
    apply_overlay(base, get_overlay(role, "ns", "K"))
    assert base == {"f": [4, 5]}


def test_set_overlay_replaces_non_dict_namespace_and_rejects_marker_kind() -> None:
    app = AppDef("a", metadata={"ns": "a string"})
    with pytest.warns(UserWarning, match="replacing it"):
        set_overlay(app, "ns", "K", {"x": 1})
    assert get_overlay(app, "ns", "K") == {"x": 1}
    with pytest.raises(ValueError, match="reserved"):
        set_overlay(app, "ns", "__torchx_overlays__", {})


def test_get_overlay_missing_and_other_kinds() -> None:
    role = Role("r", "i")
    assert get_overlay(role, "kubernetes", "V1Pod") == {}
    set_overlay(role, "kubernetes", "V1Pod", {"a": 1})
    assert get_overlay(role, "kubernetes", "V1Job") == {}


def test_get_overlay_legacy_flat_formats() -> None:
    single = Role("r", "i", metadata={"kubernetes": {"spec": {"hostNetwork": True}}})
    with pytest.warns(UserWarning, match="flat overlay"):
        assert get_overlay(single, "kubernetes", "V1Pod") == {"spec": {"hostNetwork": True}}
    assert get_overlay(single, "kubernetes", "V1Pod", flat_fallback=False) == {}
    # several dict values look like {kind: overlay}: silently not applied to another kind
    nested = Role("r", "i", metadata={"kubernetes": {"spec": {}, "metadata": {"x": 1}}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert get_overlay(nested, "kubernetes", "V1Pod") == {}
    by_kind = Role("r", "i", metadata={"kubernetes": {"V1Pod": {"a": 1}}})
    assert get_overlay(by_kind, "kubernetes", "V1Pod") == {"a": 1}


def test_get_overlay_from_json_and_yaml_files(tmp_path: Path) -> None:
    json_file = tmp_path / "o.json"
    json_file.write_text(json.dumps({"__torchx_overlays__": True, "V1Pod": {"a": 1}}))
    yaml_file = tmp_path / "o.yaml"
    yaml_file.write_text("V1Pod:\n  spec:\n    tolerations: !!python/tuple\n      - key: k\n")
    role = Role("r", "i", metadata={"kubernetes": str(json_file)})
    assert get_overlay(role, "kubernetes", "V1Pod") == {"a": 1}
    role.metadata["kubernetes"] = f"file://{yaml_file}"
    overlay = get_overlay(role, "kubernetes", "V1Pod")
    assert overlay == {"spec": {"tolerations": ({"key": "k"},)}}
    base: dict[str, Any] = {"spec": {"tolerations": [{"key": "old"}]}}
    apply_overlay(base, overlay)
    assert base == {"spec": {"tolerations": [{"key": "k"}]}}
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a\n- b\n")
    role.metadata["kubernetes"] = str(bad)
    with pytest.raises(ValueError, match="must hold a mapping"):
        get_overlay(role, "kubernetes", "V1Pod")
    unsafe = tmp_path / "unsafe.yaml"
    unsafe.write_text("V1Pod: !!python/object/apply:os.system ['echo hi']\n")
    role.metadata["kubernetes"] = str(unsafe)
    import yaml

    with pytest.raises(yaml.YAMLError):
        get_overlay(role, "kubernetes", "V1Pod")


def test_get_overlay_from_remote_uri_uses_fsspec() -> None:
    import fsspec

    with fsspec.open("memory://torchx-test/overlay.json", "w") as f:
        f.write(json.dumps({"V1Pod": {"remote": True}}))
    role = Role("r", "i", metadata={"kubernetes": "memory://torchx-test/overlay.json"})
    assert get_overlay(role, "kubernetes", "V1Pod") == {"remote": True}


def test_validate_overlay() -> None:
    validate_overlay({"spec": {}}, blocklist=["image"], forbidden_keys=["containers"])
    with pytest.raises(ValueError, match=r"'image'.*Role/AppDef attribute"):
        validate_overlay({PUT("image"): "x"}, blocklist=["image"])
    with pytest.raises(ValueError, match="pod overlay must not contain 'containers'; use V1Pod"):
        validate_overlay(
            {"containers": []},
            forbidden_keys={"containers"},
            overlay_name="pod overlay",
            suggestion="use V1Pod",
        )


def test_overlay_spec() -> None:
    spec = OverlaySpec("kubernetes", "V1Pod", blocklist=("image",))
    role = Role("r", "i")
    spec.set(role, {"spec": {"hostNetwork": True}})
    assert spec.get(role) == {"spec": {"hostNetwork": True}}
    with pytest.raises(ValueError, match="image"):
        spec.set(role, {"image": "x"})
    role.metadata["kubernetes"]["V1Pod"]["image"] = "sneaky"
    with pytest.raises(ValueError, match="image"):
        spec.get(role)
    flat = Role("r", "i", metadata={"kubernetes": {"spec": {"x": 1}}})
    assert spec.get(flat) == {}


BILLION_LAUGHS = "\n".join(
    ["V1Pod:", "  spec:", "    lol0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"    lol{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
)


@pytest.mark.timeout(10)
def test_yaml_alias_bomb_is_refused(tmp_path: Path) -> None:
    """A few hundred bytes that expand to 9**10 nodes once anything walks them."""
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BILLION_LAUGHS)
    role = Role("r", "i", metadata={"kubernetes": str(bomb)})
    with pytest.raises(ValueError, match=r"expands to more than 1,000,000 YAML nodes"):
        get_overlay(role, "kubernetes", "V1Pod")
    fine = tmp_path / "anchors.yaml"  # a few aliases, as people write them, still load
    fine.write_text("V1Pod:\n  a: &x {k: v}\n  b: *x\n")
    role.metadata["kubernetes"] = str(fine)
    assert get_overlay(role, "kubernetes", "V1Pod") == {"a": {"k": "v"}, "b": {"k": "v"}}


def test_yaml_recursive_alias_is_counted_once() -> None:
    from torchx.util.support.safe_yaml import load_yaml

    assert load_yaml("a: &x [1, *x]", "doc") is not None
