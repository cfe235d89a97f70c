"""``torchx check`` probes of ``local_docker``: the daemon (which endpoint, its version)
and whether the built-in components' default image is on the host or pullable."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from torchx.schedulers._docker.client import from_env
from torchx.util.readiness import ReadinessCheck, not_ready, probe, ready
from torchx.workspace.docker_workspace import _daemon_address, daemon_unavailable, docker_sdk

TIMEOUT_S = 3.0


class _Daemon:
    """The three read-only Engine API calls the probes make, over the light client where
    it can talk to the daemon (local socket, plain TCP), else through the docker SDK."""

    def __init__(self) -> None:
        self.engine = from_env()
        self.address = self.engine.address if self.engine is not None else _daemon_address()

    def _sdk(self) -> Any:
        return docker_sdk().from_env(timeout=int(TIMEOUT_S)).api

    def version(self) -> dict[str, Any]:
        if self.engine is not None:
            found: dict[str, Any] = self.engine._json("GET", "/version", timeout=TIMEOUT_S)
            return found
        return dict(self._sdk().version())

    def inspect_image(self, image: str) -> None:
        if self.engine is not None:
            self.engine._json("GET", f"/images/{quote(image, safe='/:@')}/json", timeout=TIMEOUT_S)
        else:
            self._sdk().inspect_image(image)

    def inspect_distribution(self, image: str) -> None:
        """What the image's registry says about it: a read-only call, no pull."""
        if self.engine is not None:
            path = f"/distribution/{quote(image, safe='/:@')}/json"
            self.engine._json("GET", path, timeout=TIMEOUT_S)
        else:
            self._sdk().inspect_distribution(image)


def daemon_check(daemon: _Daemon) -> ReadinessCheck:
    try:
        version = daemon.version()
    except Exception as e:
        error = daemon_unavailable(e, daemon.address)
        found, _, fix = str(error).partition("; ")
        return not_ready("daemon", found, fix)
    return ready(
        "daemon",
        f"Docker {version.get('Version', '?')} (API {version.get('ApiVersion', '?')})"
        f" at {daemon.address}",
    )


def image_check(daemon: _Daemon, image: str) -> ReadinessCheck:
    """The image is on the host, or its registry would serve it (no pull is made)."""
    try:
        daemon.inspect_image(image)
        return ready("default image", f"{image} is on this host")
    except Exception as e:  # the light client's EngineError or the SDK's NotFound
        if getattr(e, "status_code", None) != 404:
            raise
    try:
        daemon.inspect_distribution(image)
    except Exception as e:
        reason = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        return not_ready(
            "default image",
            f"{image} is not on this host and its registry did not serve it ({reason})",
            f"`docker pull {image}` where its registry is reachable, or pass --image with an"
            " image this host has",
        )
    return ready("default image", f"{image} is not on this host; its registry serves it")


def checks(image: str) -> list[ReadinessCheck]:
    fix = "see `torchx --log_level DEBUG check -s local_docker`"
    daemon = _Daemon()
    checks = [probe("daemon", lambda: daemon_check(daemon), fix)]
    if checks[0].status == "ready":
        checks.append(probe("default image", lambda: image_check(daemon, image), fix))
    return checks
