"""Sweeps as a user runs them, on every backend (the ``backend`` fixture)."""

from __future__ import annotations

import json
import re

from torchx_testsupport.backends import Backend


def test_a_list_argument_is_swept_word_by_word(backend: Backend) -> None:
    """``--sweep "args=echo --lr 0.1,echo --lr 0.01"``: each value split as a shell
    splits it, so each element runs its own command line (not its characters)."""
    run = backend.run(
        "--wait", "--log", "--sweep", "args=echo --lr 0.1,echo --lr 0.01", "utils.sh",
        *backend.image_args,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.split()[0]
    logs = sorted(line[line.index("--lr") :] for line in run.stderr.splitlines() if "--lr" in line)
    assert logs == ["--lr 0.01", "--lr 0.1"], run.stderr
    status = json.loads(backend.torchx("status", "--json", handle).stdout)
    assert status["state"] == "SUCCEEDED"
    values = [e["args"] for e in status["array"]["elements"]]
    assert values == [{"args": "echo --lr 0.1"}, {"args": "echo --lr 0.01"}]


def test_a_sweeps_status_is_a_summary_and_its_progress_its_elements(backend: Backend) -> None:
    commands = ",".join("false" if i in (3, 7) else "true" for i in range(12))
    run = backend.run("--wait", "--sweep", f"args={commands}", "utils.sh", *backend.image_args)
    assert run.returncode != 0  # two elements failed
    handle = run.stdout.split()[0]
    text = backend.torchx("status", handle).stdout
    assert len(text.splitlines()) <= 30, text  # not a line per element
    assert "  sh: 12 elements: 10 SUCCEEDED, 2 FAILED (3, 7)\n" in text, text
    assert "    Progress: 12/12 elements done (0 running)\n" in text, text
    status = json.loads(backend.torchx("status", "--json", handle).stdout)
    assert status["progress"] is None  # not element 0's progress


def test_a_retried_sweep_numbers_its_elements_by_index_everywhere(backend: Backend) -> None:
    """A retry of elements 1 and 3 is two replicas, yet each is its element's index in the
    roles, the root cause, ``--json`` and ``torchx log HANDLE/ROLE/INDEX``, as in Msg."""
    commands = "true,sh -c 'echo element-1; exit 1',true,sh -c 'echo element-3; exit 1'"
    first = backend.run("--wait", "--sweep", f"args={commands}", "utils.sh", *backend.image_args)
    assert first.returncode != 0
    retry = backend.torchx("run", "--retry-failed", first.stdout.split()[0], "--wait")
    assert retry.returncode != 0, retry.stderr  # the same commands fail again
    handle = retry.stdout.split()[0]

    text = backend.torchx("status", handle).stdout
    assert "  sh: 2 elements: 2 FAILED (1, 3)\n" in text, text
    root = re.search(r"Root cause: sh\[(\d)\]: .*\n\s+sweep element (\d) ", text)
    assert root is not None and root[1] == root[2] and root[1] in "13", text
    status = json.loads(backend.torchx("status", "--json", handle).stdout)
    assert [r["id"] for r in status["roles"][0]["replicas"]] == [1, 3]
    assert status["failure"]["replica_id"] == int(root[1])

    def lines(*args: str) -> list[tuple[str, str]]:  # (prefix, text): Kubernetes adds times
        out = backend.torchx("log", *args).stdout.splitlines()
        return sorted((line.split()[0], line.split()[-1]) for line in out)

    assert lines(f"{handle}/sh/3") == [("sh/3", "element-3")]
    assert lines(handle) == [("sh/1", "element-1"), ("sh/3", "element-3")]
    element = backend.torchx("status", f"{handle}/sh/3").stdout
    assert element.startswith("sh[3]: FAILED\n"), element
    assert "    Sweep element 3 of 4: args=sh -c 'echo element-3; exit 1'\n" in element, element
    one = json.loads(backend.torchx("status", "--json", f"{handle}/sh/1").stdout)
    assert (one["replica_id"], one["state"], one["element"]["index"]) == (1, "FAILED", 1), one
    missing = backend.torchx("log", f"{handle}/sh/0")
    assert missing.returncode == 1
    assert missing.stderr.strip().endswith("this sweep has no element 0; its elements: 1, 3")


def test_each_element_of_a_sweep_carries_its_own_progress_in_json(backend: Backend) -> None:
    report = "echo 'TORCHX_PROGRESS {\"step\": %d}'"
    commands = f"{report % 3},{report % 5},true"
    run = backend.run("--wait", "--sweep", f"args={commands}", "utils.sh", *backend.image_args)
    assert run.returncode == 0, run.stderr
    status = json.loads(backend.torchx("status", "--json", run.stdout.split()[0]).stdout)
    progress = [e["progress"] for e in status["array"]["elements"]]
    assert [p and (p["step"], p["replica_id"]) for p in progress] == [(3, 0), (5, 1), None]
    assert status["progress"] is None  # the sweep's own: its elements counted, not element 0
