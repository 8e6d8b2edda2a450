"""Offsets as Spark's Kafka source spells them, and the ranges one read covers.

An offset spec is ``"earliest"``, ``"latest"`` or JSON per partition such as
``{"orders": {"0": 23, "1": -2}}`` where -2 means earliest and -1 latest. Resolution
turns a spec into concrete offsets once the partitions and their bounds are known;
planning turns a start and an end into one ``OffsetRange`` per topic-partition. All
of it is plain data: no client, no Spark.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from ._errors import OffsetRangeError, OptionError

EARLIEST = -2
LATEST = -1


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class Bounds(NamedTuple):
    """The readable offsets of one partition: ``earliest`` (log start) and ``latest``
    (the high watermark, or the last stable offset under read_committed)."""

    earliest: int
    latest: int


@dataclass(frozen=True)
class OffsetRange:
    """Records ``start <= offset < end`` of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


OffsetSpec = str | dict[TopicPartition, int]  # "earliest" | "latest" | per partition


def parse_offset_spec(text: str, *, option: str, allow_earliest: bool = True) -> OffsetSpec:
    """Parse ``earliest``, ``latest`` or the per-partition JSON form."""
    word = text.strip().lower()
    if word in ("earliest", "latest"):
        if word == "earliest" and not allow_earliest:
            raise OptionError(f"{option}: 'earliest' is not allowed here")
        return word
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise OptionError(f"{option}: expected earliest, latest or JSON, got {text!r}") from exc
    if not isinstance(raw, dict):
        raise OptionError(f"{option}: JSON must map topic -> {{partition: offset}}")
    spec: dict[TopicPartition, int] = {}
    for topic, parts in raw.items():
        if not isinstance(parts, dict):
            raise OptionError(f"{option}: offsets of topic {topic!r} must be an object")
        for partition, offset in parts.items():
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < EARLIEST:
                raise OptionError(f"{option}: bad offset {offset!r} for {topic}/{partition}")
            if offset == EARLIEST and not allow_earliest:
                raise OptionError(f"{option}: -2 (earliest) is not allowed here")
            try:
                spec[TopicPartition(str(topic), int(partition))] = offset
            except ValueError as exc:
                raise OptionError(f"{option}: bad partition {partition!r}") from exc
    return spec


def to_json_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Concrete offsets in Spark's JSON shape (what a streaming checkpoint stores)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def from_json_offsets(raw: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {
        TopicPartition(topic, int(p)): int(o)
        for topic, parts in raw.items()
        for p, o in parts.items()
    }


def resolve(
    spec: OffsetSpec,
    bounds: Mapping[TopicPartition, Bounds],
    *,
    option: str,
    fail_on_data_loss: bool = True,
) -> dict[TopicPartition, int]:
    """Concrete offsets for every partition in ``bounds``.

    Partitions the JSON form does not name start at earliest (a partition added later
    has nothing older to skip). An explicit offset below the log start is data loss:
    an error, or the log start when ``fail_on_data_loss`` is off.
    """
    if isinstance(spec, str):
        return {tp: (b.earliest if spec == "earliest" else b.latest) for tp, b in bounds.items()}
    unknown = sorted(set(spec) - set(bounds))
    if unknown:
        raise OptionError(f"{option}: no such partition(s): {unknown}")
    out: dict[TopicPartition, int] = {}
    for tp, b in bounds.items():
        wanted = spec.get(tp, EARLIEST)
        if wanted == EARLIEST:
            out[tp] = b.earliest
        elif wanted == LATEST:
            out[tp] = b.latest
        elif wanted < b.earliest:
            if fail_on_data_loss:
                raise OffsetRangeError(
                    f"{option}: offset {wanted} of {tp.topic}/{tp.partition} was deleted;"
                    f" the log starts at {b.earliest} (set failOnDataLoss=false to skip)"
                )
            out[tp] = b.earliest
        else:
            out[tp] = min(wanted, b.latest)
    return out


def plan_ranges(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    *,
    keep_empty: bool = False,
) -> list[OffsetRange]:
    """One range per partition present in ``end``, ordered by topic and partition; an
    empty one (nothing between start and end) only with ``keep_empty``.

    A partition missing from ``start`` is new since the start was taken: read it from 0.
    """
    ranges = []
    for tp in sorted(end):
        lo, hi = start.get(tp, 0), end[tp]
        if hi > lo or keep_empty:
            ranges.append(OffsetRange(tp.topic, tp.partition, lo, max(lo, hi)))
    return ranges


def cap_offsets(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_records: int
) -> dict[TopicPartition, int]:
    """Move at most ``max_records`` past ``start``, shared in proportion to each lag.

    The whole-number shares are handed out first; what rounding leaves goes to the
    partitions with the largest lag, so the total is exactly ``max_records`` when that
    much is waiting and no partition is starved for ever.
    """
    lags = {tp: max(0, hi - start.get(tp, 0)) for tp, hi in latest.items()}
    total = sum(lags.values())
    if total <= max_records:
        return dict(latest)
    share = {tp: lag * max_records // total for tp, lag in lags.items()}
    left = max_records - sum(share.values())
    for tp in sorted(lags, key=lambda t: (-(lags[t] - share[t]), t)):
        if left <= 0:
            break
        if share[tp] < lags[tp]:
            share[tp] += 1
            left -= 1
    return {tp: start.get(tp, 0) + share[tp] for tp in latest}


def topic_partitions(ranges: Iterable[OffsetRange]) -> list[TopicPartition]:
    return [TopicPartition(r.topic, r.partition) for r in ranges]
