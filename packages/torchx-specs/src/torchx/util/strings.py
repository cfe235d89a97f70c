"""String normalisation for names that schedulers restrict (e.g. Kubernetes labels)."""

__all__ = ["normalize_str"]

_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def normalize_str(data: str) -> str:
    """Drops one leading ``-``, lower-cases, and keeps only ``[a-z0-9-]``."""
    if data.startswith("-"):
        data = data[1:]
    return "".join(ch for ch in data.lower() if ch in _ALLOWED)
