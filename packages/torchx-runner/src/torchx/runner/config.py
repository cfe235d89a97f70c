"""``.torchxconfig``: defaults for run configs, components, CLI flags and trackers.

An INI file (keys are case-sensitive) with these sections::

    [local_cwd]              # run config defaults of a scheduler (``-cfg`` keys)
    log_dir = /tmp/logs

    [component:dist.ddp]     # default arguments of a component
    j = 2x4

    [cli:run]                # defaults of ``torchx run`` flags (scheduler, workspace,
    scheduler = local_cwd    # component); [cli:list] for ``torchx list``

    [torchx:tracker]         # tracker names (the values are ignored)
    fsspec =

    [tracker:fsspec]         # per-tracker settings; ``config`` goes to the factory
    config = /tmp/tracker_data

Which files are read (:func:`find_configs`): the directories passed explicitly; else
``$TORCHXCONFIG`` alone when set (an empty value means "no config file"); else
``$HOME/.torchxconfig`` then ``./.torchxconfig``. A key is taken from the first file
that sets it, and values already in the run config (``-cfg`` on the CLI) win over all
files. Scheduler values are validated against the scheduler's run options: a bad value
fails with the file, section, key and expected type; an unknown key is warned about
and ignored. The ``Runner`` does not read config files by itself; call :func:`apply`.

``configparser`` and ``pydantic`` are imported only when a file is actually read.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable

from torchx.schedulers import get_scheduler_factories
from torchx.schedulers.api import Scheduler
from torchx.settings import ENV_TORCHXCONFIG
from torchx.specs import get_type_name
from torchx.util.log import get_logger
from torchx.util.support.config_files import (
    CONFIG_FILE,
    ConfigError,
    default_config_dirs,
    find_config_files,
    new_parser,
    read_config,
)
from torchx.util.support.config_files import display_path as _display
from torchx.util.support.config_files import parse_config as _parse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

    from torchx.schedulers import SchedulerFactory
    from torchx.schedulers.api import Scheduler
    from torchx.specs import CfgVal, runopt

__all__ = [
    "CONFIG_FILE",
    "CONFIG_PREFIX_DELIM",
    "ENV_TORCHXCONFIG",
    "ConfigError",
    "apply",
    "default_config_dirs",
    "dump",
    "find_configs",
    "get_config",
    "get_configs",
    "load",
    "load_sections",
]

logger = get_logger(__name__)

CONFIG_PREFIX_DELIM = ":"

ORCHESTRATOR_GROUP = "torchx.schedulers.orchestrator"
"""Extra entry-point group of schedulers whose options may appear in config files."""

_NONE = "None"
_FIXME = "#FIXME"
_FIXME_MAX_LEN = 60


def __getattr__(name: str) -> Any:
    # Upstream's constant, evaluated on each access so that it follows chdir/HOME.
    if name == "DEFAULT_CONFIG_DIRS":
        return default_config_dirs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


find_configs = find_config_files
"""Upstream's name of :func:`torchx.util.support.config_files.find_config_files`."""


# ---------------------------------------------------------------------- parsing


def _file_name(f: TextIO) -> str:
    name = getattr(f, "name", None)
    return name if isinstance(name, str) else "<config>"


# ---------------------------------------------------------------------- schedulers


def _scheduler_factories() -> dict[str, SchedulerFactory]:
    """Registered schedulers plus the ``torchx.schedulers.orchestrator`` group."""

    factories = dict(get_scheduler_factories())
    for name, factory in get_scheduler_factories(group=ORCHESTRATOR_GROUP).items():
        factories.setdefault(name, factory)
    return factories


def _get_scheduler(name: str) -> Scheduler[Any]:
    factories = _scheduler_factories()
    factory = factories.get(name)
    if factory is None:
        raise ValueError(
            f"unknown scheduler {name!r}; registered schedulers: {', '.join(factories) or '<none>'}"
        )
    scheduler = factory("_")
    if not isinstance(scheduler, Scheduler):
        raise TypeError(
            f"the factory of scheduler {name!r} returned a {type(scheduler).__name__},"
            " not a torchx.schedulers.api.Scheduler"
        )
    return scheduler


# ---------------------------------------------------------------------- validation

_BOOL_WORDS = {"true": True, "1": True, "yes": True, "on": True}
_BOOL_WORDS.update({"false": False, "0": False, "no": False, "off": False})


def _to_bool(value: object) -> object:
    if isinstance(value, str):
        word = value.strip().lower()
        if word not in _BOOL_WORDS:
            raise ValueError("not a bool word")
        return _BOOL_WORDS[word]
    return value


def _to_list(value: object) -> object:
    if isinstance(value, str):
        return [item.strip() for item in value.replace(";", ",").split(",") if item.strip()]
    return value


