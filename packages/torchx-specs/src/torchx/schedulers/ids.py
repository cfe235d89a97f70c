"""Random, DNS-label-safe ids for app names (``make_unique("train")`` -> ``train-bx3k...``).

Entropy comes from ``os.urandom`` so ids do not repeat after ``random.seed()``. Ids start
with a consonant (valid Kubernetes/DNS names never start with a digit) and contain no
vowels, so they never spell words.
"""

import os

__all__ = ["END_CANDIDATES", "START_CANDIDATES", "make_unique", "random_id", "random_uint64"]

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
    if max_length is not None and max_length <= 0:
        return ""
    chars: list[str] = []
    value = random_uint64()
    while True:
        if value == 0:
            if max_length is None:
                break
            value = random_uint64()
        alphabet = END_CANDIDATES if chars else START_CANDIDATES
        value, digit = divmod(value, len(alphabet))
        chars.append(alphabet[digit])
        if max_length is not None and len(chars) >= max_length:
            break
    return "".join(chars)


def make_unique(name: str, string_length: int = 0) -> str:
    """``{name}-{random id}``; ``string_length > 0`` fixes the length of the id part."""
    return f"{name}-{random_id(string_length or None)}"
