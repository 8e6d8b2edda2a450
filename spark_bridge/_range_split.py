"""Spark partitions planned as Spark's own Kafka source plans them.

One Spark partition per topic-partition range. When ``minPartitions`` asks for more
partitions than there are non-empty ranges, the large ranges are cut into pieces
(Spark's ``KafkaOffsetRangeCalculator``):

1. Drop empty ranges.
2. A range's share of ``minPartitions`` is its share of the records, rounded half up,
   at least 1. Ranges whose share is 1 stay whole.
3. The rest split ``minPartitions`` less the whole ranges (at least 1) among
   themselves, again by their share of the records left to them.
4. A range cut into ``n`` pieces gives piece ``i`` the integer share
   ``remaining // (n - i)``, so the last piece takes what rounding left over.

So the count is about ``minPartitions``, a little more or less after rounding, and the
same input always gives the same plan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ._offsets import OffsetRange


def _share(size: int, total: int, parts: int) -> int:
    return max(math.floor(size / total * parts + 0.5), 1)


def split_ranges(ranges: Sequence[OffsetRange], min_partitions: int) -> list[OffsetRange]:
    """The non-empty ``ranges``, the large ones cut so there are about ``min_partitions``."""
    if min_partitions <= 0:
        raise ValueError(f"minPartitions must be positive, got {min_partitions}")
    ranges = [r for r in ranges if r.size > 0]
    if len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    whole = [r for r in ranges if _share(r.size, total, min_partitions) == 1]
    split_total = total - sum(r.size for r in whole)
    split_parts = max(min_partitions - len(whole), 1)
    out: list[OffsetRange] = []
    for r in ranges:
        pieces = 1 if r in whole else _share(r.size, split_total, split_parts)
        remaining, start = r.size, r.start
        for i in range(pieces):
            this = remaining // (pieces - i)
            remaining -= this
            end = min(start + this, r.end)
            if end > start:
                out.append(OffsetRange(r.topic, r.partition, start, end))
            start = end
    return out
