"""Read positions given by time, as Spark's Kafka source takes them.

``startingTimestamp`` / ``endingTimestamp`` give one time for every partition;
``startingOffsetsByTimestamp`` / ``endingOffsetsByTimestamp`` give JSON per partition
such as ``{"orders": {"0": 1700000000000}}`` (every partition must be named, as Spark
asks). Each time becomes the first offset whose record timestamp is at or after it
(Kafka's ListOffsets by timestamp). Where no record is that late, a start follows
``startingOffsetsByTimestampStrategy``: ``error`` (the default) fails the read,
``latest`` starts at the partition's end; an end is the partition's end.

Plain data and rules only: the lookup itself is the client's (``_kafka.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ._errors import OptionError
from ._offsets import Bounds, TopicPartition

NO_MATCH_STRATEGIES = ("error", "latest")


@dataclass(frozen=True)
class TimestampSpec:
    """One time for all partitions (``everywhere``) or a time per partition."""

    option: str  # as the user wrote it, for messages
    everywhere: int | None = None
    per_partition: Mapping[TopicPartition, int] | None = None
    on_no_match: str = "error"  # starts only; an end with no match is the end

    def times(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """The time to look up for each of ``partitions``."""
        if self.everywhere is not None:
            return dict.fromkeys(partitions, self.everywhere)
        assert self.per_partition is not None
        named = set(self.per_partition)
        if named != set(partitions):
            raise OptionError(
                f"{self.option} must name every partition read, no more:"
                f" named {sorted(named)}, reading {sorted(partitions)}"
            )
        return dict(self.per_partition)


def parse_global_timestamp(text: str, *, option: str, on_no_match: str) -> TimestampSpec:
    try:
        value = int(text.strip())
    except ValueError:
        raise OptionError(f"{option}: expected a single long value, got {text!r}") from None
    return TimestampSpec(option, everywhere=value, on_no_match=on_no_match)


def parse_partition_timestamps(text: str, *, option: str, on_no_match: str) -> TimestampSpec:
    try:
        raw = json.loads(text)
        times = {
            TopicPartition(str(topic), int(p)): _long(ts)
            for topic, parts in raw.items()
            for p, ts in parts.items()
        }
    except (ValueError, AttributeError, TypeError):
        raise OptionError(
            f'{option}: expected JSON like {{"topic": {{"0": 1700000000000}}}}, got {text!r}'
        ) from None
    return TimestampSpec(option, per_partition=times, on_no_match=on_no_match)


def _long(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(value)
    return value


def no_match_strategy(raw: str | None) -> str:
    if raw is None:
        return "error"
    word = raw.strip().lower()
    if word not in NO_MATCH_STRATEGIES:
        raise OptionError(
            f"startingOffsetsByTimestampStrategy must be one of {NO_MATCH_STRATEGIES}, got {raw!r}"
        )
    return word


def check_time_order(start: TimestampSpec, end: TimestampSpec) -> None:
    """Spark's check when both ends are per-partition times: the same partitions, and no
    start later than its end."""
    if start.per_partition is None or end.per_partition is None:
        return
    if set(start.per_partition) != set(end.per_partition):
        raise OptionError(
            "startingOffsetsByTimestamp and endingOffsetsByTimestamp name different"
            f" partitions: {sorted(start.per_partition)} and {sorted(end.per_partition)}"
        )
    for tp, begin in start.per_partition.items():
        finish = end.per_partition[tp]
        if begin > finish >= 0 and begin >= 0:
            raise OptionError(
                f"startingOffsetsByTimestamp {begin} of {tp.topic}/{tp.partition} is after"
                f" its endingOffsetsByTimestamp {finish}"
            )


def resolve_times(
    spec: TimestampSpec,
    found: Mapping[TopicPartition, int],
    bounds: Mapping[TopicPartition, Bounds],
    *,
    starting: bool,
) -> dict[TopicPartition, int]:
    """Offsets from ``found`` (the lookup's answers, -1 for no match), in each partition's
    bounds; no match follows the strategy for a start and is the end for an end."""
    out: dict[TopicPartition, int] = {}
    times = spec.times(sorted(bounds))
    for tp, b in bounds.items():
        offset = found.get(tp, -1)
        if offset < 0:
            if starting and spec.on_no_match == "error":
                raise OptionError(
                    f"{spec.option}: no offset of {tp.topic}/{tp.partition} has a timestamp"
                    f" at or after {times[tp]} (set startingOffsetsByTimestampStrategy="
                    "latest to start at the end instead)"
                )
            offset = b.latest
        out[tp] = min(max(offset, b.earliest), b.latest)
    return out
