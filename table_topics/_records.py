"""One record of a topic, as the table writer reads it and the row builders turn it into rows.

The consumer's own message type is not handed on: the pieces that build rows (raw key and
value columns, the registry's value columns, the upsert of a compacted topic) are tested with
records made by hand, and need nothing of the Kafka client to do so.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """A record of one partition of the topic a table follows.

    ``timestamp_ms`` is the record's timestamp as the broker serves it (create time or
    log-append time, whichever the topic keeps). ``key`` and ``value`` are ``None`` for a
    null key and for a tombstone; ``headers`` keep their order and may repeat a name, as
    Kafka's do.
    """

    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]
