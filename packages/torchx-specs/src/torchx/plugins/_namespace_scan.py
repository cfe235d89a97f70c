"""Finding ``@register``-ed plugins in the ``torchx_plugins.<kind>`` namespace package.

Every public module under the kind's namespace is imported (sub-packages too, including
directories without ``__init__.py``), and each function it defines that carries a plugin tag
is taken. One broken module is recorded and skipped; it never hides the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

from torchx.plugins._registration import resource_tags
from torchx.plugins._types import NAMESPACE_ROOT, PluginFactories, PluginType, RegistrationError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Record = Callable[[RegistrationError], None]


def scan_namespace(plugin_type: PluginType, record: Record) -> PluginFactories:
    """``{name: factory}`` of every plugin of ``plugin_type`` in its namespace package."""
    namespace = plugin_type.namespace
    try:
        package = importlib.import_module(namespace)
    except ModuleNotFoundError as e:
        if e.name in (NAMESPACE_ROOT, namespace):
            return {}  # no plugin of this kind is installed
        record(RegistrationError(module=namespace, error=f"{type(e).__name__}: {e}"))
        return {}
    except Exception as e:
        record(RegistrationError(module=namespace, error=f"{type(e).__name__}: {e}"))
        return {}
    found: PluginFactories = {}
    if hasattr(package, "__path__"):
        _scan_package(package, plugin_type, found, record)
    return found


def _scan_package(
    package: ModuleType, plugin_type: PluginType, found: PluginFactories, record: Record
) -> None:
    import pkgutil
    from pathlib import Path

    try:
        children = [(m.name, m.ispkg) for m in pkgutil.iter_modules(package.__path__)]
    except Exception as e:
        record(RegistrationError(module=package.__name__, error=f"cannot list modules: {e}"))
        return
    seen = {name for name, _ in children}
    for directory in list(package.__path__):  # namespace sub-packages: no __init__.py
        root = Path(directory)
        if not root.is_dir():
            continue
        for child in sorted(root.iterdir()):
            if child.is_dir() and child.name not in seen and any(child.glob("*.py")):
                seen.add(child.name)
                children.append((child.name, True))
    for name, _ in children:
        if name.startswith("_") or not name.isidentifier():
            continue
        fqn = f"{package.__name__}.{name}"
        try:
            module = importlib.import_module(fqn)
        except Exception as e:
            record(RegistrationError(module=fqn, error=f"{type(e).__name__}: {e}"))
            continue
        _collect(module, plugin_type, found, record)
        if hasattr(module, "__path__"):
            _scan_package(module, plugin_type, found, record)


def _collect(
    module: ModuleType, plugin_type: PluginType, found: PluginFactories, record: Record
) -> None:
    for attr in dir(module):
        obj = getattr(module, attr, None)
        kind = getattr(obj, "_plugin_type", None)
        if not callable(obj) or kind is None or getattr(obj, "__module__", None) != module.__name__:
            continue  # not a plugin, or one imported from another module
        name = str(getattr(obj, "_plugin_name", attr))
        if kind != plugin_type:
            actual = PluginType(kind)
            record(
                RegistrationError(
                    module=module.__name__,
                    error=(
                        f"`{name}` is a {actual.label} plugin in the {plugin_type.label}"
                        f" namespace; move it to `{actual.namespace}` or decorate it with"
                        f" @register.{plugin_type.label}()"
                    ),
                    name=name,
                    plugin_type=actual.label,
                )
            )
            continue
        if name in found:
            if _same_plugin(found[name], obj, plugin_type):
                continue  # two portions of the namespace ship the same thing: harmless
            record(
                RegistrationError(
                    module=module.__name__,
                    error=(
                        f"`{name}` is registered again, differently, in `{module.__name__}`; the"
                        f" first one (in `{found[name].__module__}`) is used. Rename one of them"
                    ),
                    name=name,
                    plugin_type=plugin_type.label,
                )
            )
            continue
        found[name] = obj


def _same_plugin(a: Callable[..., Any], b: Callable[..., Any], plugin_type: PluginType) -> bool:
    """Whether two registrations under one name are the same plugin.

    Named resources are compared by the resources they make (cheap and side-effect free);
    schedulers and trackers only when they are the very same function.
    """
    if a is b:
        return True
    if plugin_type != PluginType.NAMED_RESOURCE:
        return False
    try:
        return bool(_comparable(a()) == _comparable(b()))
    except Exception:
        return False


def _comparable(value: Any) -> Any:
    """A form of ``value`` that compares equal across copies of the same classes (two
    distributions may each define their own twin of a type)."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        tags = fields.get("tags")
        if isinstance(tags, dict) and not tags.get(resource_tags.IS_FRACTIONAL, False):
            fields["tags"] = {k: v for k, v in tags.items() if k != resource_tags.IS_FRACTIONAL}
        return (type(value).__name__, tuple((k, _comparable(v)) for k, v in fields.items()))
    if isinstance(value, dict):
        return tuple(sorted((repr(_comparable(k)), _comparable(v)) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        return tuple(sorted((_comparable(v) for v in value), key=repr))
    if isinstance(value, (list, tuple)):
        return tuple(_comparable(v) for v in value)
    if hasattr(value, "value") and hasattr(value, "name") and not isinstance(value, type):
        return (type(value).__name__, getattr(value, "value", None))  # enums
    if value is None or isinstance(value, (str, int, float, bool, bytes)):
        return value
    return repr(value)
