"""Distributed PyTorch components: one role of identical nodes launched with ``torchrun``.

``dist.ddp`` starts ``torchrun`` on each node; torchrun starts ``NPROC`` workers per node
and coordinates them through a rendezvous (``c10d`` on rank 0's host by default), which
also gives elasticity (``-j MIN:MAXxNPROC``) and restarts. The rank-0 host is found
through the scheduler's ``rank0_env`` macro, so the same app runs on every scheduler::

    torchx run -s local_cwd dist.ddp -j 1x2 --script train.py -- --lr 0.1
    torchx run -s kubernetes dist.ddp -j 2:4x8 -h aws_p4d.24xlarge -m my.trainer

``dist.spmd`` is the GPU-host flavour: ``-j N`` runs one worker per GPU of ``-h``.
"""

import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

import torchx
from torchx import specs
from torchx.components.structured_arg import StructuredJArgument, StructuredNameArgument
from torchx.specs import macros
from torchx.specs.builders import ComponentArgumentError

__all__ = ["ddp", "get_role_name", "parse_nnodes", "spmd", "torchrun"]

_TORCH_DEBUG_FLAGS: dict[str, str] = {
    "CUDA_LAUNCH_BLOCKING": "1",
    "NCCL_DESYNC_DEBUG": "1",
    "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
    "TORCH_SHOW_CPP_STACKTRACES": "1",
}
"""Env vars set by ``--debug``: synchronous CUDA, NCCL desync checks, verbose c10d."""

_J_FORMS = re.compile(r"^(?:(?:(?P<min>\d+):)?(?P<max>\d+)x)?(?P<nproc>\d+)$")


def spmd(
    *args: str,
    script: str | None = None,
    m: str | None = None,
    image: str = torchx.IMAGE,
    name: str = "/",
    h: str = "gpu.small",
    j: str = "1x1",
    env: dict[str, str] | None = None,
    metadata: dict[str, str] | None = None,
    max_retries: int = 0,
    mounts: list[str] | None = None,
    debug: bool = False,
) -> specs.AppDef:
    """Single program, multiple data: one worker per GPU on each host of type ``h``.

    Same as ``dist.ddp`` except that cpu, gpu and memory come from the named resource
    ``h`` and ``-j NNODES`` (without ``xNPROC``) runs one worker per GPU of ``h``.

    Args:
        args: arguments passed to the program (after ``--``)
        script: path of the Python script to run (exclusive with ``-m``)
        m: Python module to run as the main program, e.g. ``my.trainer`` (exclusive with
            ``--script``)
        image: container image (or directory on local schedulers) to run in
        name: ``{experiment}/{run}``, ``{experiment}/``, ``/{run}`` or ``{run}``; the run
            name defaults to the script/module name and becomes the app name
        h: named resource of each host, e.g. ``gpu.small`` or ``aws_p4d.24xlarge``
        j: ``{nnodes}x{nproc_per_node}``, or ``{nnodes}`` for one worker per GPU of ``h``
        env: environment variables of the workers, e.g. ``K1=v1,K2=v2``
        metadata: scheduler metadata of the app, e.g. ``K1=v1,K2=v2``
        max_retries: how many times the scheduler may restart the app after a failure
        mounts: mounts into the workers' container, e.g.
            ``type=bind,src=/host,dst=/job[,readonly]`` (see the scheduler's documentation)
        debug: set PyTorch/NCCL debug env vars (synchronous CUDA, detailed c10d logs)
    """
    return ddp(
        *args,
        script=script,
        m=m,
        image=image,
        name=name,
        h=h,
        j=str(StructuredJArgument.parse_from(h, j)),
        env=env,
        metadata=metadata,
        max_retries=max_retries,
        mounts=mounts,
        debug=debug,
    )


