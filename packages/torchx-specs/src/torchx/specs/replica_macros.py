"""The macros of one role's args and env, substituted for each of many replicas, cheaply.

Every container scheduler turns a role into one request per replica. Substituting
:class:`~torchx.specs.api.macros` with ``Values.apply`` deep-copies the role each time,
which dominates the dry run of a 10,000-replica role. :class:`ReplicaMacros` compiles the
templates once (only strings holding a ``$``) and says whether any of them depends on the
replica, so a scheduler can compute one result and reuse it for every replica.
"""

from __future__ import annotations

from torchx.util.startup.macro_template import MacroTemplate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["ReplicaMacros"]


class ReplicaMacros:
    """``args`` and ``env`` of a role with their macros substituted for a given mapping."""

    __slots__ = ("_args", "_env", "_templated_args", "_templated_env", "per_replica")

    def __init__(self, args: Iterable[str], env: Mapping[str, str]) -> None:
        self._args = list(args)
        self._env = dict(env)
        self._templated_args = [(i, MacroTemplate(a)) for i, a in enumerate(self._args) if "$" in a]
        self._templated_env = [(k, MacroTemplate(v)) for k, v in self._env.items() if "$" in v]
        templates = [t for _, t in self._templated_args] + [t for _, t in self._templated_env]
        self.per_replica = any("replica_id" in t.template for t in templates)
        """Whether any arg or env value mentions ``replica_id`` (else: one result fits all)."""

    def apply(self, mapping: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        """``(args, env)`` with the macros of ``mapping`` (``macros.Values.to_dict()``
        keys) substituted; unknown ``${...}`` stay as they are. Both are new objects."""
        args = list(self._args)
        for i, template in self._templated_args:
            args[i] = template.safe_substitute(mapping)
        env = dict(self._env)
        for key, template in self._templated_env:
            env[key] = template.safe_substitute(mapping)
        return args, env
