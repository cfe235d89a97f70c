"""String normalisation for names that schedulers restrict (e.g. Kubernetes labels)."""

import re

from torchx.util.log import get_logger

__all__ = [
    "carried_env",
    "check_env_names",
    "check_file_name",
    "connection_problem",
    "escape_unprintable",
    "is_shell_name",
    "normalize_str",
    "terminal_bytes",
    "terminal_text",
]

_log = get_logger("torchx.env")

MAX_FILE_NAME = 200
"""Longest role or app name a scheduler uses as a file name (255 bytes less a suffix)."""

_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def normalize_str(data: str) -> str:
    """Lower-cases, keeps only ``[a-z0-9-]`` and drops the leading ``-``s (a Kubernetes
    name cannot start with one: an app named ``--job`` becomes ``job``, as upstream's head
    has it)."""
    return "".join(ch for ch in data.lower() if ch in _ALLOWED).lstrip("-")


def check_file_name(what: str, name: str) -> str:
    """``name`` if it can be one path component (a role's log directory, an app's state
    directory); else a one-line ``ValueError`` naming the rule, so a name such as
    ``../../x`` never writes outside the directory meant for it."""
    problem = None
    if not name or name in (".", ".."):
        problem = "is empty, '.' or '..'"
    elif "/" in name:
        problem = "contains '/'"
    elif not name.isprintable():
        problem = "contains a control character"
    elif len(name.encode("utf-8", "surrogateescape")) > MAX_FILE_NAME:
        problem = f"is longer than {MAX_FILE_NAME} bytes"
    if problem is None:
        return name
    shown = name if len(name) <= 60 else name[:57] + "..."
    raise ValueError(
        f"{what} {shown!r} {problem}; it names a directory here, so use letters, digits, '-',"
        f" '_' or '.' (at most {MAX_FILE_NAME} bytes)"
    )


_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_IDENT = _IDENT_START | frozenset("0123456789")


def is_shell_name(name: str) -> bool:
    """Whether ``name`` can be a shell variable: ``[A-Za-z_][A-Za-z0-9_]*``."""
    return bool(name) and name[0] in _IDENT_START and set(name) <= _IDENT


def check_env_names(role_name: str, env: "dict[str, str]") -> None:
    """Refuses the env var names no backend can set: empty, holding NUL, or starting with
    '=' (the part before the first '=' is what a process sees as the name)."""
    for name in env:
        problem = None
        if not name or name.startswith("="):
            problem = "is empty before its first '='"
        elif "\0" in name:
            problem = "contains a NUL character"
        if problem:
            raise ValueError(
                f"env var name {escape_unprintable(name)!r} of role {role_name!r} {problem};"
                " use letters, digits and '_' (not starting with a digit)"
            )


def carried_env(role_name: str, env: "dict[str, str]") -> "dict[str, str]":
    """``env`` as every backend sets it, names a shell cannot use included.

    Upstream TorchX handed such names to the backend as they were, and real projects rely
    on it (``TORCH_CUDA_SANITIZER=1`` as a name). A name holding '=' reaches a process as
    the OS reads ``NAME=VALUE``: ``TORCH_CUDA_SANITIZER`` with the value ``1=`` + value, as
    upstream's Slurm passed it. Other names (``MY-VAR``) are set as given. Each is warned
    about in one line (values are never shown); names no backend can set are refused
    (:func:`check_env_names`). Backends pass names as data or quoted, never as shell text.
    """
    check_env_names(role_name, env)
    carried: dict[str, str] = {}
    for name, value in env.items():
        if is_shell_name(name):
            carried[name] = value
            continue
        shown = escape_unprintable(name)
        if "=" in name:
            head, _, rest = name.partition("=")
            if head in env or head in carried:
                raise ValueError(
                    f"env var names {shown!r} and {head!r} of role {role_name!r} both set"
                    f" {head} (a name holding '=' sets what precedes it); keep one"
                )
            _log.warning(
                "env var name %r of role %r holds '=': the role gets %s with its value"
                " prefixed by %r, as upstream TorchX passed it; fix the name if that is not"
                " what you meant",
                shown,
                role_name,
                escape_unprintable(head),
                escape_unprintable(rest) + "=",
            )
            carried[head] = f"{rest}={value}"
        else:
            _log.warning(
                "env var name %r of role %r is not a shell identifier: it is set as given,"
                " but only a program (os.environ, getenv), not a shell, can read it",
                shown,
                role_name,
            )
            carried[name] = value
    return carried


def escape_unprintable(text: str) -> str:
    """``text`` with line breaks, escape sequences and other unprintable characters written
    as Python escapes (``\\n``, ``\\x1b``): safe on one line of a script comment or an
    error message, where they could end the line early or rewrite the terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


_CONTROL = "\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f\\u202a-\\u202e\\u2066-\\u2069"
"""What a terminal acts on rather than shows, but tab, line feed and carriage return: C0
(ESC starts every CSI and OSC sequence), DEL, C1 (8-bit CSI and OSC) and the bidi
overrides that reorder what follows them."""

_CONTROL_BYTES = (
    b"[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f]|\\xc2[\\x80-\\x9f]"
    b"|\\xe2\\x80[\\xaa-\\xae]|\\xe2\\x81[\\xa6-\\xa9]"
)
""":data:`_CONTROL` in UTF-8."""


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str, *, keep_cr: bool = False) -> str:
    """``text`` (a job's own words: an exception's message, a log tail, a metric's name)
    as data on a terminal: every control character but tab and line feed is written as
    ``\\x1b``/``\\u202e``, so it cannot move the cursor, recolour, retitle or rewrite
    what TorchX prints around it. ``keep_cr`` keeps carriage returns: a log view puts the
    replica's prefix after each, so a progress bar redraws only its own line."""

    pattern = f"[{_CONTROL}]" if keep_cr else f"[\\r{_CONTROL}]"
    return re.sub(pattern, lambda m: _escaped(m.group()), text)


def terminal_bytes(data: bytes, *, keep_cr: bool = False) -> bytes:
    """:func:`terminal_text` of UTF-8 ``data``, without decoding it (a log read in raw
    chunks)."""

    pattern = _CONTROL_BYTES if keep_cr else b"\\r|" + _CONTROL_BYTES
    return re.sub(
        pattern, lambda m: _escaped(m.group().decode("utf-8", "surrogateescape")).encode(), data
    )


_CONNECTION_PROBLEMS = (
    ("Connection refused", "connection refused"),
    ("Name or service not known", "unknown host"),
    ("nodename nor servname", "unknown host"),
    ("timed out", "timed out"),
    ("No route to host", "no route to host"),
    ("Permission denied", "permission denied"),
    ("CERTIFICATE_VERIFY_FAILED", "TLS certificate not trusted"),
)


def connection_problem(reason: object) -> str:
    """A few words for why a connection failed (``connection refused``, ``unknown host``,
    ...) from an exception or its reason, else the reason's first line: what the one-line
    "cannot reach ..." errors of every backend say."""
    text = str(reason)
    for needle, short in _CONNECTION_PROBLEMS:
        if needle in text:
            return short
    return text.splitlines()[0][:200] if text.strip() else type(reason).__name__
