"""Message search: the records of a topic's partitions within a time range, scanned up
to a bound, kept when their key, value or a value's JSON path matches.

Step by step:

1. the range's first offset of each partition is the first record at or after its
   start (ListOffsets by timestamp), or the log start; its last, the one before the
   first record at or after its end, or the end of the log;
2. the partitions are read from those offsets with one consumer (read_committed unless
   asked otherwise), and each record is decoded as the message browser shows it;
3. a record is kept when it matches every condition given: its key equals ``key``, its
   shown value holds ``value_contains``, its value read as JSON matches ``json_path``
   (``_json_path.py``), and its timestamp lies within the range (timestamps need not
   grow with offsets);
4. the scan stops after ``max_scanned`` records, or once ``limit`` have matched, or
   after ``SCAN_SECONDS``, whichever comes first, and the page says which.

Nothing is indexed: a search reads the range's records, which is why it is bounded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from ._cluster import ClusterReader, Message
from ._codecs import Decoder, decode
from ._json_path import path_matcher

MAX_SCANNED, MAX_MATCHES, SCAN_SECONDS = 100_000, 500, 10.0


@dataclass(frozen=True)
class Query:
    key: str | None = None
    value_contains: str | None = None
    json_path: str | None = None
    from_ms: int | None = None
    to_ms: int | None = None
    partitions: list[int] | None = None
    max_scanned: int = 10_000
    limit: int = 100
    read_committed: bool = True

    def __post_init__(self) -> None:
        if self.json_path:
            path_matcher(self.json_path)  # a path that does not parse is refused at once
        if self.from_ms is not None and self.to_ms is not None and self.to_ms < self.from_ms:
            raise ValueError("the time range ends before it starts")


@dataclass
class Found:
    matches: list[Message] = field(default_factory=list)
    scanned: int = 0
    in_range: int = 0  # records between the range's first and last offsets
    stopped: str | None = None  # why the scan ended before the range did
    problem: str | None = None


async def search(cluster: ClusterReader, topic: str, query: Query) -> Found:
    info = await cluster.topic(topic)
    if info is None:
        raise LookupError(f"topic {topic!r} does not exist")
    tps = [
        TopicPartition(topic, p["partition"])
        for p in info["partitions"]
        if query.partitions is None or p["partition"] in query.partitions
    ]
    bounds = {
        TopicPartition(topic, p["partition"]): (p["start_offset"], p["end_offset"])
        for p in info["partitions"]
    }
    consumer = AIOKafkaConsumer(
        **cluster.client_options,
        enable_auto_commit=False,
        isolation_level="read_committed" if query.read_committed else "read_uncommitted",
    )
    decoder = Decoder(cluster.registry)
    keep = _matcher(query)
    found = Found()
    await consumer.start()
    try:
        ranges = await _ranges(consumer, tps, bounds, query)
        found.in_range = sum(stop - first for first, stop in ranges.values())
        await _scan(consumer, ranges, query, decoder, keep, found)
    finally:
        await consumer.stop()
    found.problem = decoder.problem
    found.matches.sort(key=lambda m: (m.timestamp, m.partition, m.offset))
    return found


async def _ranges(
    consumer: AIOKafkaConsumer,
    tps: list[TopicPartition],
    bounds: dict[TopicPartition, tuple[int, int]],
    query: Query,
) -> dict[TopicPartition, tuple[int, int]]:
    """Step 1: each partition's [first, stop) offsets of the time range."""

    async def at(ms: int | None) -> dict[TopicPartition, Any]:
        return {} if ms is None else await consumer.offsets_for_times({tp: ms for tp in tps})

    starts, ends = await asyncio.gather(
        at(query.from_ms), at(query.to_ms + 1 if query.to_ms is not None else None)
    )
    ranges = {}
    for tp in tps:
        low, high = bounds[tp]
        first = low if query.from_ms is None else _offset(starts.get(tp), high)
        stop = high if query.to_ms is None else _offset(ends.get(tp), high)
        if first < stop:
            ranges[tp] = (first, stop)
    return ranges


def _offset(found: Any, otherwise: int) -> int:
    return otherwise if found is None else int(found.offset)


async def _scan(
    consumer: AIOKafkaConsumer,
    ranges: dict[TopicPartition, tuple[int, int]],
    query: Query,
    decoder: Decoder,
    keep: Callable[[Message], bool],
    found: Found,
) -> None:
    """Steps 2 to 4."""
    max_scanned = max(1, min(query.max_scanned, MAX_SCANNED))
    limit = max(1, min(query.limit, MAX_MATCHES))
    consumer.assign(list(ranges))
    for tp, (first, _stop) in ranges.items():
        consumer.seek(tp, first)
    open_ = dict(ranges)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SCAN_SECONDS
    while open_:
        if loop.time() > deadline:
            found.stopped = f"the scan took more than {SCAN_SECONDS:g} s"
            return
        batches = await consumer.getmany(*open_, timeout_ms=200, max_records=1000)
        for tp, records in batches.items():
            stop = open_[tp][1] if tp in open_ else -1
            wanted = [r for r in records if r.offset < stop][: max_scanned - found.scanned]
            if decoder.needs_registry("auto"):  # the registry's answers block: a thread
                messages = await asyncio.to_thread(_messages, wanted, decoder)
            else:
                messages = _messages(wanted, decoder)
            for record, message in zip(wanted, messages, strict=True):
                found.scanned += 1
                if _in_time(record.timestamp, query) and keep(message):
                    found.matches.append(message)
                    if len(found.matches) >= limit:
                        found.stopped = f"{limit} records matched"
                        return
                if found.scanned >= max_scanned:
                    found.stopped = f"{max_scanned:,} records were scanned"
                    return
        for tp in list(open_):  # done: read to the range's end (markers hold no record)
            if await consumer.position(tp) >= open_[tp][1]:
                del open_[tp]


def _messages(records: list[Any], decoder: Decoder) -> list[Message]:
    return [
        Message(
            record.partition,
            record.offset,
            record.timestamp,
            decoder.decode(record.key, "auto"),
            decoder.decode(record.value, "auto"),
            [(k, decode(v, "string") or "") for k, v in record.headers],
        )
        for record in records
    ]


def _in_time(timestamp: int, query: Query) -> bool:
    return (query.from_ms is None or timestamp >= query.from_ms) and (
        query.to_ms is None or timestamp <= query.to_ms
    )


def _matcher(query: Query) -> Callable[[Message], bool]:
    path = path_matcher(query.json_path) if query.json_path else None

    def keep(message: Message) -> bool:
        if query.key is not None and message.key != query.key:
            return False
        if query.value_contains and query.value_contains not in (message.value or ""):
            return False
        if path is not None:
            try:
                document = json.loads(message.value or "")
            except ValueError:
                return False
            return path(document)
        return True

    return keep
