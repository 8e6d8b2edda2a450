"""Records as a test sees them: typed, with timestamps and headers."""

from __future__ import annotations

from typing import Any, NamedTuple

from .._record import NO_HEADERS, Headers


class TestRecord(NamedTuple):
    """A record piped into or read from a test topic (Kafka's ``TestRecord``)."""

    key: Any = None
    value: Any = None
    timestamp: int | None = None
    headers: Headers = NO_HEADERS


TestRecord.__test__ = False  # type: ignore[attr-defined]  # not a pytest test class


class ChangelogEntry(NamedTuple):
    """One write a store reported through ``log_change``, in bytes."""

    key: bytes
    value: bytes | None
    timestamp: int
