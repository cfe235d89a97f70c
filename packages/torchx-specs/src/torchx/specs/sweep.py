"""Sweeps and arrays: many apps of one shape submitted as one (``torchx run --sweep``).

A hyper-parameter sweep, or "the same job over 500 shards", is N apps that differ only in
their arguments. Submitted one by one they hit per-user job limits and are lost track of;
every scheduler TorchX drives has a native form for them instead (a Slurm job array, a
Kubernetes Indexed Job, an AWS Batch array job). :class:`AppArray` is that form in the
contract: one role, the elements' arguments and environments beside it, and how many may
run at once. A scheduler that runs arrays says so (``Scheduler.supports_arrays``) and
renders an ``AppArray`` as its one native request; each element sees its index and the
sweep's size in ``$TORCHX_ARRAY_INDEX`` and ``$TORCHX_ARRAY_SIZE``.

The element's *position* is its place in this submission (the scheduler's own array index);
its *index* is its place in the sweep, kept when the failed elements of a sweep are
submitted again (``torchx run --retry-failed``), so a retried element sees the index it had.
"""

from __future__ import annotations

from itertools import product
from shlex import quote

from torchx.specs.api import AppDef, Role
from torchx.specs.replica_macros import ReplicaMacros
from torchx.util.startup.lazy_dataclass import dataclass, field, shallow_copy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


__all__ = [
    "ENV_ARRAY_INDEX",
    "ENV_ARRAY_SIZE",
    "AppArray",
    "ArrayElement",
    "app_array",
    "shell_dispatch",
    "sweep_values",
]

ENV_ARRAY_INDEX = "TORCHX_ARRAY_INDEX"
"""The element's index in its sweep (0..N-1), in every element's environment."""
ENV_ARRAY_SIZE = "TORCHX_ARRAY_SIZE"
"""The sweep's number of elements, in every element's environment."""

_SAME_SHAPE = (
    "entrypoint",
    "image",
    "base_image",
    "num_replicas",
    "min_replicas",
    "max_retries",
    "retry_policy",
    "resource",
    "port_map",
    "metadata",
    "mounts",
    "workspace",
)
"""What every element of an array shares: they differ only in args and env."""


@dataclass
class ArrayElement:
    """One element of an :class:`AppArray`.

    Attributes:
        index: its index in the sweep (``$TORCHX_ARRAY_INDEX``).
        args: the role's arguments for this element.
        env: the environment this element adds to the role's.
        values: the swept arguments that made it (``{"lr": "0.1"}``), for status.
    """

    index: int
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)


@dataclass
class AppArray(AppDef):
    """An app run once per element, submitted as one array.

    ``roles`` holds the one role the elements share (image, resources, entrypoint, the
    env common to all; no args); each :class:`ArrayElement` gives its own ``args`` and
    extra ``env``. Build one with
    :func:`app_array` (from apps of one shape) or ``Runner.dryrun_sweep`` (from a
    component and the values of its arguments).

    Attributes:
        elements: the elements, in submission order (their positions).
        size: the sweep's size (``$TORCHX_ARRAY_SIZE``); more than ``len(elements)`` when
            only some of a sweep's elements are submitted again.
        max_parallel: at most this many elements run at once (``None``: no limit).
    """

    elements: list[ArrayElement] = field(default_factory=list)
    size: int = 0
    max_parallel: int | None = None

    @property
    def role(self) -> Role:
        """The role every element runs."""
        return self.roles[0]

    def element_role(self, position: int) -> Role:
        """The role element ``position`` runs: the shared role with the element's args,
        its env, and ``$TORCHX_ARRAY_INDEX``/``$TORCHX_ARRAY_SIZE``."""

        element = self.elements[position]
        role = shallow_copy(self.role)
        role.args = list(element.args)
        role.env = {**self.role.env, **element.env, **self.array_env(position)}
        return role

    def array_env(self, position: int) -> dict[str, str]:
        """``$TORCHX_ARRAY_INDEX`` and ``$TORCHX_ARRAY_SIZE`` of element ``position``."""
        return {
            ENV_ARRAY_INDEX: str(self.elements[position].index),
            ENV_ARRAY_SIZE: str(self.size_of()),
        }

    def indices(self) -> list[int]:
        """The sweep index of each element, by position."""
        return [e.index for e in self.elements]

    def values(self) -> list[dict[str, str]]:
        """The swept values of each element, by position."""
        return [dict(e.values) for e in self.elements]

    def record(self) -> dict[str, Any]:
        """What a scheduler keeps with the submission for ``describe``: each element's
        index and values, and the sweep's size (JSON-able)."""
        return {"indices": self.indices(), "values": self.values(), "size": self.size_of()}

    def size_of(self) -> int:
        """The sweep's size (``size``, else the number of elements)."""
        return self.size or len(self.elements)


