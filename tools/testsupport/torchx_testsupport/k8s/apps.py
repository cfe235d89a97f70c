"""What the kubernetes scheduler's tests submit, and helpers to read what the stand-in made."""

from __future__ import annotations

from typing import Any

from torchx_testsupport.k8s.server import FakeKubernetes

NS = "default"


def app(replicas: int = 2, name: str = "trainer") -> Any:
    """A one-role app (role ``train``, image ``img:1``) with ``replicas`` replicas."""
    from torchx.specs import AppDef, Resource, Role

    role = Role(
        "train",
        "img:1",
        entrypoint="python",
        args=["-m", "train"],
        num_replicas=replicas,
        resource=Resource(cpu=1, gpu=0, memMB=2048),
    )
    return AppDef(name, [role])


def cfg(job_type: str, **extra: object) -> dict[str, object]:
    """Run options for ``job_type``: Volcano's default queue, or no Kueue queue (``-``)."""
    return {"queue": "default" if job_type == "volcano" else "-", "job_type": job_type, **extra}


def replica_pod(fake: FakeKubernetes, app_id: str, replica: int) -> str:
    """The name of the pod of replica ``replica`` of role ``train`` of ``app_id``."""
    name = app_id.rpartition(":")[2]
    pods = fake.pod_names(NS, f"app.kubernetes.io/instance={name}")
    mine = [p for p in pods if f"-train-{replica}-" in p]
    assert len(mine) == 1, pods
    return mine[0]
