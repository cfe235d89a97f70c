"""``ReplicaMacros`` substitutes exactly as ``macros.Values.apply`` does."""

from torchx.specs import Role, macros
from torchx.specs.replica_macros import ReplicaMacros


def test_same_result_as_values_apply() -> None:
    role = Role(
        name="r",
        image="img",
        args=["--rank", macros.replica_id, "plain", "$${literal}", "${unknown}", macros.app_id],
        env={"A": f"{macros.app_id}-{macros.replica_id}", "B": "no macros", "C": "$$HOME"},
    )
    subst = ReplicaMacros(role.args, role.env)
    assert subst.per_replica
    for replica in ("0", "7"):
        values = macros.Values(img_root="/img", app_id="app-1", replica_id=replica)
        expected = values.apply(role)
        assert subst.apply(values.to_dict()) == (expected.args, expected.env)


def test_results_are_new_objects_and_replica_free_roles_say_so() -> None:
    subst = ReplicaMacros(["${app_id}", "x"], {"K": "v"})
    assert not subst.per_replica
    values = macros.Values(img_root="", app_id="a", replica_id="0").to_dict()
    first_args, first_env = subst.apply(values)
    first_args.append("changed")
    first_env["K"] = "changed"
    assert subst.apply(values) == (["a", "x"], {"K": "v"})
