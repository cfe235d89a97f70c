"""The words that made the request being rendered (``torchx run``'s component and
arguments), kept for an idempotency key's record of its request; apart from the key's
machinery so that a run without a key loads none of it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["requested_as", "requested_words"]

_REQUESTED_AS: ContextVar[str | None] = ContextVar("torchx_requested_as", default=None)


@contextmanager
def requested_as(component: str, args: list[str] | Mapping[str, Any]) -> Iterator[None]:
    """Names the request being rendered by the component call that made it."""
    words = shlex.join([component, *args]) if isinstance(args, list) else component
    if isinstance(args, Mapping) and args:
        words += " " + json.dumps(dict(args), sort_keys=True, default=str)
    token = _REQUESTED_AS.set(words)
    try:
        yield
    finally:
        _REQUESTED_AS.reset(token)


def requested_words() -> str | None:
    """The words of the request being rendered, if a component call made it."""
    return _REQUESTED_AS.get()
