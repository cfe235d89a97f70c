"""``torchx check`` probes of the ``ray`` scheduler: the dashboard answers (which address,
from where), the Ray version, and the alive nodes with their resources."""

from __future__ import annotations

from torchx.schedulers._ray.client import RayApiError, RayJobsClient, resolve_address
from torchx.util.readiness import ReadinessCheck, not_ready, ready

TIMEOUT_S = 3.0


def checks(dashboard_address: str | None) -> list[ReadinessCheck]:
    try:
        address, origin = resolve_address(dashboard_address)
    except RayApiError as e:
        found, _, fix = str(e).partition("; ")
        return [not_ready("dashboard", found, fix)]
    client = RayJobsClient(address, origin, timeout=TIMEOUT_S)
    try:
        version = client.version()
    except RayApiError as e:
        found, _, fix = str(e).partition("; ")
        return [not_ready("dashboard", found, fix or "use a newer Ray on the cluster")]
    checks = [
        ready("dashboard", f"Ray {version.get('ray_version')} at {client.shown} (from {origin})")
    ]
    try:
        nodes = client.nodes()
    except RayApiError as e:
        found, _, fix = str(e).partition("; ")
        return [*checks, not_ready("nodes", found, fix)]
    alive = [n for n in nodes if (n.get("raylet") or {}).get("state") == "ALIVE"]
    if not alive:
        return [
            *checks,
            not_ready("nodes", "no node is alive", "start the cluster's nodes (`ray start`)"),
        ]
    totals: dict[str, float] = {}
    for node in alive:
        for name, amount in ((node.get("raylet") or {}).get("resourcesTotal") or {}).items():
            if name.startswith("node:") or "object" in name.lower():
                continue
            totals[name] = totals.get(name, 0.0) + float(amount)
    shown = ", ".join(
        f"memory {totals[k] / 2**30:.1f} GiB" if k == "memory" else f"{k} {totals[k]:g}"
        for k in sorted(totals)
    )
    return [*checks, ready("nodes", f"{len(alive)} alive: {shown}")]
