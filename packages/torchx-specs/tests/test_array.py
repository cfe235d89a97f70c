"""The contract of sweeps (``torchx.specs.sweep``): apps of one shape as one array, the
order of a Cartesian product, an array's state from its elements', what status shows."""

from __future__ import annotations

import subprocess

import pytest

from torchx.specs import AppDef, AppState, Resource, Role, app_array
from torchx.specs.status import ArrayStatus, array_state
from torchx.specs.sweep import shell_dispatch, sweep_values


def _app(*args: str, image: str = "img", env: dict[str, str] | None = None) -> AppDef:
    role = Role("trainer", image=image, entrypoint="sh", args=list(args), env=env or {})
    return AppDef("train", roles=[role])


def test_the_product_varies_the_first_argument_slowest() -> None:
    assert sweep_values({"lr": ["0.1", "0.01"], "bs": ["8", "16"]}) == [
        {"lr": "0.1", "bs": "8"},
        {"lr": "0.1", "bs": "16"},
        {"lr": "0.01", "bs": "8"},
        {"lr": "0.01", "bs": "16"},
    ]


def test_elements_keep_their_args_and_the_env_they_add() -> None:
    apps = [_app("-c", f"echo {i}", env={"SHARED": "1", "OWN": str(i)}) for i in range(3)]
    array = app_array(apps, max_parallel=2, values=[{"i": str(i)} for i in range(3)])
    assert array.role.env == {"SHARED": "1"}
    assert [e.env for e in array.elements] == [{"OWN": "0"}, {"OWN": "1"}, {"OWN": "2"}]
    role = array.element_role(2)
    assert role.args == ["-c", "echo 2"]
    assert role.env == {
        "SHARED": "1",
        "OWN": "2",
        "TORCHX_ARRAY_INDEX": "2",
        "TORCHX_ARRAY_SIZE": "3",
    }
    assert array.max_parallel == 2 and array.size == 3 and array.values()[1] == {"i": "1"}


def test_a_retried_element_keeps_its_index_and_the_sweep_size() -> None:
    array = app_array([_app("a"), _app("b")], indices=[1, 3], size=4)
    assert array.array_env(1) == {"TORCHX_ARRAY_INDEX": "3", "TORCHX_ARRAY_SIZE": "4"}


@pytest.mark.parametrize(
    ("other", "words"),
    [
        (_app("x", image="other"), "differs from element 0 in its image"),
        (
            AppDef("t", [Role("trainer", "img", entrypoint="sh", resource=Resource(2, 0, 64))]),
            "in its resource",
        ),
        (AppDef("t", [Role("other", "img", entrypoint="sh")]), "runs role 'other'"),
        (AppDef("t", [Role("trainer", "img", entrypoint="sh", num_replicas=2)]), "2 replicas"),
    ],
)
def test_apps_of_another_shape_are_refused_in_one_line(other: AppDef, words: str) -> None:
    with pytest.raises(ValueError, match=words) as e:
        app_array([_app("x"), other])
    assert "\n" not in str(e.value)


def test_no_app_and_a_bad_max_parallel_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one element"):
        app_array([])
    with pytest.raises(ValueError, match="at least 1"):
        app_array([_app("x")], max_parallel=0)


def test_the_dispatch_script_runs_each_element_quoted(tmp_path: object) -> None:
    hostile = 'it\'s $(touch pwned) `x` "q"'
    array = app_array([_app("-c", 'echo "$0|$TORCHX_ARRAY_INDEX"', hostile), _app("-c", "exit 7")])
    script = shell_dispatch(array, "$POS")
    first = subprocess.run(
        ["sh", "-c", script], env={"POS": "0", "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=False, cwd=str(tmp_path),
    )  # fmt: skip
    assert (first.returncode, first.stdout) == (0, f"{hostile}|0\n")
    second = subprocess.run(["sh", "-c", script], env={"POS": "1"}, check=False)
    assert second.returncode == 7
    nowhere = subprocess.run(
        ["sh", "-c", script], env={"POS": "5"}, capture_output=True, text=True, check=False
    )
    assert nowhere.returncode == 2 and "no element at position 5" in nowhere.stderr


def test_the_array_state_follows_its_elements() -> None:
    S, F, R, P, C = (
        AppState.SUCCEEDED,
        AppState.FAILED,
        AppState.RUNNING,
        AppState.PENDING,
        AppState.CANCELLED,
    )
    assert array_state([S, S]) == S
    assert array_state([S, F]) == F
    assert array_state([F, R]) == R  # not every element has ended
    assert array_state([S, P]) == R  # some ended, the rest wait their turn
    assert array_state([P, P]) == P
    assert array_state([S, C]) == C


def test_status_shows_the_elements_in_json_and_one_line() -> None:
    status = ArrayStatus.of(
        [AppState.SUCCEEDED, AppState.FAILED, AppState.SUCCEEDED, AppState.FAILED],
        values=[{"lr": lr} for lr in ("0.1", "0.2", "0.3", "0.4")],
    )
    assert status.line() == "Sweep: 4 elements: 2 succeeded, 2 failed (1, 3)"
    assert status.to_json() == {
        "size": 4,
        "states": {"SUCCEEDED": 2, "FAILED": 2},
        "failed": [1, 3],
        "elements": [
            {"index": i, "args": {"lr": lr}, "state": state, "progress": None}
            for i, (lr, state) in enumerate(
                [("0.1", "SUCCEEDED"), ("0.2", "FAILED"), ("0.3", "SUCCEEDED"), ("0.4", "FAILED")]
            )
        ],
    }
    retried = ArrayStatus.of([AppState.RUNNING], indices=[3], size=4)
    assert retried.line() == "Sweep: 1 element of 4: 1 running"
    assert retried.position_of(3) == 0 and retried.position_of(1) is None
