"""Which of a log's oldest segments retention deletes. Pure selection, no file work."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ._config import TopicConfig
from ._segment import LogSegment


def expired_prefix(
    segments: Sequence[LogSegment], total_size: int, config: TopicConfig, now_ms: int
) -> int:
    """How many of the oldest ``segments`` (the closed ones only: the caller leaves the
    active segment out) retention.ms or retention.bytes condemns; -1 means unlimited.

    Both rules delete a prefix, so the answer is the longer of the two prefixes.
    """
    if not config.delete:
        return 0
    count = 0
    if config.retention_ms >= 0:
        by_time = 0
        for segment in segments:
            if now_ms - largest_timestamp(segment) <= config.retention_ms:
                break
            by_time += 1
        count = by_time
    if config.retention_bytes >= 0:
        excess = total_size - config.retention_bytes
        by_size = 0
        for segment in segments:
            if excess < segment.size:
                break
            excess -= segment.size
            by_size += 1
        count = max(count, by_size)
    return count


def largest_timestamp(segment: LogSegment) -> int:
    # Batches without timestamps (-1) fall back to the file's age, as Kafka does.
    if segment.max_timestamp >= 0:
        return segment.max_timestamp
    return int(os.stat(segment.path).st_mtime * 1000)
