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

The records are shared out evenly: the ranges, in topic and partition order, are cut
into ``count`` consecutive shares of equal size (within one record), a range split
between two shares where a share ends, so no task waits on another that got a whole
extra partition (three partitions on two cores would otherwise leave one core with
two thirds of the work). A piece of a range is read like any range: its end stops
the read even where it falls mid-log, and the same input always gives the same plan.
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
    """At most ``partitions`` non-empty groups of equal record counts (within one)
    covering every offset of the non-empty ranges exactly once."""
    if partitions <= 0:
        raise ValueError(f"partitions must be positive, got {partitions}")
    ordered = sorted((r for r in ranges if r.size > 0), key=lambda r: (r.topic, r.partition))
    total = sum(r.size for r in ordered)
    count = min(partitions, total)
    if count == 0:
        return []
    # share i holds records [total * i // count, total * (i + 1) // count) of the sequence
    cuts = [total * i // count for i in range(1, count)]
    groups: list[list[OffsetRange]] = [[]]
    seen = 0  # records of the sequence before the current range
    for r in ordered:
        start = r.start
        while cuts and cuts[0] < seen + r.size:
            stop = r.start + (cuts.pop(0) - seen)
            if stop > start:
                groups[-1].append(OffsetRange(r.topic, r.partition, start, stop))
            groups.append([])
            start = stop
        groups[-1].append(OffsetRange(r.topic, r.partition, start, r.end))
        seen += r.size
    return groups
