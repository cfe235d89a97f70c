"""Importing objects named by strings (``pkg.module:attr``), as plugin settings do."""

import importlib
from types import ModuleType
from typing import Any

from torchx.util.log import get_logger

__all__ = ["import_attr", "load_module"]

logger = get_logger(__name__)


def load_module(path: str) -> Any:
    """Returns the module, or the attribute, named ``module.path[:attr.path]``.

    Returns ``None`` when it cannot be imported (callers use this to try a name that
    may not be a module path at all). A module that is there but fails to import (a
    broken component file, a missing dependency of it) is a warning naming the error, as
    upstream's head warns; a name that is no module at all stays at debug level.
    """
    module_path, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_path)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except Exception as e:
        absent = isinstance(e, ModuleNotFoundError) and _is_missing_module(e, module_path)
        log = logger.debug if absent or isinstance(e, AttributeError) else logger.warning
        log("cannot load `%s`: %s: %s", path, type(e).__name__, e)
        return None
    return obj


def _is_missing_module(error: ModuleNotFoundError, name: str) -> bool:
    """Whether ``error`` is about ``name`` itself (or a parent package), not a dependency."""
    missing = error.name or ""
    return missing == name or name.startswith(f"{missing}.")


def import_attr(name: str, attr: str, default: Any) -> Any:
    """``getattr(import_module(name), attr)``, or ``default`` when ``name`` does not exist.

    A module that exists but fails to import one of ITS dependencies raises, and so does a
    module without ``attr`` (``AttributeError``): both are bugs the user must see.
    """
    try:
        module: ModuleType = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if _is_missing_module(e, name):
            return default
        raise
    return getattr(module, attr)
