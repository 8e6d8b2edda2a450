"""The query parameters of interactive queries, checked before any store is read.

Every problem is a :class:`BadQuery` (a :class:`QueryError`), which the route answers as a ``400`` with its
message: a client that sends a wrong parameter learns which and why, and never gets a
``500``. Names no route takes are refused too, so a misspelt ``?form=`` does not
silently widen a query.

Times are epoch milliseconds, both bounds inclusive, as Kafka Streams'
``fetch(key, timeFrom, timeTo)`` takes them. ``limit`` caps the entries one answer
holds (:data:`DEFAULT_LIMIT` when not given, never above :data:`MAX_LIMIT`), so no
request makes an instance build an answer of unbounded size.

>>> parse_limit({"limit": "5"}), parse_limit({})
(5, 100)
>>> parse_time_bounds({"from": "10", "to": "20"})
TimeBounds(time_from=10, time_to=20)
>>> parse_time_bounds({"from": "20", "to": "10"})
Traceback (most recent call last):
...
headrace.streams.runtime._query_params.BadQuery: 'from' (20) is after 'to' (10)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import NamedTuple

DEFAULT_LIMIT = 100
MAX_LIMIT = 10_000
# The largest time a window or session store holds (8-byte signed big-endian times).
MAX_TIME = (1 << 63) - 1


class QueryError(Exception):
    """A query that cannot be answered with data: answered with ``status`` and the
    message, plus ``context`` (the store and key asked for) in the JSON body."""

    status = 400

    def __init__(self, message: str, **context: object) -> None:
        super().__init__(message)
        self.context = context


class BadQuery(QueryError):
    """A request the caller must change: ``400``."""


class TimeBounds(NamedTuple):
    time_from: int
    time_to: int


def check_names(params: Mapping[str, str], allowed: Collection[str], what: str) -> None:
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        takes = ", ".join(sorted(allowed)) or "no parameters"
        raise BadQuery(f"unknown query parameter {unknown[0]!r}: {what} takes {takes}")


def _integer(
    params: Mapping[str, str], name: str, default: int, low: int, high: int, what: str
) -> int:
    """Parameter ``name`` as an integer in ``[low, high]`` (``default`` when absent)."""
    raw = params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadQuery(f"{name!r} must be {what}, got {raw!r}") from None
    if not low <= value <= high:
        raise BadQuery(f"{name!r} must be between {low} and {high}, got {value}")
    return value


def parse_time_bounds(params: Mapping[str, str]) -> TimeBounds:
    """``from`` and ``to`` (both optional, inclusive); ``from`` may not be after ``to``."""
    millis = "epoch milliseconds (an integer)"
    time_from = _integer(params, "from", 0, 0, MAX_TIME, millis)
    time_to = _integer(params, "to", MAX_TIME, 0, MAX_TIME, millis)
    if time_from > time_to:
        raise BadQuery(f"'from' ({time_from}) is after 'to' ({time_to})")
    return TimeBounds(time_from, time_to)


def parse_limit(params: Mapping[str, str]) -> int:
    return _integer(params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT, "an integer")
