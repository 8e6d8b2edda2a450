"""One partition of one topic: the key of offsets on both sides of the protocol."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """Ordered by topic, then partition, as listings print them."""

    topic: str
    partition: int
