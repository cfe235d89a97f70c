"""One test per behaviour, run on every backend: what the ``backend`` fixture
(tests/conftest.py) hands a test.

A test written against :class:`Backend` runs ``torchx`` as a user does (``torchx run -s
NAME -cfg ...``), in a directory of its own, on each backend this machine has up: a
backend that is down is a visible skip, or a failure where its ``TORCHX_REQUIRE_*`` is set
(CI). Apps still running when the test ends are cancelled.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from torchx_testsupport import backend_missing, http_ok

__all__ = ["BACKENDS", "Backend", "backend_up"]

BACKENDS = ("local_cwd", "local_docker", "slurm", "kubernetes", "aws_batch", "ray")
"""The backends a loop behaviour is tested on (each with what it needs started by
``tools/<backend>-up.sh``: docker, slurm, k8s, moto for aws_batch, ray)."""

TORCHX = str(Path(sys.executable).parent / "torchx")
_HANDLE = re.compile(rf"^(?:{'|'.join(BACKENDS)})://\S+$", re.MULTILINE)


class Backend:
    """A backend as the CLI meets it: its scheduler name, run options and image."""

    def __init__(self, name: str, cwd: Path, cfg: dict[str, str], image: str | None) -> None:
        self.name = name
        self.cwd = cwd
        self.cfg = cfg
        self.image = image
        self.env = {**os.environ, "LOGLEVEL": "WARNING"}
        self.handles: list[str] = []

    def __repr__(self) -> str:
        return f"Backend({self.name})"

    @property
    def image_args(self) -> list[str]:
        """``--image IMAGE`` for a component, where the backend runs images."""
        return ["--image", self.image] if self.image else []

    def torchx(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        """``torchx ARGS`` in the test's directory; the handles it prints are remembered."""
        proc = subprocess.run(
            [TORCHX, *args], cwd=self.cwd, env=self.env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
        self.handles += _HANDLE.findall(proc.stdout)
        return proc

    def run(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        """``torchx run -s NAME [-cfg ...] ARGS``."""
        cfg = ["-cfg", ",".join(f"{k}={v}" for k, v in self.cfg.items())] if self.cfg else []
        if self.image and "--workspace" not in args:
            cfg += ["--workspace", ""]  # no image build (no registry here) unless asked
        return self.torchx("run", "-s", self.name, *cfg, *args, timeout=timeout)

    def cancel_left_over(self) -> None:
        for handle in dict.fromkeys(self.handles):
            self.torchx("cancel", handle, timeout=60)


def backend_up(name: str) -> str:
    """Why ``name`` cannot run apps here ("" when it can)."""
    if name == "local_cwd":
        return ""
    if name == "slurm":
        try:
            ping = subprocess.run(
                ["scontrol", "ping"], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError) as e:
            return f"no Slurm cluster ({e}); run tools/slurm-up.sh"
        return "" if "is UP" in ping.stdout else "no Slurm controller; run tools/slurm-up.sh"
    if name == "local_docker":
        return "" if _docker_answers() else "no Docker daemon; run tools/docker-up.sh"
    if name == "aws_batch":
        from torchx_testsupport.batch import emulator_answers

        if not emulator_answers():
            return "no AWS emulator answers; run tools/moto-up.sh"
        return (
            "" if _docker_answers() else "no Docker daemon for moto's jobs; run tools/docker-up.sh"
        )
    if name == "ray":
        from torchx_testsupport.ray import DASHBOARD

        if not http_ok(f"{DASHBOARD}/api/version", timeout=5):
            return f"no Ray dashboard at {DASHBOARD}; run tools/ray-up.sh"
        return ""
    from torchx_testsupport.k8s.cluster import ADMIN

    if not ADMIN.exists():
        return f"no Kubernetes cluster (no kubeconfig at {ADMIN}); run tools/k8s-up.sh"
    return ""


def _docker_answers() -> bool:
    import docker

    try:
        docker.from_env(timeout=5).ping()
    except Exception:
        return False
    return True


_REQUIRE = {
    "slurm": "TORCHX_REQUIRE_SLURM",
    "kubernetes": "TORCHX_REQUIRE_K8S",
    "local_docker": "TORCHX_REQUIRE_DOCKER",
    "aws_batch": "TORCHX_REQUIRE_MOTO",
    "ray": "TORCHX_REQUIRE_RAY",
}
_BATCH_QUEUE = f"torchx-backend-{uuid.uuid4().hex[:8]}"
"""One job queue in the emulator for this test process's aws_batch backend."""


@contextmanager
def backend_for(name: str, tmp_path: Path) -> Iterator[Backend]:
    """The :class:`Backend` ``name`` for one test (skipped, or failed under its
    ``TORCHX_REQUIRE_*``, when it is down)."""
    problem = backend_up(name)
    if problem:
        backend_missing(_REQUIRE[name], problem)
    cwd = tmp_path / "work"
    cwd.mkdir(exist_ok=True)
    if name == "kubernetes":
        with _kubernetes(cwd) as backend:
            yield backend
        return
    backend = _plain(name, cwd)
    try:
        yield backend
    finally:
        backend.cancel_left_over()


def _plain(name: str, cwd: Path) -> Backend:
    """A backend whose set-up is its environment and run options."""
    from torchx_testsupport.docker import IMAGE

    if name == "local_docker":
        return Backend(name, cwd, {}, IMAGE)
    if name == "aws_batch":
        from torchx_testsupport.batch import AWS_ENV, create_queue

        backend = Backend(name, cwd, {"queue": _BATCH_QUEUE}, IMAGE)
        for key in ("AWS_PROFILE", "AWS_REGION", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
            backend.env.pop(key, None)
        backend.env.update(AWS_ENV, AWS_EC2_METADATA_DISABLED="true")
        with mock.patch.dict(os.environ, AWS_ENV):
            create_queue(_BATCH_QUEUE)  # reused when this process made it already
        return backend
    if name == "ray":
        from torchx_testsupport.ray import DASHBOARD

        backend = Backend(name, cwd, {}, None)
        for key in ("RAY_API_SERVER_ADDRESS", "RAY_AUTH_TOKEN"):
            backend.env.pop(key, None)
        backend.env["RAY_ADDRESS"] = DASHBOARD
        return backend
    return Backend(name, cwd, {}, None)


@contextmanager
def _kubernetes(cwd: Path) -> Iterator[Backend]:
    """The Kubernetes backend in a namespace of its own, deleted at the end."""
    from kubernetes import client, config

    from torchx_testsupport.k8s.cluster import ADMIN, IMAGE

    core = client.CoreV1Api(config.new_client_from_config(str(ADMIN)))
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace({"metadata": {"name": namespace}})
    try:
        _wait_for_service_account(core, namespace)
        cfg = {"queue": "-", "job_type": "batch", "namespace": namespace}
        backend = Backend("kubernetes", cwd, cfg, IMAGE)
        backend.env["KUBECONFIG"] = str(ADMIN)
        backend.env.pop("KUBERNETES_SERVICE_HOST", None)
        yield backend
    finally:
        core.delete_namespace(namespace)


def _wait_for_service_account(core: object, namespace: str) -> None:
    """Pods are refused until the namespace's default ServiceAccount exists."""
    import time

    deadline = time.monotonic() + 60
    while not core.list_namespaced_service_account(namespace).items:  # type: ignore[attr-defined]
        if time.monotonic() > deadline:
            raise AssertionError(f"namespace {namespace} never got its default ServiceAccount")
        time.sleep(0.1)
