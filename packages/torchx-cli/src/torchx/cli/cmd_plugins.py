"""``torchx plugins``: what is installed, who provides it, and what failed to load.

Lists the torchx distributions with their versions, then every scheduler, component
group, named resource, tracker and subcommand with the distribution providing it. Every
entry point is loaded here (that is the point of the command), and each failure is
reported with its error instead of hiding the other plugins.
"""

import argparse
import importlib
import sys
import textwrap
from functools import partial

from torchx.cli._json import print_json
from torchx.cli._table import format_table
from torchx.cli.cmd_base import SubCommand
from torchx.cli.main import BUILTIN_SUBCOMMANDS, CLI_CMDS_GROUP, _load_plugin
from torchx.plugins import PluginType, registry
from torchx.specs import Resource
from torchx.specs.finder import get_component_load_errors, get_components
from torchx.util.entrypoints import distributions, entry_points
from torchx.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from torchx.util.entrypoints import EntryPointInfo

__all__ = ["CmdPlugins", "collect_plugins"]

_SCHEDULER_GROUPS = ("torchx.schedulers", "torchx.schedulers.orchestrator")
_HOOK_GROUPS = ("torchx.version", "torchx.file")
_BUILTIN_COMPONENTS_MODULE = "torchx.components"


def _entry(ep: "EntryPointInfo", error: "BaseException | None") -> "dict[str, Any]":
    return {
        "name": ep.name,
        "target": ep.value,
        "group": ep.group,
        "dist": ep.dist,
        "version": ep.version,
        "error": f"{type(error).__name__}: {error}" if error is not None else None,
    }


def _namespace_entries(
    kind: str, probe: "Callable[[Callable[..., Any]], object] | None" = None
) -> "list[dict[str, Any]]":
    """The ``torchx_plugins.<kind>`` plugins of one kind (entry points are listed apart), each
    tried with ``probe``, and the plugins of that namespace that were found but not taken."""

    plugin_type = PluginType[kind]
    reg = registry()
    entries = []
    for name, factory in reg.get(plugin_type).items():
        if getattr(factory, "entry_point", None) is not None:
            continue
        error = _try(partial(probe, factory)) if probe else None
        entries.append(
            {
                "name": name,
                "target": f"{factory.__module__}:{getattr(factory, '__qualname__', name)}",
                "group": plugin_type.namespace,
                "dist": "",
                "version": "",
                "error": f"{type(error).__name__}: {error}" if error is not None else None,
            }
        )
    entries += [
        {
            "name": e.name or "-",
            "target": e.module,
            "group": plugin_type.namespace,
            "dist": "",
            "version": "",
            "error": e.error,
        }
        for e in reg.load_errors(plugin_type)
    ]
    return entries


def _try(action: "Callable[[], object]") -> "BaseException | None":
    try:
        action()
    except Exception as e:
        return e
    return None


def _call_resource_factory(ep: "EntryPointInfo") -> None:
    _check_resource_factory(ep.load())


def _check_resource_factory(factory: "Callable[..., Any]") -> None:
    result = factory()
    if not isinstance(result, Resource):
        raise TypeError(f"factory returned {type(result).__name__}, not Resource")


def _instantiate_subcommand(ep: "EntryPointInfo") -> None:
    _load_plugin(ep)


def _dist_of_module(module: str) -> "tuple[str, str]":
    """(distribution, version) that ships ``module`` (best effort, for built-in pieces)."""
    owners = {
        "torchx.components": "torchx-runner",
        "torchx.specs": "torchx-specs",
        "torchx.cli": "torchx-cli",
    }

    for prefix, dist in owners.items():
        if module == prefix or module.startswith(prefix + "."):
            return dist, __version__
    return "", ""


def _discover_components() -> "tuple[list[str], list[dict[str, Any]]]":
    """Names of the valid components, and the component modules that failed to import."""

    try:
        names = list(get_components())
    except Exception as e:
        failed = {"module": "", "entry_point": None, "error": f"{type(e).__name__}: {e}"}
        return [], [failed]
    errors = [
        {"module": e.module, "entry_point": e.entry_point, "error": e.error}
        for e in get_component_load_errors()
    ]
    return names, errors