def app_array(
    apps: Sequence[AppDef],
    *,
    max_parallel: int | None = None,
    values: Sequence[Mapping[str, str]] | None = None,
    indices: Sequence[int] | None = None,
    size: int | None = None,
) -> AppArray:
    """One :class:`AppArray` of ``apps`` (submitit's ``map_array`` in TorchX terms).

    Every app must be one role of one replica, and all of the same shape: the same image,
    entrypoint, resources, mounts and retries; they may differ in their args and env.

    Args:
        apps: the elements, in order.
        max_parallel: at most this many run at once.
        values: what each element was made from (shown by status), by position.
        indices: each element's index in its sweep (default: its position).
        size: the sweep's size (default: the number of apps).

    Returns:
        The array, named after the first app.

    Raises:
        ValueError: no apps, an app of several roles or replicas, apps of different
            shapes, a bad ``max_parallel``.
    """
    if not apps:
        raise ValueError("a sweep needs at least one element; give it one value or more")
    if max_parallel is not None and max_parallel < 1:
        raise ValueError(f"max_parallel={max_parallel}: it must be at least 1 (or None)")
    if values is not None and len(values) != len(apps):
        raise ValueError(f"{len(values)} values for {len(apps)} apps; give one per app")
    if indices is not None and len(indices) != len(apps):
        raise ValueError(f"{len(indices)} indices for {len(apps)} apps; give one per app")
    roles = [_single_role(app, i) for i, app in enumerate(apps)]
    first = roles[0]
    for i, role in enumerate(roles[1:], start=1):
        if role.name != first.name:
            raise ValueError(
                f"element {i} of the sweep runs role {role.name!r}, element 0 role"
                f" {first.name!r}: a sweep's elements run one role"
            )
        for attr in _SAME_SHAPE:
            if getattr(role, attr) != getattr(first, attr):
                raise ValueError(
                    f"element {i} of the sweep differs from element 0 in its {attr}"
                    f" ({getattr(role, attr)!r} vs {getattr(first, attr)!r}): a sweep's"
                    " elements may differ only in their args and env"
                )
    common = dict(first.env)
    for role in roles[1:]:
        common = {k: v for k, v in common.items() if role.env.get(k, None) == v}

    shared = shallow_copy(first)
    shared.env = common
    shared.args = []  # each element's are its own
    elements = [
        ArrayElement(
            index=indices[i] if indices is not None else i,
            args=list(role.args),
            env={k: v for k, v in role.env.items() if k not in common},
            values=dict(values[i]) if values is not None else {},
        )
        for i, role in enumerate(roles)
    ]
    return AppArray(
        name=apps[0].name,
        roles=[shared],
        metadata=dict(apps[0].metadata),
        elements=elements,
        size=size if size is not None else len(apps),
        max_parallel=max_parallel,
    )


def _single_role(app: AppDef, position: int) -> Role:
    if len(app.roles) != 1 or app.roles[0].num_replicas != 1:
        shape = (
            f"{len(app.roles)} roles"
            if len(app.roles) != 1
            else f"{app.roles[0].num_replicas} replicas"
        )
        raise ValueError(
            f"element {position} of the sweep ({app.name!r}) has {shape}: each element of a"
            " sweep must be one role of one replica (a single-node app); run multi-node"
            " apps one by one"
        )
    return app.roles[0]


def sweep_values(sweep: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """Every combination of the swept values (their Cartesian product), the first
    argument's values varying slowest: ``{"a": ["1", "2"], "b": ["x", "y"]}`` gives
    ``a=1,b=x``, ``a=1,b=y``, ``a=2,b=x``, ``a=2,b=y``."""

    names = list(sweep)
    return [dict(zip(names, combo, strict=True)) for combo in product(*(sweep[n] for n in names))]


def shell_dispatch(
    array: AppArray, position_expr: str, macro_values: Mapping[str, str] | None = None
) -> str:
    """A POSIX ``sh`` script that runs the element at position ``position_expr`` (a shell
    expression: ``$SLURM_ARRAY_TASK_ID``, ``$JOB_COMPLETION_INDEX``...) with its env and
    arguments, by ``exec``; a position out of range exits 2 with one line.

    Every value reaches the script through :func:`shlex.quote`, the one quoting of this
    context. ``macro_values`` (``app_id``, ``replica_id``...) are substituted in each
    element's args and env first."""

    lines = [f'case "{position_expr}" in']
    for position, element in enumerate(array.elements):
        args, own_env = element.args, element.env
        if macro_values is not None:
            args, own_env = ReplicaMacros(args, own_env).apply(dict(macro_values))
        env = {**own_env, **array.array_env(position)}
        exports = " ".join(f"{k}={quote(v)}" for k, v in env.items())
        argv = " ".join(quote(a) for a in [array.role.entrypoint, *args])
        lines.append(f"  {position}) export {exports}; exec {argv} ;;")
    lines.append(
        f'  *) echo "torchx: no element at position {position_expr} of this array" >&2; exit 2 ;;'
    )
    lines.append("esac")
    return "\n".join(lines) + "\n"
