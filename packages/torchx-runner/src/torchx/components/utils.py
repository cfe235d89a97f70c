"""Utility components: run a command, a shell line, a Python program or a small helper app.

They are building blocks for quick experiments and glue steps in a pipeline, and the
examples the TorchX docs start from (``torchx run utils.echo --msg hi``).
"""

from __future__ import annotations

import os

import torchx
from torchx import specs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Annotated  # resolved from typing when the arguments are read

__all__ = ["binary", "booth", "copy", "echo", "hydra", "python", "sh", "touch"]


def _one_cpu() -> specs.Resource:
    """The fixed resource of the small helper components."""
    return specs.Resource(cpu=1, gpu=0, memMB=1024)


def echo(
    msg: str = "hello world", image: str = torchx.IMAGE, num_replicas: int = 1
) -> specs.AppDef:
    """Prints a message (runs ``echo``).

    Args:
        msg: the message to print
        image: image to run in
        num_replicas: how many copies to run
    """
    return specs.AppDef(
        name="echo",
        roles=[
            specs.Role(
                name="echo",
                image=image,
                entrypoint="echo",
                args=[msg],
                num_replicas=num_replicas,
                resource=_one_cpu(),
            )
        ],
    )


def touch(file: str, image: str = torchx.IMAGE) -> specs.AppDef:
    """Creates a file or updates its modification time (runs ``touch``).

    Args:
        file: path of the file to touch
        image: image to run in
    """
    return specs.AppDef(
        name="touch",
        roles=[
            specs.Role(
                name="touch",
                image=image,
                entrypoint="touch",
                args=[file],
                num_replicas=1,
                resource=_one_cpu(),
            )
        ],
    )


_SHELL_ONLY = frozenset(
    [
        ".",
        ":",
        "alias",
        "bg",
        "break",
        "cd",
        "command",
        "continue",
        "eval",
        "exec",
        "exit",
        "export",
        "fg",
        "getopts",
        "hash",
        "jobs",
        "local",
        "read",
        "readonly",
        "return",
        "set",
        "shift",
        "source",
        "times",
        "trap",
        "type",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "wait",
    ]
)
"""Shell builtins no program stands for: ``utils.sh exit 3`` runs them in the shell."""


def sh(
    *args: str,
    image: str = torchx.IMAGE,
    num_replicas: int = 1,
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: str | None = None,
    env: dict[str, str] | None = None,
    max_retries: int = 0,
    mounts: list[str] | None = None,
    entrypoint: str | None = None,
) -> specs.AppDef:
    """Runs a command line through ``sh -c`` (or through ``--entrypoint``).

    Every argument is shell-quoted, so ``$VARS``, globs and ``;`` reach the command as
    literal text: ``utils.sh echo '$HOME'`` prints ``$HOME``. TorchX substitutes its
    macros (``${app_id}``, ``${replica_id}``) in the arguments first, and ``$$`` is its
    escape for a literal ``$``: the shell's own ``$$`` (its pid) is written ``$$$$``.

    Args:
        args: the command and its arguments
        image: image to run in
        num_replicas: how many copies to run
        cpu: cpus per replica
        gpu: gpus per replica
        memMB: memory per replica in MB
        h: named resource per replica, e.g. ``gpu.small``; overrides cpu, gpu and memMB
        env: environment variables, e.g. ``K1=v1,K2=v2``
        max_retries: how many times the scheduler may restart the app after a failure
        mounts: mounts into the container, e.g. ``type=bind,src=/host,dst=/job[,readonly]``
            (see the scheduler's documentation)
        entrypoint: program to run instead of ``sh``; it receives the quoted arguments
    """
    import shlex

    quoted = [shlex.quote(arg) for arg in args]
    role_env = dict(env) if env else {}
    role_env.setdefault("LOGLEVEL", os.getenv("LOGLEVEL", "WARNING"))
    if entrypoint is None:
        # the command replaces the shell (exec): a signal meant for the program (Slurm's
        # time-limit warning, a stop) reaches it, not a shell that would die of it
        command = " ".join(quoted)
        if args and args[0] not in _SHELL_ONLY:
            command = f"exec {command}"
        program, program_args = "sh", ["-c", command]
    else:
        program, program_args = entrypoint, quoted
    return specs.AppDef(
        name="sh",
        roles=[
            specs.Role(
                name="sh",
                image=image,
                entrypoint=program,
                args=program_args,
                env=role_env,
                num_replicas=num_replicas,
                max_retries=max_retries,
                resource=specs.resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
                mounts=specs.parse_mounts(mounts) if mounts else [],
            )
        ],
    )


