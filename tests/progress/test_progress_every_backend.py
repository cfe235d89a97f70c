"""Progress as a user reads it, on every backend (the ``backend`` fixture): the protocol
written by a shell (any image), NaN kept and shown, the protocol lines out of
``torchx log`` (and in its ``--raw`` output)."""

from __future__ import annotations

import json

from torchx_testsupport.backends import Backend

SCRIPT = (
    'echo "step one";'
    ' echo "TORCHX_PROGRESS {\\"step\\": 1, \\"total\\": 4, \\"metrics\\": {\\"loss\\": 0.5}}" >&2;'
    ' echo "TORCHX_PROGRESS {\\"step\\": 2, \\"total\\": 4, \\"metrics\\": {\\"loss\\": NaN}}" >&2;'
    ' echo "step two"'
)


def test_a_nan_loss_shows_and_the_protocol_stays_out_of_the_log(backend: Backend) -> None:
    run = backend.run("--wait", "utils.sh", *backend.image_args, "--", "sh", "-c", SCRIPT)
    assert run.returncode == 0, run.stderr
    handle = run.stdout.split()[0]
    status = json.loads(backend.torchx("status", "--json", handle).stdout)
    assert status["progress"]["step"] == 2
    assert status["progress"]["metrics"] == {"loss": "NaN"}  # JSON has no NaN: a string
    text = backend.torchx("status", handle).stdout
    assert "Progress: 50% (2/4), loss=nan" in text, text
    logged = backend.torchx("log", handle).stdout
    assert "step one" in logged and "step two" in logged, logged
    assert "TORCHX_PROGRESS" not in logged
    raw = backend.torchx("log", "--raw", handle).stdout
    assert raw.count("TORCHX_PROGRESS {") == 2, raw
