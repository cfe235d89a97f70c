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
