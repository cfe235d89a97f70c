"""Helpers to announce deprecations the same way everywhere.

They warn with ``UserWarning`` on purpose: ``DeprecationWarning`` is hidden by default, so
users would never see it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_PREFIX = "[Deprecated] "


def deprecated_module(old_import: str, new_import: str, *, stacklevel: int = 3) -> None:
    """Call at the top of a compatibility stub module that moved to ``new_import``."""
    warnings.warn(
        f"{_PREFIX}`{old_import}` moved to `{new_import}` and will be removed."
        f" Change `import {old_import}` to `import {new_import}`.",
        UserWarning,
        stacklevel=stacklevel,
    )


def deprecated(*, replacement: str | None = None) -> Callable[[F], F]:
    """Marks a function or class as deprecated: every call warns, naming ``replacement``."""

    def decorate(obj: F) -> F:
        name = getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj)))
        message = f"{_PREFIX}`{name}` is deprecated"
        if replacement:
            message += f"; use `{replacement}` instead"

        if isinstance(obj, type):
            original_init = obj.__init__  # type: ignore[misc]

            @functools.wraps(original_init)
            def init(self: Any, *args: Any, **kwargs: Any) -> None:
                warnings.warn(message, UserWarning, stacklevel=2)
                original_init(self, *args, **kwargs)

            obj.__init__ = init  # type: ignore[misc]
            return obj

        @functools.wraps(obj)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(message, UserWarning, stacklevel=2)
            return obj(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
