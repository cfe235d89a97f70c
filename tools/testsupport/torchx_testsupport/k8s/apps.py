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
    """Run options for ``job_type`` (``volcano`` or ``batch``) in the default queue."""
    return {"queue": "default", "job_type": job_type, **extra}


def replica_pod(fake: FakeKubernetes, app_id: str, replica: int) -> str:
    """The name of the pod of replica ``replica`` of role ``train`` of ``app_id``."""
    name = app_id.rpartition(":")[2]
    pods = fake.pod_names(NS, f"app.kubernetes.io/instance={name}")
    mine = [p for p in pods if f"-train-{replica}-" in p]
    assert len(mine) == 1, pods
    return mine[0]


def fill_torchx_jobs(fake: FakeKubernetes, count: int) -> None:
    """``count`` TorchX jobs in namespace ``default``: half Volcano jobs, half batch Jobs,
    clones of one of each submitted through the scheduler (``KUBECONFIG`` must point at
    ``fake``)."""
    import copy

    from torchx.schedulers.kubernetes_scheduler import create_scheduler
    from torchx.specs import AppDef, Resource, Role

    sched = create_scheduler("fill")
    role = Role("r", "img", entrypoint="true", resource=Resource(1, 0, 128))
    for job_type in ("volcano", "batch"):
        sched.submit(AppDef("bench", [role]), {"queue": "default", "job_type": job_type})
    with fake.cond:
        for kind in ("vcjobs", "jobs"):
            (key, template) = next(iter(fake.store[kind].items()))
            have = sum(1 for k in fake.store[kind] if k[0] == NS)
            for i in range(have, count // 2):
                clone = copy.deepcopy(template)
                name = f"{key[1][:40]}-{i:05d}"
                clone["metadata"]["name"] = name
                clone["metadata"]["labels"]["app.kubernetes.io/instance"] = name
                fake.store[kind][(NS, name)] = clone