def ddp(
    *script_args: str,
    script: str | None = None,
    m: str | None = None,
    image: str = torchx.IMAGE,
    name: str = "/",
    h: str | None = None,
    cpu: int = 2,
    gpu: int = 0,
    memMB: int = 1024,
    j: str = "1x2",
    env: dict[str, str] | None = None,
    metadata: dict[str, str] | None = None,
    max_retries: int = 0,
    rdzv_port: int = 29500,
    rdzv_backend: str = "c10d",
    rdzv_conf: str | None = None,
    mounts: list[str] | None = None,
    debug: bool = False,
    tee: int = 3,
) -> specs.AppDef:
    """Distributed data parallel: ``torchrun`` on every node of one role.

    Single-node jobs rendezvous on ``localhost:0`` (a free port); multi-node jobs on
    ``$RANK0_HOST:rdzv_port``, where the rank-0 host comes from the scheduler. Resources
    come from ``h`` when given, else from ``cpu``/``gpu``/``memMB``.

    Args:
        script_args: arguments passed to the script or module (after ``--``)
        script: path of the Python script to run (exclusive with ``-m``)
        m: Python module to run as the main program, e.g. ``my.trainer`` (exclusive with
            ``--script``)
        image: container image (or directory on local schedulers) to run in
        name: ``{experiment}/{run}``, ``{experiment}/``, ``/{run}`` or ``{run}``; the run
            name defaults to the script/module name and becomes the app name
        h: named resource of each node, e.g. ``gpu.small``; overrides cpu, gpu and memMB
        cpu: cpus per node
        gpu: gpus per node
        memMB: memory per node in MB
        j: ``[{min_nnodes}:]{nnodes}x{nproc_per_node}`` (e.g. ``2x4`` or elastic
            ``1:4x8``) or just ``{nproc_per_node}`` for one node; on GPU hosts
            nproc_per_node should not exceed the GPU count
        env: environment variables of the workers, e.g. ``K1=v1,K2=v2``
        metadata: scheduler metadata of the app, e.g. ``K1=v1,K2=v2``
        max_retries: how many times the scheduler may restart the app after a failure
        rdzv_port: port of the c10d store on rank 0's host (multi-node only; single-node
            jobs pick a free port)
        rdzv_backend: torchrun rendezvous backend (``c10d``, ``static``, ``etcd``...)
        rdzv_conf: extra rendezvous settings, e.g. ``join_timeout=600,timeout=600``
        mounts: mounts into the workers' container, e.g.
            ``type=bind,src=/host,dst=/job[,readonly]`` (see the scheduler's documentation)
        debug: set PyTorch/NCCL debug env vars (synchronous CUDA, detailed c10d logs)
        tee: which worker streams torchrun copies to its console and log files:
            0 none, 1 stdout, 2 stderr, 3 both
    """
    if (script is None) == (m is None):
        raise ValueError("exactly one of --script and -m must be specified")

    min_nnodes, max_nnodes, nproc_per_node, nnodes_rep = parse_nnodes(j)
    if max_nnodes == 1:
        # One torchrun agent hosts every worker: let it pick any free port.
        rdzv_endpoint: str = "localhost:0"
    else:
        # Expands (macro, then shell) to ${<RANK0 HOST VAR>:=localhost}:<port>.
        rdzv_endpoint = _NoQuote(f"$${{{macros.rank0_env}:=localhost}}:{rdzv_port}")

    run_name = StructuredNameArgument.parse_from(name=name, m=m, script=script)
    role_env = dict(env) if env else {}
    role_env["TORCHX_TRACKING_EXPERIMENT_NAME"] = run_name.experiment_name
    role_env["TORCHX_TRACKING_RUN_NAME"] = run_name.run_name
    role_env.setdefault("LOGLEVEL", os.getenv("LOGLEVEL", "WARNING"))
    if debug:
        role_env.update(_TORCH_DEBUG_FLAGS)

    cmd: list[str] = ["torchrun", "--rdzv_backend", rdzv_backend]
    if rdzv_conf is not None:
        cmd += ["--rdzv_conf", rdzv_conf]
    cmd += [
        "--rdzv_endpoint",
        rdzv_endpoint,
        "--rdzv_id",
        macros.app_id,
        "--nnodes",
        nnodes_rep,
        "--nproc_per_node",
        str(nproc_per_node),
        "--tee",
        str(tee),
        "--role",
        "",
    ]
    if rdzv_backend == "static":
        # Only the static backend needs to be told each node's rank.
        cmd += ["--node_rank", macros.replica_id]
    cmd += [script] if script is not None else ["-m", str(m)]
    cmd += script_args

    return specs.AppDef(
        name=run_name.run_name,
        roles=[
            specs.Role(
                name=get_role_name(script, m),
                image=image,
                min_replicas=min_nnodes,
                entrypoint="bash",
                args=["-c", _shell_join(cmd)],
                env=role_env,
                num_replicas=max_nnodes,
                max_retries=max_retries,
                resource=specs.resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
                port_map={"c10d": rdzv_port},
                mounts=specs.parse_mounts(mounts) if mounts else [],
            )
        ],
        metadata=dict(metadata) if metadata else {},
    )


def get_role_name(script: str | None, m: str | None) -> str:
    """Role name of a ``dist`` app: the script's stem or the module's last component."""
    if script:
        return Path(script).stem
    if m:
        return m.rpartition(".")[2]
    raise ValueError("cannot name the role: pass a script or a module (-m)")


