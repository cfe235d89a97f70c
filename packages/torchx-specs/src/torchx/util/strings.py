"""String normalisation for names that schedulers restrict (e.g. Kubernetes labels)."""

__all__ = [
    "check_env_names",
    "check_file_name",
    "connection_problem",
    "escape_unprintable",
    "normalize_str",
]

MAX_FILE_NAME = 200
"""Longest role or app name a scheduler uses as a file name (255 bytes less a suffix)."""

_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def normalize_str(data: str) -> str:
    """Drops one leading ``-``, lower-cases, and keeps only ``[a-z0-9-]``."""
    if data.startswith("-"):
        data = data[1:]
    return "".join(ch for ch in data.lower() if ch in _ALLOWED)


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


def check_env_names(role_name: str, env: "dict[str, str]") -> None:
    """Refuses env var names that are not shell identifiers (``[A-Za-z_][A-Za-z0-9_]*``):
    schedulers write them into shell commands (``export NAME=...``), where any other name
    is either an error on the node or a way to run a command."""
    for name in env:
        if not name or name[0] not in _IDENT_START or not set(name) <= _IDENT:
            raise ValueError(
                f"env var name {name!r} of role {role_name!r} is not a shell identifier;"
                " use letters, digits and '_' (not starting with a digit)"
            )


def escape_unprintable(text: str) -> str:
    """``text`` with line breaks, escape sequences and other unprintable characters written
    as Python escapes (``\\n``, ``\\x1b``): safe on one line of a script comment or an
    error message, where they could end the line early or rewrite the terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


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
