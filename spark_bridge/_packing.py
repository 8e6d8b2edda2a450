"""Offset ranges packed into Spark partitions, each read through one consumer.

A consumer assigned several partitions fetches all of them in one request per round
trip and keeps every partition's next fetch in flight while Python takes the last
one apart; a consumer per partition pays its set-up (connection, metadata) once per
range and waits a round trip per partition fetch. Reading three partitions of 100,000
records in-process (``benchmarks/spark_read.py``'s reader), one consumer for all
ranges ran at 1.3-1.6x the raw librdkafka rate where a consumer per range, one range
after another, reached 0.5-0.8x. So a read asks for as many Spark partitions as can
run at once, not one per topic-partition: by default the CPUs the planning process
may use (in local mode, Spark's own cores), or ``maxPartitions`` when given (a
cluster with more executor cores than its driver).

Packing is greedy by size, largest range first, into the least loaded partition, so
the partitions carry similar record counts; each partition's ranges are then sorted
by topic and partition, so the same input always gives the same plan.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ._offsets import OffsetRange


def default_partition_count() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform
        return os.cpu_count() or 1


def pack_ranges(ranges: Sequence[OffsetRange], partitions: int) -> list[list[OffsetRange]]:
    """At most ``partitions`` non-empty groups holding every non-empty range once."""
    if partitions <= 0:
        raise ValueError(f"partitions must be positive, got {partitions}")
    sized = sorted((r for r in ranges if r.size > 0), key=lambda r: (-r.size, r.topic, r.partition))
    groups: list[list[OffsetRange]] = [[] for _ in range(min(partitions, len(sized)))]
    loads = [0] * len(groups)
    for r in sized:
        lightest = loads.index(min(loads))
        groups[lightest].append(r)
        loads[lightest] += r.size
    return [sorted(g, key=lambda r: (r.topic, r.partition)) for g in groups]