def _to_dict(value: object) -> object:
    if isinstance(value, str):
        result: dict[str, str] = {}
        for item in value.replace(";", ",").split(","):
            if not item.strip():
                continue
            key, sep, val = item.partition(":")
            if not sep:
                raise ValueError(f"{item!r} is not KEY:VALUE")
            result[key.strip()] = val.strip()
        return result
    return value


def _expected(opt: runopt) -> tuple[str, Any]:
    """(description of the expected value, pydantic annotation that parses it)."""
    from typing import Annotated, Any

    from pydantic import BeforeValidator

    tp = opt.opt_type
    if opt.is_type_list_of_str:
        return "a list of strings (a,b,c or a;b;c)", Annotated[list[str], BeforeValidator(_to_list)]
    if opt.is_type_dict_of_str:
        return (
            "a dict of strings (k1:v1,k2:v2)",
            Annotated[dict[str, str], BeforeValidator(_to_dict)],
        )
    if tp is bool:
        return (
            "a bool (true/false/1/0/yes/no/on/off)",
            Annotated[bool, BeforeValidator(_to_bool)],
        )
    if tp is int:
        return "an int", int
    if tp is float:
        return "a float", float
    if tp is str:
        return "a string", str

    return f"a value of type {get_type_name(tp)}", Annotated[Any, BeforeValidator(opt.cast_to_type)]


_ADAPTERS: dict[str, Any] = {}


def _validate_values(
    where: str, section: str, values: dict[str, tuple[runopt, str]]
) -> dict[str, CfgVal]:
    """Converts raw strings to the option types with pydantic; all errors in one line."""
    from pydantic import TypeAdapter, ValidationError

    result: dict[str, CfgVal] = {}
    errors: list[str] = []
    for key, (opt, raw) in values.items():
        if raw.strip() == _NONE:
            result[key] = None
            continue
        description, annotation = _expected(opt)
        adapter = _ADAPTERS.get(description)
        if adapter is None:
            adapter = TypeAdapter(annotation)
            if not description.startswith("a value of type"):  # opt-specific casts
                _ADAPTERS[description] = adapter
        try:
            result[key] = adapter.validate_python(raw)
        except ValidationError:
            errors.append(f"{where} [{section}] {key} = {raw}: expected {description}")
    if errors:
        raise ConfigError("; ".join(errors))
    return result


def _reject_placeholders(where: str, section: str, values: dict[str, str]) -> None:
    for key, raw in values.items():
        if raw.lstrip().startswith(_FIXME):
            raise ConfigError(
                f"{where} [{section}] {key} = {raw}: placeholder left by `torchx configure`;"
                " replace it with a real value or delete the line"
            )


def load(scheduler: str, f: TextIO, cfg: dict[str, CfgVal]) -> None:
    """Adds the ``[scheduler]`` values of config file ``f`` to ``cfg`` (in place).

    Keys already in ``cfg`` are kept; ``None`` means "no value"; values are converted to
    the option types (a bad value raises :class:`ConfigError` naming file, section, key
    and expected type); keys the scheduler does not know are warned about and skipped.
    """
    path = _file_name(f)
    section = _parse(f, path).get(scheduler)
    if not section:
        return
    pending = {k: v for k, v in section.items() if k not in cfg}
    if not pending:
        return
    where = _display(path)
    _reject_placeholders(where, scheduler, pending)
    sched = _get_scheduler(scheduler)
    try:
        opts = sched.run_opts()
    finally:
        sched.close()
    known: dict[str, tuple[runopt, str]] = {}
    for key, raw in pending.items():
        opt = opts.get(key)
        if opt is None:
            import difflib

            from torchx.runner.config_check import locate

            names = [k for k, _ in opts]
            line = locate(path).get(scheduler, (0, {}))[1].get(key) if path else None
            close = difflib.get_close_matches(key, names, n=1)
            logger.warning(
                "%s%s: [%s] %s is not a run option of scheduler %s, so it is not used%s"
                " (known: %s)",
                where,
                f":{line}" if line else "",
                scheduler,
                key,
                scheduler,
                f"; did you mean {close[0]!r}?" if close else "",
                ", ".join(names) or "<none>",
            )
            continue
        known[key] = (opt, raw)
    cfg.update(_validate_values(where, scheduler, known))
    for key in known:
        _ORIGINS[(scheduler, key)] = f"{where} [{scheduler}] {key}"


_ORIGINS: dict[tuple[str, str], str] = {}


def origin(scheduler: str, key: str) -> str | None:
    """Where the value of run option ``key`` of ``scheduler`` came from (``file [section]
    key``), when a config file set it in this process; ``None`` otherwise."""
    return _ORIGINS.get((scheduler, key))


