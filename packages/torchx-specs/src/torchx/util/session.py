"""The id of this launcher process's session, shared with the jobs it launches.

The id is a uuid4 created once per process (or inherited from the environment when a
torchx process launches another one) and written into every role's environment.
"""

import os

from torchx.settings import ENV_TORCHX_INTERNAL_SESSION_ID

__all__ = [  # and CURRENT_SESSION_ID (module __getattr__)
    "ENV_TORCHX_INTERNAL_SESSION_ID",
    "TORCHX_INTERNAL_SESSION_ID",
    "get_session_id_or_create_new",
    "get_torchx_session_id",
]

TORCHX_INTERNAL_SESSION_ID = ENV_TORCHX_INTERNAL_SESSION_ID
"""Compatibility alias of :data:`torchx.settings.ENV_TORCHX_INTERNAL_SESSION_ID`."""

_current: dict[str, str] = {}


def get_session_id_or_create_new() -> str:
    """This process's session id: inherited from the environment, else a new uuid4."""
    session_id = _current.get("id")
    if session_id is None:
        session_id = os.environ.get(ENV_TORCHX_INTERNAL_SESSION_ID) or _new_id()
        _current["id"] = session_id
    return session_id


def get_torchx_session_id() -> str | None:
    """The session id if one was created or inherited, else ``None``."""
    return _current.get("id") or os.environ.get(ENV_TORCHX_INTERNAL_SESSION_ID) or None


def __getattr__(name: str) -> object:
    # upstream kept the session id in a module global, None until first created
    if name == "CURRENT_SESSION_ID":
        return _current.get("id")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _new_id() -> str:
    """A random (version 4) UUID string.

    Built from ``os.urandom`` directly: ``import uuid`` also imports ``platform``, which
    costs a noticeable share of the CLI's start-up.
    """
    value = int.from_bytes(os.urandom(16), "big")
    value &= ~(0xC000 << 48)  # RFC 4122 variant: bits 10xx in octet 8
    value |= 0x8000 << 48
    value &= ~(0xF000 << 64)  # version 4 in the high nibble of octet 6
    value |= 4 << 76
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
