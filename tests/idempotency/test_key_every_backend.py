"""A run whose idempotency key finds an app made from another request says so, on every
backend (the ``backend`` fixture)."""

from __future__ import annotations

import uuid

from torchx_testsupport.backends import Backend


def test_a_found_app_made_from_another_request_is_flagged(backend: Backend) -> None:
    key = f"flagged-{uuid.uuid4().hex[:8]}"
    first = backend.run("--wait", "--idempotency-key", key, "utils.sh", *backend.image_args, "true")
    assert first.returncode == 0, first.stderr
    handle = first.stdout.split()[0]
    again = backend.run("--idempotency-key", key, "utils.echo", *backend.image_args)
    assert again.stdout.split()[0] == handle, again
    assert (
        f"{handle} (SUCCEEDED); it was made by `utils.sh"
    ) in again.stderr and "this run asks for `utils.echo" in again.stderr, again.stderr
    same = backend.run("--idempotency-key", key, "utils.sh", *backend.image_args, "true")
    assert f"{handle} (SUCCEEDED); nothing was submitted" in same.stderr, same.stderr