def collect_plugins() -> "dict[str, Any]":
    """Everything ``torchx plugins`` reports, as JSON-ready data."""

    report: dict[str, Any] = {
        "distributions": [{"name": n, "version": v} for n, v in distributions()],
    }

    report["schedulers"] = [
        _entry(ep, _try(ep.load)) for group in _SCHEDULER_GROUPS for ep in entry_points(group)
    ] + _namespace_entries("SCHEDULER")

    components = [_entry(ep, _try(ep.load)) for ep in entry_points("torchx.components")]
    if not components:
        dist, version = _dist_of_module(_BUILTIN_COMPONENTS_MODULE)

        error = _try(lambda: importlib.import_module(_BUILTIN_COMPONENTS_MODULE))
        components = [
            {
                "name": "",
                "target": _BUILTIN_COMPONENTS_MODULE,
                "group": "torchx.components",
                "dist": dist,
                "version": version,
                "error": f"{type(error).__name__}: {error}" if error is not None else None,
                "builtin": True,
            }
        ]
    report["components"] = components
    report["component_names"], report["component_errors"] = _discover_components()

    resources: list[dict[str, Any]] = []
    for module in ("torchx.specs.named_resources_generic", "torchx.specs.named_resources_aws"):
        dist, version = _dist_of_module(module)
        table = importlib.import_module(module).NAMED_RESOURCES
        resources += [
            {
                "name": name,
                "target": module,
                "group": "",
                "dist": dist,
                "version": version,
                "error": None,
                "builtin": True,
            }
            for name in table
        ]
    resources += [
        _entry(ep, _try(partial(_call_resource_factory, ep)))
        for ep in entry_points("torchx.named_resources")
    ]
    resources += _namespace_entries("NAMED_RESOURCE", _check_resource_factory)
    report["named_resources"] = resources

    report["trackers"] = [
        _entry(ep, _try(ep.load)) for ep in entry_points("torchx.tracker")
    ] + _namespace_entries("TRACKER")

    report["event_handlers"] = [
        _entry(ep, _try(ep.load)) for ep in entry_points("torchx.event_handlers")
    ] + _namespace_entries("EVENT_HANDLER")

    plugin_cmds = {ep.name: ep for ep in entry_points(CLI_CMDS_GROUP)}
    subcommands: list[dict[str, Any]] = [
        {
            "name": name,
            "target": target,
            "group": "",
            "dist": "torchx-cli",
            "version": __version__,
            "error": None,
            "builtin": True,
            "replaced_by": plugin_cmds[name].dist if name in plugin_cmds else None,
        }
        for name, (target, _) in BUILTIN_SUBCOMMANDS.items()
    ]
    subcommands += [
        _entry(ep, _try(partial(_instantiate_subcommand, ep))) for ep in plugin_cmds.values()
    ]
    report["subcommands"] = subcommands

    report["hooks"] = [
        _entry(ep, _try(ep.load)) for group in _HOOK_GROUPS for ep in entry_points(group)
    ]

    kinds = (
        "schedulers",
        "components",
        "named_resources",
        "trackers",
        "event_handlers",
        "subcommands",
        "hooks",
    )
    report["errors"] = [
        {
            "kind": kind,
            "name": e["name"],
            "dist": e["dist"] or e["group"],
            "target": e["target"],
            "error": e["error"],
        }
        for kind in kinds
        for e in report[kind]
        if e.get("error")
    ]
    # a plugin in the wrong namespace is listed under both kinds; its error once
    unique = {(e["name"], e["target"], e["error"]): e for e in report["errors"]}
    report["errors"] = list(unique.values())
    report["errors"] += [
        {
            "kind": "component modules",
            "name": e["module"],
            "dist": "",
            "target": e["entry_point"] or e["module"],
            "error": e["error"],
        }
        for e in report["component_errors"]
    ]
    return report


def _provider(entry: "dict[str, Any]") -> str:
    return f"{entry['dist']} {entry['version']}".strip() or entry.get("group") or "?"


def _format_section(title: str, entries: "list[dict[str, Any]]") -> str:
    if not entries:
        return f"{title}: none"
    rows = []
    for e in entries:
        status = "FAILED (see below)" if e.get("error") else "ok"
        if e.get("replaced_by"):
            status = f"replaced by {e['replaced_by']}"
        rows.append([e["name"] or "(no prefix)", _provider(e), e["target"], status])
    return f"{title}:\n" + format_table(rows, ["NAME", "PROVIDED BY", "TARGET", "STATUS"])


def format_report(report: "dict[str, Any]") -> str:
    """The text form of :py:func:`collect_plugins`."""

    parts = [
        "distributions:\n"
        + format_table(
            [[d["name"], d["version"]] for d in report["distributions"]], ["NAME", "VERSION"]
        )
    ]
    parts.append(_format_section("schedulers", report["schedulers"]))
    components = report["components"]
    title = "component groups"
    if any(not c.get("builtin") for c in components):
        title += " (registered groups replace the built-ins unless torchx.components is listed)"
    parts.append(
        _format_section(title, components)
        + f"\n  {len(report['component_names'])} valid components (see `torchx builtins`)"
    )

    builtin_resources = [r for r in report["named_resources"] if r.get("builtin")]
    plugin_resources = [r for r in report["named_resources"] if not r.get("builtin")]
    by_provider: dict[str, list[str]] = {}
    for r in builtin_resources:
        by_provider.setdefault(_provider(r), []).append(r["name"])

    builtin_lines = [
        textwrap.fill(
            f"built in ({provider}, {len(names)}): {', '.join(names)}",
            width=100,
            initial_indent="  ",
            subsequent_indent="    ",
            break_on_hyphens=False,
        )
        for provider, names in by_provider.items()
    ]
    resources_text = _format_section("named resources from plugins", plugin_resources)
    parts.append("named resources:\n" + "\n".join(builtin_lines) + "\n" + resources_text)

    parts.append(_format_section("trackers", report["trackers"]))
    if report["event_handlers"]:
        parts.append(_format_section("event handlers", report["event_handlers"]))
    parts.append(_format_section("subcommands", report["subcommands"]))
    if report["hooks"]:
        parts.append(_format_section("hooks", report["hooks"]))

    errors = report["errors"]
    if errors:
        lines = [
            f"  {e['kind']} `{e['name'] if e['name'] not in ('', '-') else e['target']}`"
            f" ({e['dist'] or '?'}): {e['error']}"
            for e in errors
        ]
        parts.append(f"failed to load ({len(errors)}):\n" + "\n".join(lines))
    else:
        parts.append("failed to load: none")
    return "\n\n".join(parts)


class CmdPlugins(SubCommand):
    """``torchx plugins [--json]``."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("--json", action="store_true", help="print the report as JSON")

    def run(self, args: argparse.Namespace) -> None:
        report = collect_plugins()
        if args.json:
            print_json(report)
        else:
            print(format_report(report))
        sys.stdout.flush()
