"""What static typing needs at run time, without importing :mod:`typing`.

Why: on this interpreter ``import typing`` (and the :mod:`re` it loads) costs about a
tenth of a ``torchx run``. Modules on a command's path write their annotations as strings
(``from __future__ import annotations``), import typing's names under ``TYPE_CHECKING``,
and take from here the two things that must exist at run time:

* :func:`overload`: the type checker sees :func:`typing.overload`; at run time only the
  implementation that follows the overloads counts, so the decorator returns its argument.
* :class:`GenericBase`: a base class that makes ``Cls[X]`` work (subscription and
  subclassing ``Cls[X]``), as :class:`typing.Generic` does; the type checker sees
  ``Generic[_T]``.
"""

from types import GenericAlias

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Generic, TypeVar, overload

    _T = TypeVar("_T")

    class GenericBase(Generic[_T]):
        pass

else:

    def overload(fn):
        """:func:`typing.overload` for the type checker; nothing at run time."""
        return fn

    class GenericBase:
        """``Cls[X]`` at run time, as :class:`typing.Generic` offers it."""

        __slots__ = ()
        __class_getitem__ = classmethod(GenericAlias)


__all__ = ["GenericBase", "overload"]
