"""Which host names are this machine's loopback: the command warns about any other
address it serves on, and the server answers only to a loopback ``Host`` when it serves
on one."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback", "is_loopback_host"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback."""

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_host(host: str) -> bool:
    """Whether a ``Host`` header (``name:port``, ``[::1]:port``) names the loopback."""
    name = host.rsplit(":", 1)[0] if ":" in host.rsplit("]", 1)[-1] else host
    return is_loopback(name.strip("[]"))