def python(
    *args: str,
    m: str | None = None,
    c: str | None = None,
    script: str | None = None,
    image: str = torchx.IMAGE,
    name: str = "torchx_utils_python",
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: str | None = None,
    num_replicas: int = 1,
    mounts: list[str] | None = None,
) -> specs.AppDef:
    """Runs ``python`` with a module (``-m``), a code string (``-c``) or a script.

    Exactly one of ``-m``, ``-c`` and ``--script`` is required. Program arguments go after
    ``--``: ``torchx run utils.python -m my.main -- --lr 0.1``.

    Args:
        args: arguments of the program (its ``sys.argv[1:]``)
        m: module to run as the main program
        c: Python code to run (long code may hit the scheduler's argument length limit)
        script: path of the ``.py`` script to run
        image: image to run in
        name: name of the app
        cpu: cpus per replica
        gpu: gpus per replica
        memMB: memory per replica in MB
        h: named resource per replica, e.g. ``gpu.small``; overrides cpu, gpu and memMB
        num_replicas: how many copies to run
        mounts: mounts into the container, e.g. ``type=bind,src=/host,dst=/job[,readonly]``
            (see the scheduler's documentation)
    """
    given = [
        flag for flag, value in (("-m", m), ("-c", c), ("--script", script)) if value is not None
    ]
    if len(given) != 1:
        raise ValueError(
            "exactly one of `-m`, `-c` and `--script` needs to be specified"
            f" (got {', '.join(given) if given else 'none'})"
        )
    if script is not None:
        program = [script]
    elif m is not None:
        program = ["-m", m]
    else:
        program = ["-c", str(c)]
    return specs.AppDef(
        name=name,
        roles=[
            specs.Role(
                name="python",
                image=image,
                entrypoint="python",
                args=[*program, *args],
                env={"HYDRA_MAIN_MODULE": m} if m else {},
                num_replicas=num_replicas,
                resource=specs.resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
                mounts=specs.parse_mounts(mounts) if mounts else [],
            )
        ],
    )


def binary(
    *args: str,
    entrypoint: str,
    name: str = "torchx_utils_binary",
    num_replicas: int = 1,
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: str | None = None,
) -> specs.AppDef:
    """Runs any program found on the host, with no image (``image`` is ``<NONE>``).

    Args:
        args: arguments of the program
        entrypoint: the program to run (a path, or a name looked up on ``PATH``)
        name: name of the app
        num_replicas: how many copies to run
        cpu: cpus per replica
        gpu: gpus per replica
        memMB: memory per replica in MB
        h: named resource per replica, e.g. ``gpu.small``; overrides cpu, gpu and memMB
    """
    return specs.AppDef(
        name=name,
        roles=[
            specs.Role(
                name="binary",
                image=specs.NONE,
                entrypoint=entrypoint,
                args=[*args],
                num_replicas=num_replicas,
                resource=specs.resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
            )
        ],
    )


def copy(
    src: str,
    dst: str,
    image: str = torchx.IMAGE,
    mounts: list[str] | None = None,
) -> specs.AppDef:
    """Copies one file from ``src`` to ``dst``; both may be any fsspec URL (no directories).

    Args:
        src: URL or path of the file to copy, e.g. ``s3://bucket/a.txt``
        dst: URL or path to copy it to; missing parent directories are created
        image: image to run in (must have torchx-runner installed)
        mounts: mounts into the container, e.g. ``type=bind,src=/host,dst=/job[,readonly]``
            (see the scheduler's documentation)
    """
    return specs.AppDef(
        name="torchx-utils-copy",
        roles=[
            specs.Role(
                name="torchx-utils-copy",
                image=image,
                entrypoint="python",
                args=["-m", "torchx.apps.utils.copy_main", "--src", src, "--dst", dst],
                resource=_one_cpu(),
                mounts=specs.parse_mounts(mounts) if mounts else [],
            )
        ],
    )


