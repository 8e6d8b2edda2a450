"""What the broker's handlers share about kio entities besides building them.

``make`` (one description of a response for every version of its API) lives in
``headrace.base.kio_entities``, where the client commands build their requests with it;
handlers import it from here with the rest: ``NO_THROTTLE``, and the list fields that
request checks and metrics walk.
"""

from __future__ import annotations

from datetime import timedelta
from functools import cache
from typing import Any

from headrace.base.kio_entities import make as make

NO_THROTTLE = timedelta(0)


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
