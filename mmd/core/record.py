"""``Record``: the base of the core's value classes (entries, notes, options, parsed files).

Owns: equality, hashing, ``repr`` and ``replace`` over a class's ``__slots__``, the
way ``@dataclass(frozen=True, slots=True)`` gives them. Never: builds classes at
import time. Why not dataclasses: importing :mod:`dataclasses` pulls in
:mod:`inspect` (with :mod:`ast`, :mod:`dis`, :mod:`tokenize`) and each decorated
class compiles its methods at import; together about 10 ms of every one-shot
``mmctl read`` (issue 17). Subclasses write their own ``__init__`` (fast to call,
checked by mypy) and are treated as immutable: nothing assigns an attribute after
``__init__``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Self

__all__ = ["Record"]


class Record:
    """Equality, hash, repr and :meth:`replace` over ``__slots__`` (all of them, in order, are the fields)."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{self.__class__.__qualname__}({shown})"

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied (``dataclasses.replace``).

        Raises:
            TypeError: for a name that is not a field.
        """
        values = {name: getattr(self, name) for name in self.__slots__}
        unknown = changes.keys() - values.keys()
        if unknown:
            raise TypeError(f"{self.__class__.__qualname__} has no field {sorted(unknown)[0]!r}")
        values.update(changes)
        return self.__class__(**values)
