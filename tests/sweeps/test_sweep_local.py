"""Sweeps on local_cwd, through the CLI and the Python API: one app whose elements run K
at a time, their status, their labelled logs, a retry of the failed ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from torchx_testsupport import one_error_line
from torchx_testsupport.sweep import (
    ARRAY_2X2,
    COMPONENT,
    most_at_once,
    names_a_failed_element,
    train,
)

from torchx.runner import get_runner
from torchx.specs import AppState, app_array

TORCHX = str(Path(sys.executable).parent / "torchx")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _torchx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TORCHX, *args], cwd=cwd, env={**os.environ, "LOGLEVEL": "WARNING"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _sweep(*extra: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _torchx(
        "run", "-s", "local_cwd", "--sweep", "lr=0.1,0.2", "--sweep", "batch=8,16",
        *extra, COMPONENT, "--fail_batch", "16", cwd=cwd,
    )  # fmt: skip


def _status(handle: str, cwd: Path) -> dict[str, object]:
    out = _torchx("status", "--json", handle, cwd=cwd)
    assert out.returncode == 0, out.stderr
    data: dict[str, object] = json.loads(out.stdout)
    return data


def test_a_2x2_sweep_is_one_app_with_each_element_labelled(home: Path) -> None:
    run = _sweep(cwd=home)
    assert run.returncode == 1, run.stderr  # two elements failed
    handle = run.stdout.splitlines()[0]
    for i, (lr, batch) in enumerate([("0.1", 8), ("0.1", 16), ("0.2", 8), ("0.2", 16)]):
        assert f"train/{i} lr={lr} batch={batch} index={i} size=4\n" in run.stderr
    status = _status(handle, home)
    assert status["state"] == "FAILED"
    assert status["array"] == ARRAY_2X2
    failure = status["failure"]
    assert isinstance(failure, dict)
    assert names_a_failed_element(failure["replica_id"], failure["message"])
    text = _torchx("status", handle, cwd=home).stdout
    assert "    Sweep: 4 elements: 2 succeeded, 2 failed (1, 3)\n" in text
    listed = json.loads(_torchx("list", "-s", "local_cwd", "--json", cwd=home).stdout)
    assert [a["app_handle"] for a in listed] == [handle]  # one row
    one = _torchx("log", f"{handle}/train/2", cwd=home)
    assert one.stdout == "train/2 lr=0.2 batch=8 index=2 size=4\n", one


def test_retry_failed_submits_only_the_failed_elements_with_their_indices(home: Path) -> None:
    first = _sweep(cwd=home)
    handle = first.stdout.splitlines()[0]
    retry = _torchx("run", "--retry-failed", handle, cwd=home)
    assert retry.returncode == 1, retry.stderr  # they fail again: batch 16 always does
    new = retry.stdout.splitlines()[0]
    assert new != handle
    assert "train/1 lr=0.1 batch=16 index=1 size=4\n" in retry.stderr
    assert "train/3 lr=0.2 batch=16 index=3 size=4\n" in retry.stderr
    array = _status(new, home)["array"]
    assert array == {
        "size": 4,
        "states": {"FAILED": 2},
        "failed": [1, 3],
        "elements": [
            {"index": 1, "args": {"lr": "0.1", "batch": "16"}, "state": "FAILED", "progress": None},
            {"index": 3, "args": {"lr": "0.2", "batch": "16"}, "state": "FAILED", "progress": None},
        ],
    }
    assert "Sweep: 2 elements of 4: 2 failed (1, 3)" in _torchx("status", new, cwd=home).stdout
    element = _torchx("log", f"{new}/train/3", cwd=home)  # asked for by its index
    assert element.stdout == "train/3 lr=0.2 batch=16 index=3 size=4\n", element
    again = _torchx("run", "--retry-failed", new, cwd=home)  # a retry of the retry
    assert again.returncode == 1 and "index=3 size=4" in again.stderr


def test_max_parallel_runs_k_elements_at_a_time(home: Path) -> None:
    record = home / "record.txt"
    one = _torchx(
        "run", "-s", "local_cwd", "--sweep", "lr=0.1,0.2,0.3", "--max-parallel", "1",
        COMPONENT, "--record", str(record), "--hold", "1", cwd=home,
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    assert most_at_once(record.read_text()) == 1
    record.unlink()
    two = _torchx(
        "run", "-s", "local_cwd", "--sweep", "lr=0.1,0.2,0.3,0.4", "--max-parallel", "2",
        COMPONENT, "--record", str(record), "--hold", "2", cwd=home,
    )  # fmt: skip
    assert two.returncode == 0, two.stderr
    assert most_at_once(record.read_text()) == 2


def test_a_value_that_does_not_parse_is_one_line_and_nothing_runs(home: Path) -> None:
    bad = _torchx(
        "run", "-s", "local_cwd", "--sweep", "lr=0.1,fast", COMPONENT, cwd=home
    )  # fmt: skip
    assert bad.returncode != 0
    [line] = bad.stderr.splitlines()
    assert "--sweep lr=fast" in line and "float" in line, line
    unknown = _torchx("run", "-s", "local_cwd", "--sweep", "lr_rate=1", COMPONENT, cwd=home)
    [line] = unknown.stderr.splitlines()
    assert "lr_rate" in line and "lr" in line, line
    twice = _torchx("run", "--sweep", "lr=1", COMPONENT, "--lr", "2", cwd=home)
    [line] = twice.stderr.splitlines()
    assert "both given and swept" in line, line
    assert json.loads(_torchx("list", "-s", "local_cwd", "--json", cwd=home).stdout) == []


def test_dryrun_shows_one_request(home: Path) -> None:
    dry = _torchx("run", "--dryrun", "--sweep", "lr=0.1,0.2,0.3", COMPONENT, cwd=home)
    assert dry.returncode == 0, dry.stderr
    [_, request] = dry.stdout.split("=== SCHEDULER REQUEST ===")
    assert request.count("lr=0.") == 3  # every element in the one request
    assert json.loads(_torchx("list", "-s", "local_cwd", "--json", cwd=home).stdout) == []


def test_the_python_api_runs_a_sweep_and_a_list_of_apps(home: Path) -> None:
    with get_runner() as runner:
        handle = runner.run_sweep(
            COMPONENT, {"fail_batch": 16}, {"batch": [8, 16]}, "local_cwd", max_parallel=1
        )
        status = runner.wait(handle, wait_interval=0.2)
        assert status is not None and status.state == AppState.FAILED
        assert status.array is not None and status.array.failed() == [1]
        apps = [train(lr=lr, fail_batch=8) for lr in (0.1, 0.2, 0.3)]
        apps_handle = runner.run(
            app_array(apps, values=[{"n": str(n)} for n in range(3)]), "local_cwd"
        )
        done = runner.wait(apps_handle, wait_interval=0.2)
        assert done is not None and done.array is not None
        assert done.array.states() == {"FAILED": 3}
        retried = runner.retry_failed(apps_handle, apps=apps)
        again = runner.wait(retried, wait_interval=0.2)
        assert again is not None and again.array is not None
        assert [e.index for e in again.array.elements] == [0, 1, 2]
        with pytest.raises(ValueError, match="pass the apps again"):
            runner.retry_failed(apps_handle)


def test_stdin_json_takes_a_sweep(home: Path) -> None:
    """``torchx run --stdin``: the same sweep as the flags, from ``sweep`` and
    ``max_parallel`` keys."""
    request = {
        "component_name": COMPONENT,
        "scheduler": "local_cwd",
        "scheduler_args": {},
        "component_args_str": ["--fail_batch", "16"],
        "sweep": {"batch": ["8", "16"]},
        "max_parallel": 1,
    }
    run = subprocess.run(
        [TORCHX, "run", "--stdin"], input=json.dumps(request), cwd=home,
        env={**os.environ, "LOGLEVEL": "WARNING"}, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    array = _status(run.stdout.splitlines()[0], home)["array"]
    assert isinstance(array, dict) and array["failed"] == [1] and array["size"] == 2


def test_flags_given_wrong_are_one_line_each(home: Path) -> None:
    cases = [
        (["run", "--max-parallel", "2", COMPONENT], "give --sweep ARG=V1,V2 too"),
        (["run", "--sweep", "lr=0.1", "--max-parallel", "0", COMPONENT], "at least 1"),
        (["run", "--sweep", "lr", COMPONENT], "write it ARG=V1,V2"),
        (["run", "--sweep", "lr=0.1,", COMPONENT], "an empty value"),
        (["run", "--sweep", "lr=1", "--sweep", "lr=2", COMPONENT], "given twice"),
        (["run", "--retry-failed", "local_cwd://torchx/x", COMPONENT], "cannot be combined"),
        (["run", "--retry-failed", "local_cwd://torchx/nothing-here"], "no app"),
    ]
    for args, words in cases:
        out = _torchx(*args, cwd=home)
        assert out.returncode != 0, args
        [line] = out.stderr.splitlines()
        assert line.startswith("torchx: error: ") and words in line, (args, line)
    single = _torchx("run", "-s", "local_cwd", "utils.echo", "--msg", "hi", cwd=home)
    handle = single.stdout.splitlines()[0]
    not_a_sweep = _torchx("run", "--retry-failed", handle, cwd=home)
    [line] = not_a_sweep.stderr.splitlines()
    assert "is not a sweep" in line, line
    listed = json.loads(_torchx("list", "-s", "local_cwd", "--json", cwd=home).stdout)
    assert [a["app_handle"] for a in listed] == [handle]  # the bad lines submitted nothing


def test_a_scheduler_without_arrays_refuses_a_sweep_in_one_line(home: Path) -> None:
    """A plugin scheduler that does not say it renders arrays gets no sweep: one line, not
    a single job made of the first element."""
    from torchx.runner import Runner
    from torchx.schedulers.local_scheduler import CWDImageProvider, LocalScheduler

    class NoArrays(LocalScheduler):
        supports_arrays = False

    def factory(session_name: str, **kwargs: object) -> NoArrays:
        return NoArrays(session_name=session_name, image_provider_class=CWDImageProvider)

    with Runner("torchx", {"plain": factory}) as runner:
        try:
            runner.run_sweep(COMPONENT, {}, {"lr": ["0.1", "0.2"]}, "plain")
        except ValueError as e:
            assert "cannot run a sweep as one submission" in str(e) and "\n" not in str(e)
        else:
            raise AssertionError("a sweep reached a scheduler that cannot run one")


def test_a_typed_list_argument_is_swept_word_by_word_and_decoded(home: Path) -> None:
    (home / "nums.py").write_text(
        "import torchx.specs as specs\n\n\n"
        "def total(nums: list[int]) -> specs.AppDef:\n"
        '    """Adds numbers.\n\n    Args:\n        nums: the numbers\n    """\n'
        "    role = specs.Role('add', '/', entrypoint='echo', args=[str(sum(nums)),"
        " type(nums[0]).__name__])\n"
        "    return specs.AppDef('total', [role])\n"
    )
    run = _torchx("run", "-s", "local_cwd", "--sweep", "nums=1 2,3 4 5", "nums.py:total", cwd=home)
    assert run.returncode == 0, run.stderr
    assert sorted(line for line in run.stderr.splitlines() if line.startswith("add/")) == [
        "add/0 3 int",
        "add/1 12 int",
    ]


def test_an_argument_both_given_and_swept_is_a_usage_error(home: Path) -> None:
    (home / "t.py").write_text("print(1)\n")
    for extra in (["--script", "t.py", "--", "--lr", "1"], ["--script", "t.py"]):
        swept = "script_args=--lr 0.1,--lr 0.01" if "--" in extra else "script=a.py,b.py"
        run = _torchx("run", "-s", "local_cwd", "--sweep", swept, "dist.ddp", *extra, cwd=home)
        assert run.returncode == 2, run.stderr
        assert "is both given and swept" in one_error_line(run)


def test_a_big_sweep_stays_short_in_status_and_dryrun(home: Path) -> None:
    values = ",".join(str(i) for i in range(1000))
    dry = _torchx(
        "run", "--dryrun", "-s", "local_cwd", "--sweep", f"msg={values}", "utils.echo", cwd=home
    )
    assert dry.returncode == 0, dry.stderr
    assert len(dry.stdout.splitlines()) < 250, len(dry.stdout.splitlines())
    assert "# 999 more elements, as the first with these values:\n#   [1] msg=1\n" in dry.stdout
    assert "#   ... and 979 more\n" in dry.stdout
    assert "more lines of the sweep's request (`torchx run --dryrun --json` prints it whole)" in (
        dry.stdout
    )
    run = _torchx(
        "run", "-s", "local_cwd", "--sweep", f"msg={values[:139]}", "utils.echo", cwd=home
    )
    assert run.returncode == 0, run.stderr
    text = _torchx("status", run.stdout.split()[0], cwd=home).stdout
    assert len(text.splitlines()) <= 30, text
    assert "  echo: 50 elements: 50 SUCCEEDED\n" in text, text
