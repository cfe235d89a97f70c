"""Typed names for ``Resource.capabilities`` entries.

A :class:`CapabilityKey` names a capability once (``"<namespace>.<name>"``) and checks the
type of the value on every read, while the storage stays a plain string-keyed dict that other
code may index directly.
"""

from __future__ import annotations

from typing import Generic, TypeVar, overload

from torchx.util.startup.lazy_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs.api import Resource

V = TypeVar("V")
D = TypeVar("D")


@dataclass(frozen=True)
class CapabilityKey(Generic[V]):
    """``CapabilityKey("k8s", "itype", str)`` names ``capabilities["k8s.itype"]``."""

    namespace: str
    name: str
    type: type[V]

    @property
    def key(self) -> str:
        return f"{self.namespace}.{self.name}"

    def set(self, resource: Resource, value: V) -> None:
        resource.capabilities[self.key] = value

    @overload
    def get(self, resource: Resource) -> V | None: ...

    @overload
    def get(self, resource: Resource, default: D) -> V | D: ...

    def get(self, resource: Resource, default: object = None) -> object:
        """The stored value, or ``default`` when absent; ``TypeError`` if of another type."""
        if self.key not in resource.capabilities:
            return default
        value = resource.capabilities[self.key]
        # bool subclasses int, yet True is never a valid count: reject it for int keys.
        wrong_bool = isinstance(value, bool) and self.type is not bool
        if wrong_bool or not isinstance(value, self.type):
            raise TypeError(
                f"capability {self.key!r} holds {value!r} ({type(value).__name__}), expected"
                f" {self.type.__name__}"
            )
        return value
