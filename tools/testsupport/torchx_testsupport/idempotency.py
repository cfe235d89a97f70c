"""What the idempotency tests of every backend share: two users of one target (a
Kubernetes namespace, a Ray cluster, a Batch queue, a Docker daemon) running the same key."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

USERS = ("alice", "bob")


def per_user_key() -> str:
    """A key of this test run only (the backends outlive the test)."""
    return f"per-user-{uuid.uuid4().hex[:8]}"


def check_a_key_is_each_users(submit: Callable[[], str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``submit`` (a run with one idempotency key) as each of two users, by login name:
    each gets an app of its own, the other's is never taken for it, and each user's
    second run finds that user's app."""
    handles: dict[str, str] = {}
    for user in USERS:
        monkeypatch.setenv("LOGNAME", user)
        monkeypatch.setenv("USER", user)
        handles[user] = submit()
    assert handles["alice"] != handles["bob"], handles
    for user in USERS:
        monkeypatch.setenv("LOGNAME", user)
        monkeypatch.setenv("USER", user)
        assert submit() == handles[user], (user, handles)