def booth(
    x1: float,
    x2: float,
    trial_idx: int = 0,
    tracker_base: str = "/tmp/torchx-util-booth",  # noqa: S108 (upstream default)
    image: str = torchx.IMAGE,
) -> specs.AppDef:
    """Evaluates the Booth function ``(x1 + 2*x2 - 7)^2 + (2*x1 + x2 - 5)^2``.

    A toy objective for hyper-parameter search; read the result with
    ``FsspecResultTracker(tracker_base)[trial_idx]`` (``{"booth_eval": value}``).

    Args:
        x1: first coordinate
        x2: second coordinate
        trial_idx: index of the trial (the key the result is stored under)
        tracker_base: fsspec URL or directory where results are stored
        image: image to run in (must have torchx-runner installed)
    """
    return specs.AppDef(
        name="torchx-utils-booth",
        roles=[
            specs.Role(
                name="torchx-utils-booth",
                image=image,
                entrypoint="python",
                args=[
                    "-m",
                    "torchx.apps.utils.booth_main",
                    "--x1",
                    str(x1),
                    "--x2",
                    str(x2),
                    "--trial_idx",
                    str(trial_idx),
                    "--tracker_base",
                    tracker_base,
                ],
                resource=_one_cpu(),
            )
        ],
    )


_HYDRA_RESOLVERS = {
    "torchx.app_id": specs.macros.app_id,
    "torchx.replica_id": specs.macros.replica_id,
    "torchx.rank0_env": specs.macros.rank0_env,
    "torchx.img_root": specs.macros.img_root,
}


def hydra(
    *overrides: str,
    config_name: Annotated[str, "-cn"],
    config_dir: Annotated[str, "-cd"] = ".torchx",
) -> specs.AppDef:
    """Builds the app from a Hydra config whose ``app`` node targets ``torchx.specs.AppDef``.

    The config ``<config_dir>/<config_name>.yaml`` is composed with the overrides and its
    ``app`` node is instantiated. TorchX macros are written as resolvers:
    ``${torchx.app_id:}``, ``${torchx.replica_id:}``, ``${torchx.rank0_env:}`` and
    ``${torchx.img_root:}``. Set ``TORCHX_DEBUG=1`` to print the composed config. Needs
    ``hydra-core`` (``pip install 'torchx-runner[hydra]'``). Example config::

        app:
          _target_: torchx.specs.AppDef
          name: trainer
          roles:
            - _target_: torchx.specs.Role
              name: trainer
              image: my_image
              entrypoint: python
              args: [-m, my.trainer, --run, "${torchx.app_id:}"]

    Args:
        overrides: Hydra overrides, e.g. ``app.name=other``
        config_name: name of the config file (without ``.yaml``) in the config directory
        config_dir: directory holding the configs (relative to the current directory)
    """
    try:
        from hydra import compose, initialize_config_dir
        from hydra.utils import instantiate
        from omegaconf import OmegaConf
    except ImportError as e:
        raise ImportError(
            f"utils.hydra needs hydra-core ({e}); install it with"
            " `pip install 'torchx-runner[hydra]'`"
        ) from e

    for resolver, macro in _HYDRA_RESOLVERS.items():
        # Escaped so OmegaConf keeps the literal ${...} for the scheduler to substitute.
        OmegaConf.register_new_resolver(resolver, lambda m=macro: "\\" + m, replace=True)
    with initialize_config_dir(config_dir=os.path.abspath(config_dir), version_base="1.3"):
        cfg = compose(config_name=config_name, overrides=list(overrides))
    if os.environ.get("TORCHX_DEBUG"):
        print(OmegaConf.to_yaml(cfg))
    if "app" not in cfg:
        raise ValueError(
            f"Hydra config {config_name!r} in {os.path.abspath(config_dir)} has no `app` node;"
            " add `app:` with `_target_: torchx.specs.AppDef`"
        )
    app = instantiate(cfg.app, _convert_="all")
    if not isinstance(app, specs.AppDef):
        raise TypeError(
            f"the `app` node of Hydra config {config_name!r} built a {type(app).__name__};"
            " set `app._target_: torchx.specs.AppDef`"
        )
    return app
