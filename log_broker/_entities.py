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
    return cls(**{k: v for k, v in values.items() if k in names})
