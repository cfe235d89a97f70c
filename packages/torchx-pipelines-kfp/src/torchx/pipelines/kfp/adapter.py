"""TorchX apps as Kubeflow Pipelines (KFP 2.x) container steps.

An app of one role with one replica becomes one container step: the role's image,
entrypoint (the container's command), args, env, CPU and memory (each set as both request
and limit; fractional CPUs as millicores), GPUs and ``max_retries`` (the task's retry
policy). Macros become KFP placeholders where KFP has one: ``${app_id}`` is the pipeline
job's id, joined to the text around it with a ``ConcatPlaceholder`` (a placeholder inside
a plain string would stay literal text); ``${replica_id}`` is ``0``; ``${rank0_env}``
names ``TORCHX_RANK0_HOST``, set to ``localhost`` (the step is its own rank 0).

An app that cannot be one container (several roles or replicas) is refused in one line
that says how to run it instead. Nothing here imports another TorchX plugin distribution.

    from kfp import dsl
    from torchx.components.utils import echo
    from torchx.pipelines.kfp.adapter import container_from_app

    @dsl.pipeline
    def pipeline() -> None:
        first = container_from_app(echo(msg="hello", image="python:3.11"))
        container_from_app(echo(msg="world", image="python:3.11")).after(first)
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from torchx.specs.api import AppDef, Role, macros
from torchx.util.strings import carried_env, check_env_names, escape_unprintable

__all__ = ["component_from_app", "component_spec_from_app", "container_from_app"]

RANK0_ENV = "TORCHX_RANK0_HOST"
GPU_RESOURCE = "nvidia.com/gpu"
_MACRO = re.compile(
    r"\$\{(app_id|replica_id|img_root|rank0_env)\}|\$(app_id|replica_id|img_root|rank0_env)\b"
)


class UnsupportedAppError(ValueError):
    """The app cannot be one KFP container step."""


def _single_role(app: AppDef) -> Role:
    if len(app.roles) != 1:
        names = ", ".join(r.name for r in app.roles)
        raise UnsupportedAppError(
            f"app {app.name!r} has {len(app.roles)} roles ({names}); a KFP step runs one"
            " container: give each role its own step, or run the app from a step through a"
            " TorchX scheduler (a step whose command is `torchx run -s kubernetes ...`)"
        )
    role = app.roles[0]
    if role.num_replicas != 1:
        raise UnsupportedAppError(
            f"role {role.name!r} of app {app.name!r} has {role.num_replicas} replicas; a KFP"
            " step runs one container: run the app from a step through a TorchX scheduler"
            " (a step whose command is `torchx run -s kubernetes ...`), which gang-schedules"
            " its replicas"
        )
    return role


def _static(text: str) -> str:
    """``text`` with the macros that have a fixed value in a one-container step replaced."""
    values = {"replica_id": "0", "img_root": "", "rank0_env": RANK0_ENV}
    return _MACRO.sub(lambda m: values.get(m.group(1) or m.group(2), m.group(0)), text)


_KFP_PLACEHOLDER = "{{$"


def _check_literal(role: Role, what: str, text: str) -> None:
    """Refuses KFP placeholder syntax (``{{$.inputs...}}``) in a value of the role: the KFP
    launcher would replace it (reading the step's inputs, outputs or the pipeline's
    metadata) instead of passing the text on, and KFP has no way to escape it."""
    if _KFP_PLACEHOLDER in text:
        raise UnsupportedAppError(
            f"{what} {escape_unprintable(text[:200])!r} of role {role.name!r} holds KFP"
            " placeholder syntax '{{$', which the KFP launcher would replace rather than pass"
            " on; remove it (use the TorchX macros, such as ${app_id}, for job metadata)"
        )


def _arg(text: str) -> Any:
    """One argument: a plain string, or a ``ConcatPlaceholder`` where it holds ``${app_id}``."""
    from kfp import dsl

    text = _static(text)
    if macros.app_id not in text:
        return text
    parts: list[Any] = []
    for i, piece in enumerate(text.split(macros.app_id)):
        if i:
            parts.append(dsl.PIPELINE_JOB_ID_PLACEHOLDER)
        if piece:
            parts.append(piece)
    return dsl.ConcatPlaceholder(parts) if len(parts) > 1 else parts[0]


def _component_name(app: AppDef, role: Role) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", f"{app.name}-{role.name}".lower()).strip("-")
    return name or "torchx-step"


def _component(app: AppDef) -> tuple[Any, Role]:
    from kfp import dsl

    role = _single_role(app)
    _check_literal(role, "entrypoint", role.entrypoint)
    for arg in role.args:
        _check_literal(role, "argument", arg)
    for name, value in role.env.items():
        _check_literal(role, f"env var {name}", value)
    check_env_names(role.name, role.env)
    command = [_arg(role.entrypoint)]
    args = [_arg(a) for a in role.args]

    def step() -> dsl.ContainerSpec:
        return dsl.ContainerSpec(image=role.image, command=command, args=args)

    # KFP reads the return annotation as an object; this module's annotations are strings
    step.__annotations__["return"] = dsl.ContainerSpec
    step.__name__ = _component_name(app, role).replace("-", "_")
    step.__doc__ = f"TorchX app {app.name!r}, role {role.name!r}"
    return dsl.container_component(step), role


def component_spec_from_app(app: AppDef) -> tuple[str, Role]:
    """``(the step's KFP component spec as IR YAML, its role)``; the spec has the image,
    command and args. Env, resources and retries are task settings in KFP 2, applied by
    :func:`container_from_app`."""

    from kfp import compiler

    component, role = _component(app)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "component.yaml"
        compiler.Compiler().compile(component, str(path))
        return path.read_text(), role


def component_from_app(app: AppDef) -> Any:
    """A KFP 2.x component factory for ``app`` (call it inside a ``@dsl.pipeline`` function
    to add a step; :func:`container_from_app` does that and applies the role's settings)."""
    component, _ = _component(app)
    return component


def container_from_app(app: AppDef, *args: Any, **kwargs: Any) -> Any:
    """Adds ``app`` as a step of the pipeline being defined and returns its task, with the
    role's env, resources and retry policy set. Call it inside a ``@dsl.pipeline``."""
    component, role = _component(app)
    task = component(*args, **kwargs)

    for name, value in carried_env(role.name, role.env).items():
        static = _static(value)
        if macros.app_id in static:
            raise UnsupportedAppError(
                f"env var {name} of role {role.name!r} uses ${{app_id}}, which a KFP task's"
                " environment cannot hold (only arguments take placeholders); pass it as an"
                " argument instead"
            )
        task.set_env_variable(name, static)
    task.set_env_variable(RANK0_ENV, "localhost")
    resource = role.resource
    if resource.cpu > 0:
        cpu = _cpu(resource.cpu)
        task.set_cpu_request(cpu)
        task.set_cpu_limit(cpu)
    if resource.memMB > 0:
        memory = f"{int(resource.memMB)}M"
        task.set_memory_request(memory)
        task.set_memory_limit(memory)
    if resource.gpu > 0:
        task.set_accelerator_type(GPU_RESOURCE)
        task.set_accelerator_limit(int(resource.gpu))
    if role.max_retries > 0:
        task.set_retry(num_retries=int(role.max_retries))
    task.set_display_name(_component_name(app, role))
    return task


def _cpu(cpu: float) -> str:
    """CPUs as KFP takes them: whole numbers plain, fractions as millicores (``500m``)."""
    return str(int(cpu)) if float(cpu).is_integer() else f"{round(cpu * 1000)}m"
