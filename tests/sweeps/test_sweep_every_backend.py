"""Sweeps as a user runs them, on every backend (the ``backend`` fixture)."""

from __future__ import annotations

import json

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