def apply(scheduler: str, cfg: dict[str, CfgVal], dirs: Iterable[str] | None = None) -> None:
    """Fills ``cfg`` (in place) with the ``[scheduler]`` values of every config file.

    ``cfg`` keeps its own values; earlier files (see :func:`find_configs`) win over later.
    """
    for path in find_configs(dirs):
        with open(path, encoding="utf-8") as f:
            load(scheduler, f, cfg)
        logger.debug("loaded %s run config from %s", scheduler, path)


# ---------------------------------------------------------------------- other sections


def load_sections(prefix: str, dirs: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
    """``{name: {key: value}}`` of every ``[<prefix>:<name>]`` section; first file wins."""
    result: dict[str, dict[str, str]] = {}
    for path in find_configs(dirs):
        for section, values in read_config(path).items():
            head, sep, name = section.partition(CONFIG_PREFIX_DELIM)
            if not sep or head != prefix or not name:
                continue
            merged = result.setdefault(name, {})
            for key, value in values.items():
                merged.setdefault(key, value)
    return result


def get_configs(prefix: str, name: str, dirs: Iterable[str] | None = None) -> dict[str, str]:
    """The merged ``[<prefix>:<name>]`` section (``{}`` when no file has it)."""
    return load_sections(prefix, dirs).get(name, {})


def get_config(prefix: str, name: str, key: str, dirs: Iterable[str] | None = None) -> str | None:
    """One value of ``[<prefix>:<name>]``, or ``None`` when unset."""
    return get_configs(prefix, name, dirs).get(key)


# ---------------------------------------------------------------------- writing


def _fixme(opt: runopt) -> str:
    help_text = " ".join(opt.help.split())
    placeholder = f"{_FIXME}:({get_type_name(opt.opt_type)}) {help_text}"
    if len(placeholder) > _FIXME_MAX_LEN:
        placeholder = placeholder[:_FIXME_MAX_LEN] + "..."
    return placeholder


def _format_default(value: CfgVal) -> str:
    if value is None or value in ("", [], {}):
        return _NONE
    if isinstance(value, list):
        return ";".join(value)
    if isinstance(value, dict):
        return ";".join(f"{k}:{v}" for k, v in value.items())
    return str(value)


def _section_values(scheduler: Scheduler[Any], required_only: bool) -> dict[str, str]:
    values: dict[str, str] = {}
    placeholders = scheduler.configure_placeholders()
    for key, opt in scheduler.run_opts():
        if opt.is_required or key in placeholders:
            values[key] = _fixme(opt)
        elif not required_only:
            values[key] = _format_default(opt.default)
    return values


def dump(
    f: TextIO,
    schedulers: Iterable[str] | None = None,
    required_only: bool = False,
) -> None:
    """Writes a ``[<scheduler>]`` section with every run option of each scheduler.

    Required options get a ``#FIXME:(type) help`` placeholder, which :func:`load` refuses
    until it is replaced; optional ones their default (``None`` when unset). Schedulers
    whose module cannot be imported are skipped with a warning.
    """
    factories = _scheduler_factories()
    names = list(schedulers) if schedulers is not None else list(factories)
    unknown = [n for n in names if n not in factories]
    if unknown:
        raise ValueError(
            f"unknown scheduler(s) {', '.join(unknown)}; registered schedulers:"
            f" {', '.join(factories) or '<none>'}"
        )
    parser = new_parser(strict=False)
    make: Callable[[str], Scheduler[Any]]
    for name in names:
        make = factories[name]
        try:
            scheduler = make("_")
        except ModuleNotFoundError as e:
            logger.warning("skipping scheduler %s: its module cannot be imported (%s)", name, e)
            continue
        parser[name] = _section_values(scheduler, required_only)
        scheduler.close()
    parser.write(f, space_around_delimiters=True)


def add_missing_sections(
    path: str, schedulers: Iterable[str], required_only: bool = False
) -> tuple[list[str], list[str]]:
    """Appends a :func:`dump` section for each scheduler ``path`` has none for.

    Everything already in the file (hand-written sections, values, comments) is kept as
    it is. Returns ``(added, kept)`` scheduler names. A malformed file raises
    :class:`ConfigError` and is not touched.
    """
    existing = read_config(path)
    wanted = list(schedulers)
    added = [name for name in wanted if name not in existing]
    kept = [name for name in wanted if name in existing]
    if added:
        text = io.StringIO()
        dump(f=text, schedulers=added, required_only=required_only)
        with open(path, "rb") as f:
            current = f.read()
        separator = "\n\n" if current and not current.endswith(b"\n") else "\n" if current else ""
        with open(path, "a", encoding="utf-8") as f:
            f.write(separator + text.getvalue())
    return added, kept
