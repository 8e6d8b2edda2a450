"""Build kio entities the same way for every version of an API.

kio generates one dataclass per API version; a field that a version lacks is simply not
there. Handlers describe a response once, with every field any version has, and
``make`` keeps the ones the target class defines, so a handler reads as one function,
not one per version.
"""

from __future__ import annotations

from dataclasses import fields
from datetime import timedelta
from functools import cache
from typing import Any, TypeVar, cast

T = TypeVar("T")

NO_THROTTLE = timedelta(0)


@cache
def _field_names(cls: Any) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def make(cls: type[T], **values: Any) -> T:
    names = _field_names(cast(Any, cls))
    if names.issuperset(values):  # the newest version has them all: nothing to drop
        return cls(**values)
    return cls(**{k: v for k, v in values.items() if k in names})


@cache
def list_fields(cls: Any) -> tuple[str, ...]:
    """The names of an entity class's list fields (declared as tuples, nullable or
    not); none for a class that is not an entity. Request checks and metrics walk a
    request or response through these, found once per class."""
    declared = getattr(cls, "__dataclass_fields__", {})
    return tuple(name for name, f in declared.items() if str(f.type).startswith("tuple["))


def entity_lists(entity: Any) -> list[tuple[Any, ...]]:
    """The non-empty lists of entities an entity holds (its topics, a topic's
    partitions), not lists of plain values."""
    found = []
    for name in list_fields(entity.__class__):
        value = getattr(entity, name)
        if value and hasattr(value[0], "__dataclass_fields__"):
            found.append(value)
    return found
