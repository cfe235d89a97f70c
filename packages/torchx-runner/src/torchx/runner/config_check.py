"""Typos in ``.torchxconfig`` files, said where they are.

A misspelled section (``[local_cdw]``, ``[component:dist.dpp]``) or key (``jj = 2``) had no
effect and no warning. ``torchx run`` now warns once per such section or key, naming the
file, the line and the nearest valid name; a section of another tool that shares the file
(``[mast]``, ``[flow]``) stays quiet when no valid name is near. A value of the component's
section that does not fit its argument is an error naming the file and line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping

from torchx.util.log import get_logger
from torchx.util.support.config_files import ConfigError, display_path, find_config_files

__all__ = ["Located", "check_component_values", "locate", "warn_typos"]

_SECTION = re.compile(r"^\s*\[([^\]]+)\]")
_KEY = re.compile(r"^([^\s#;=:\[][^=:]*?)\s*[=:]")
_OTHER_PREFIXES = ("cli", "torchx", "tracker")
"""Section prefixes TorchX reads whose keys are not checked here."""
_CUTOFF = 0.75
"""How alike a name must be to count as a typo of a valid one (``mast`` is not ``ray``)."""

Located = dict[str, tuple[int, dict[str, int]]]
"""``{section: (line, {key: line})}`` of one config file."""


def locate(path: str) -> Located:
    """Where each section and key of the file at ``path`` is (1-based lines)."""
    found: Located = {}
    current: dict[str, int] | None = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            section = _SECTION.match(line)
            if section:
                current = found.setdefault(section.group(1).strip(), (number, {}))[1]
                continue
            key = _KEY.match(line)
            if key and current is not None:
                current.setdefault(key.group(1).strip(), number)
    return found


def _nearest(name: str, valid: Iterable[str], cutoff: float = _CUTOFF) -> str | None:
    close = difflib.get_close_matches(name, list(valid), n=1, cutoff=cutoff)
    return close[0] if close else None


def warn_typos(
    schedulers: Iterable[str],
    component: str | None,
    component_params: Iterable[str],
    components: Iterable[str] = (),
    dirs: Iterable[str] | None = None,
) -> None:
    """Warns about each section that is no scheduler's, component's or TorchX's but is
    near one, and each key of ``component``'s section that is not one of its arguments."""
    schedulers = list(schedulers)
    known_components = {*components, *([component] if component else [])}
    params = list(component_params)
    log = get_logger("torchx")
    for path in find_config_files(dirs):
        where = display_path(path)
        for section, (line, keys) in locate(path).items():
            head, sep, name = section.partition(":")
            if section in schedulers or (sep and head in _OTHER_PREFIXES):
                continue
            if sep and head == "component":
                if name not in known_components:
                    near = _nearest(name, known_components)
                    if near:
                        log.warning(
                            "%s:%d: section [%s] names no component, so it is not used;"
                            " did you mean [component:%s]?",
                            where, line, section, near,
                        )  # fmt: skip
                    continue
                if name == component:
                    for key, key_line in keys.items():
                        if key not in params:
                            near = _nearest(key, params, cutoff=0.6)  # in a section of ours
                            hint = f"; did you mean {near!r}?" if near else ""
                            log.warning(
                                "%s:%d: [%s] %s is not an argument of %s, so it is not used%s",
                                where, key_line, section, key, name, hint,
                            )  # fmt: skip
                continue
            near = _nearest(section, [*schedulers, *(f"component:{c}" for c in known_components)])
            if near:
                log.warning(
                    "%s:%d: section [%s] is no scheduler's or component's, so it is not used;"
                    " did you mean [%s]?",
                    where, line, section, near,
                )  # fmt: skip


def check_component_values(
    component: str,
    values: Mapping[str, str],
    convert: Callable[[str, str], object],
    dirs: Iterable[str] | None = None,
) -> None:
    """Raises :class:`ConfigError` naming the file and line of the first value of
    ``[component:COMPONENT]`` that ``convert(key, raw)`` refuses (a ``ValueError``)."""
    section = f"component:{component}"
    for key, raw in values.items():
        try:
            convert(key, raw)
        except (ValueError, TypeError) as e:
            for path in find_config_files(dirs):
                line = locate(path).get(section, (0, {}))[1].get(key)
                if line:
                    raise ConfigError(
                        f"{display_path(path)}:{line}: [{section}] {key} = {raw}: {e}"
                    ) from None
            raise ConfigError(f"[{section}] {key} = {raw}: {e}") from None
