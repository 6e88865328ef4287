"""Read-only JSON trees: a registered tool's parameters cannot change.

:func:`freeze` deep-copies a JSON value into :class:`FrozenDict` and
:class:`FrozenList`, which are a ``dict`` and a ``list`` to every reader
(``isinstance``, ``json.dumps``, ``==``) and refuse every change with
:class:`~adil.errors.InvalidArgumentError` (also a ``TypeError``, as a
``mappingproxy`` would raise).  ``copy.copy`` and ``copy.deepcopy`` give
plain, mutable copies, to build a new tool from.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..errors import InvalidArgumentError

__all__ = ["FrozenDict", "FrozenList", "freeze", "thaw"]


def _refuse(self: object, *args: Any, **kwargs: Any) -> NoReturn:
    raise InvalidArgumentError(
        "a registered tool's parameters are read-only: copy.deepcopy() them and build a new "
        "Tool"
    )


class FrozenDict(dict[str, Any]):
    """A dict that refuses changes."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (thaw(self),))


class FrozenList(list[Any]):
    """A list that refuses changes."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (thaw(self),))


def freeze(value: Any) -> Any:
    """A read-only deep copy of a JSON value (dicts, lists and tuples,
    scalars); bounded by the caller (a checked schema is at most MAX_DEPTH
    deep and acyclic)."""
    if isinstance(value, dict):
        frozen = FrozenDict()
        dict.update(frozen, {k: freeze(v) for k, v in value.items()})
        return frozen
    if isinstance(value, list | tuple):
        items = FrozenList()
        list.extend(items, (freeze(v) for v in value))
        return items
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a (frozen or not) JSON value."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value