def parse_nnodes(j: str) -> tuple[int, int, int, str]:
    """Parses ``-j``: ``MIN:MAXxNPROC``, ``NxNPROC`` or ``NPROC`` (one node).

    Returns ``(min_nnodes, max_nnodes, nproc_per_node, nnodes_for_torchrun)`` where the
    last item is ``"MIN:MAX"`` for elastic jobs and ``"N"`` otherwise.
    """
    match = _J_FORMS.match(j.strip())
    if match is None:
        raise ComponentArgumentError(
            f"Invalid format for -j {j!r}; use [MIN_NODES:]NODESxPROCS_PER_NODE or"
            " PROCS_PER_NODE, e.g. 1:2x4, 2x4 or 4"
        )
    max_text = match["max"] or "1"
    min_text = match["min"] or max_text
    nnodes_rep = f"{min_text}:{max_text}" if match["min"] else max_text
    low, high, nproc = int(min_text), int(max_text), int(match["nproc"])
    if low > high:
        raise ComponentArgumentError(
            f"-j {j}: at least {low} nodes but at most {high}; give MIN:MAX with MIN <= MAX,"
            f" e.g. {high}:{low}x{nproc}"
        )
    if min(low, high, nproc) < 1:
        raise ComponentArgumentError(f"-j {j}: nodes and processes per node must be at least 1")
    return low, high, nproc, nnodes_rep


class _NoQuote(str):
    """A command-line token that must reach the shell unquoted (it holds an expansion)."""

    __slots__ = ()


def _shell_join(args: Iterable[str]) -> str:
    """``shlex.join`` that leaves :class:`_NoQuote` tokens as they are."""
    return " ".join(a if isinstance(a, _NoQuote) else shlex.quote(a) for a in args)


def torchrun(
    *script_args: str,
    script: str | None = None,
    m: str | None = None,
    image: str = torchx.IMAGE,
    name: str = "/",
    h: str | None = None,
    cpu: int = 2,
    gpu: int = 0,
    memMB: int = 1024,
    j: str = "1x2",
    env: dict[str, str] | None = None,
    metadata: dict[str, str] | None = None,
    max_retries: int = 0,
    rdzv_port: int = 29500,
    rdzv_backend: str = "c10d",
    rdzv_conf: str | None = None,
    mounts: list[str] | None = None,
    debug: bool = False,
    tee: int = 3,
) -> specs.AppDef:
    """``torchrun`` on every node of one role: ``dist.ddp`` under upstream's newer name.

    The one difference is a bare ``-j N`` with a named host ``-h``: ``N`` nodes, each
    running one worker per GPU of that host (``dist.ddp`` reads it as ``N`` workers on
    one node, as it always did).

    Args:
        script_args: arguments passed to the script or module (after ``--``)
        script: path of the Python script to run (exclusive with ``-m``)
        m: Python module to run as the main program, e.g. ``my.trainer`` (exclusive with
            ``--script``)
        image: container image (or directory on local schedulers) to run in
        name: ``{experiment}/{run}``, ``{experiment}/``, ``/{run}`` or ``{run}``; the run
            name defaults to the script/module name and becomes the app name
        h: named resource of each node, e.g. ``gpu.small``; overrides cpu, gpu and memMB
        cpu: cpus per node
        gpu: gpus per node
        memMB: memory per node in MB
        j: ``[{min_nnodes}:]{nnodes}x{nproc_per_node}`` (e.g. ``2x4`` or elastic
            ``1:4x8``); a bare ``{n}`` is n nodes of one worker per GPU of ``h`` with a
            named host, else n workers on one node
        env: environment variables of the workers, e.g. ``K1=v1,K2=v2``
        metadata: scheduler metadata of the app, e.g. ``K1=v1,K2=v2``
        max_retries: how many times the scheduler may restart the app after a failure
        rdzv_port: port of the c10d store on rank 0's host (multi-node only; single-node
            jobs pick a free port)
        rdzv_backend: torchrun rendezvous backend (``c10d``, ``static``, ``etcd``...)
        rdzv_conf: extra rendezvous settings, e.g. ``join_timeout=600,timeout=600``
        mounts: mounts into the workers' container, e.g.
            ``type=bind,src=/host,dst=/job[,readonly]`` (see the scheduler's documentation)
        debug: set PyTorch/NCCL debug env vars (synchronous CUDA, detailed c10d logs)
        tee: which worker streams torchrun copies to its console and log files:
            0 none, 1 stdout, 2 stderr, 3 both
    """
    if h is not None and j.isdigit():
        gpus = specs.resource(h=h).gpu
        j = f"{j}x{max(1, gpus)}"
    return ddp(
        *script_args,
        script=script,
        m=m,
        image=image,
        name=name,
        h=h,
        cpu=cpu,
        gpu=gpu,
        memMB=memMB,
        j=j,
        env=env,
        metadata=metadata,
        max_retries=max_retries,
        rdzv_port=rdzv_port,
        rdzv_backend=rdzv_backend,
        rdzv_conf=rdzv_conf,
        mounts=mounts,
        debug=debug,
        tee=tee,
    )
