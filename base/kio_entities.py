"""Build kio entities the same way for every version of an API.

kio generates one dataclass per API version; a field that a version lacks is simply not
there. A request or response is described once, with every field any version has, and
``make`` keeps the ones the target class defines, so the code that builds one reads as
one function, not one per version. The broker's handlers answer with it and the client
commands ask with it.
"""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from typing import Any, TypeVar, cast

T = TypeVar("T")


@cache
def _field_names(cls: Any) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def make(cls: type[T], **values: Any) -> T:
    names = _field_names(cast(Any, cls))
    if names.issuperset(values):  # the newest version has them all: nothing to drop
        return cls(**values)
    return cls(**{k: v for k, v in values.items() if k in names})
