"""Random, DNS-label-safe ids for app names (``make_unique("train")`` -> ``train-bx3k...``).

Entropy comes from ``os.urandom`` so ids do not repeat after ``random.seed()``. Ids start
with a consonant (valid Kubernetes/DNS names never start with a digit) and contain no
vowels, so they never spell words.

Under :func:`keyed_ids` (a run with an idempotency key) the id is the key's instead
(:func:`user_key_id`): every submission of that key by one user names its app alike, so a
backend that refuses a second object of one name (a Kubernetes Job, a Docker container, a
Ray submission id) refuses the second submission, and the app is found by the end of its
id. The id is drawn from the submitting user's login name with the key: on a namespace,
queue, cluster or daemon several users share, another user's run of the same key names
its app apart, and is never taken for this user's.
"""

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "END_CANDIDATES",
    "ENV_REQUEST",
    "ENV_REQUEST_HASH",
    "START_CANDIDATES",
    "current_key",
    "key_id",
    "keyed_ids",
    "make_unique",
    "random_id",
    "random_uint64",
    "user_key_id",
]

ENV_REQUEST_HASH = "TORCHX_REQUEST_HASH"
"""The hash of the request an app of a key was made from, kept in its env (a scheduler
that keeps no env keeps it in its own record): a later run of the key that asks for
something else is told so (``torchx.runner._idempotency``)."""
ENV_REQUEST = "TORCHX_REQUEST"
"""What made it, as the user said it (``utils.sh exit 3``), for that message."""

_KEY: ContextVar[str | None] = ContextVar("torchx_idempotency_key", default=None)

START_CANDIDATES: str = "bcdfghjklmnpqrstvwxz"
"""Alphabet of the first character: lower-case consonants."""

END_CANDIDATES: str = START_CANDIDATES + "0123456789"
"""Alphabet of the remaining characters: consonants and every digit."""


def random_uint64() -> int:
    """A random unsigned 64-bit integer from ``os.urandom``."""
    return int.from_bytes(os.urandom(8), "big")


def random_id(max_length: int | None = None) -> str:
    """A random id: the base-N digits of a random 64-bit number (typically 13-14 chars).

    With ``max_length`` the id is exactly ``max_length`` characters long (more entropy
    is drawn when one 64-bit number is not enough); ``max_length <= 0`` gives ``""``.
    """
    return _id_from(random_uint64, max_length)


def key_id(key: str, max_length: int | None = None) -> str:
    """The id of an idempotency key: :func:`random_id`'s alphabet, drawn from the key's
    SHA-256 instead of ``os.urandom`` (the same key, the same id)."""
    import hashlib  # with a key only: not on `torchx run`'s path (bench_cli)

    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    chunks = iter([int.from_bytes(digest[i : i + 8], "big") for i in range(0, 32, 8)])

    def next_chunk() -> int:
        nonlocal digest, chunks
        for chunk in chunks:
            return chunk
        digest = hashlib.sha256(digest).digest()  # a longer id than 256 bits give
        chunks = iter([int.from_bytes(digest[i : i + 8], "big") for i in range(0, 32, 8)])
        return next(chunks)

    return _id_from(next_chunk, max_length)


def _id_from(draw: Callable[[], int], max_length: int | None) -> str:
    if max_length is not None and max_length <= 0:
        return ""
    chars: list[str] = []
    value = draw()
    while True:
        if value == 0:
            if max_length is None:
                break
            value = draw()
        alphabet = END_CANDIDATES if chars else START_CANDIDATES
        value, digit = divmod(value, len(alphabet))
        chars.append(alphabet[digit])
        if max_length is not None and len(chars) >= max_length:
            break
    return "".join(chars)


def user_key_id(key: str, max_length: int | None = None) -> str:
    """The id the apps of idempotency ``key`` are named by: :func:`key_id` of the key
    with the submitting user's login name (``current_user``), so the key is this user's."""
    from torchx.util.support.user import current_user

    return key_id(f"{current_user()}\x00{key}", max_length)


@contextmanager
def keyed_ids(key: str | None) -> Iterator[None]:
    """Within it, :func:`make_unique` gives ``key``'s id (nothing changes for ``None``)."""
    token = _KEY.set(key)
    try:
        yield
    finally:
        _KEY.reset(token)


def current_key() -> str | None:
    """The idempotency key of the submission being rendered, if it has one."""
    return _KEY.get()


def make_unique(name: str, string_length: int = 0) -> str:
    """``{name}-{random id}``; ``string_length > 0`` fixes the length of the id part.
    Under :func:`keyed_ids` the id part is the user's key's (:func:`user_key_id`)."""
    key = _KEY.get()
    if key is not None:
        return f"{name}-{user_key_id(key, string_length or None)}"
    return f"{name}-{random_id(string_length or None)}"
