"""Finding and parsing ``.torchxconfig`` files, for every package that reads them.

The runner takes scheduler, component and CLI defaults from these files and trackers
(such as MLflow's) take their ``[tracker:<name>]`` settings from the same files, so which
files count and how a malformed one is reported is decided once, here.
``configparser`` is imported only when a file is actually parsed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from torchx.settings import ENV_TORCHXCONFIG

TYPE_CHECKING = False
if TYPE_CHECKING:
    import configparser
    from typing import TextIO

__all__ = [
    "CONFIG_FILE",
    "ConfigError",
    "default_config_dirs",
    "display_path",
    "find_config_files",
    "new_parser",
    "parse_config",
    "read_config",
    "strip_inline_comment",
]

CONFIG_FILE = ".torchxconfig"

# configparser's [DEFAULT] section would leak into every section; treat it as ordinary.
_NO_DEFAULT_SECTION = "\x00no-default-section"


class ConfigError(ValueError):
    """A ``.torchxconfig`` file is malformed or holds a value of the wrong type."""


def default_config_dirs() -> list[str]:
    """``[$HOME, CWD]``, computed now (they may change while a process runs)."""
    return [os.path.expanduser("~"), os.getcwd()]


def display_path(path: str) -> str:
    """``path`` with the home directory shown as ``~`` (shorter, stable error messages)."""
    home = os.path.expanduser("~")
    if home and home != os.sep and path.startswith(home + os.sep):
        return "~" + path[len(home) :]
    return path


def find_config_files(dirs: Iterable[str] | None = None) -> list[str]:
    """Paths of the config files to read, highest precedence first.

    ``$TORCHXCONFIG``, when set, is the one file read, even when ``dirs`` is given (it
    must name a file; empty disables config files). Otherwise ``<dir>/.torchxconfig`` for
    each of ``dirs`` (default ``$HOME`` and the CWD). Missing or unreadable files are
    skipped and a file reached twice (HOME is the CWD) is listed once.
    """
    env_file = os.environ.get(ENV_TORCHXCONFIG)
    if env_file is not None:
        if not env_file:
            return []
        path = os.path.expanduser(env_file)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"${ENV_TORCHXCONFIG}={env_file} is not a file; point it at a config"
                f" file, or set it to an empty string to read no config files"
            )
        return [path]
    if dirs is None:
        dirs = default_config_dirs()
    found: list[str] = []
    seen: set[str] = set()
    for directory in dirs:
        path = os.path.join(os.path.expanduser(directory), CONFIG_FILE)
        real = os.path.realpath(path)
        if real in seen or not os.path.isfile(path) or not os.access(path, os.R_OK):
            continue
        seen.add(real)
        found.append(path)
    return found


def new_parser(strict: bool = True) -> configparser.ConfigParser:
    """An INI parser as TorchX reads config files: case-sensitive keys, no interpolation,
    no special ``[DEFAULT]`` section (inline comments: see :func:`strip_inline_comment`)."""
    import configparser

    parser = configparser.ConfigParser(
        interpolation=None, default_section=_NO_DEFAULT_SECTION, strict=strict
    )
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    return parser


def parse_config(f: TextIO, path: str) -> dict[str, dict[str, str]]:
    """``{section: {key: value}}`` of open config file ``f`` (read from ``path``).

    A malformed file raises :class:`ConfigError` in one line naming the file, the line
    and the fix.
    """
    import configparser

    parser = new_parser()
    where = display_path(path)
    try:
        parser.read_file(f, source=path)
    except configparser.MissingSectionHeaderError as e:
        raise ConfigError(
            f"{where}:{e.lineno}: {e.line.strip()!r} comes before any [section] header;"
            " start the file with a section such as [local_cwd]"
        ) from None
    except configparser.DuplicateSectionError as e:
        raise ConfigError(
            f"{where}:{e.lineno}: section [{e.section}] appears twice; merge the two sections"
        ) from None
    except configparser.DuplicateOptionError as e:
        raise ConfigError(
            f"{where}:{e.lineno}: key {e.option!r} appears twice in section [{e.section}];"
            " keep only one"
        ) from None
    except configparser.ParsingError as e:
        lineno, line = e.errors[0]
        raise ConfigError(
            f"{where}:{lineno}: cannot parse {_unrepr(line).strip()!r}; expected `[section]`,"
            " `key = value` or a `#` comment"
        ) from None
    except configparser.Error as e:
        raise ConfigError(f"{where}: malformed config file: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{where}: not a UTF-8 text file ({e.reason})") from None
    return {
        name: {k: strip_inline_comment(v) for k, v in parser.items(name, raw=True)}
        for name in parser.sections()
    }


def strip_inline_comment(value: str) -> str:
    """``value`` without a ``#``/``;`` comment that whitespace precedes, on each of its lines
    (``partition = debug  # mine`` is ``debug``; a URL's ``#fragment`` stays). A value that
    is nothing but a comment is kept whole, so that ``torchx configure``'s ``#FIXME``
    placeholders are refused by name rather than read as empty."""

    lines = [re.sub(r"\s+[#;].*$", "", line) for line in value.split("\n")]
    return "\n".join(lines)


def read_config(path: str) -> dict[str, dict[str, str]]:
    """:func:`parse_config` of the file at ``path``."""
    with open(path, encoding="utf-8") as f:
        return parse_config(f, path)


def _unrepr(line: object) -> str:
    """configparser reports bad lines as ``repr(line)`` (version dependent); undo that."""
    text = str(line)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        import ast

        try:
            return str(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            return text
    return text
