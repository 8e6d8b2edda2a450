"""The Kafka client behind the bridge: a tiny interface and its librdkafka implementation.

Everything else in the package talks to ``KafkaClient`` only, so the client library
can be swapped without touching the data source, the sink or the export job. The
implementation uses confluent-kafka (librdkafka): it fetches in C, honours
``isolation.level`` and needs no consumer group for assigned reads.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Protocol

from ._client_log import ClientLog
from ._collector import paused_between_yields
from ._deps import require
from ._errors import BrokerRequestError, OffsetRangeError
from ._offsets import Bounds, OffsetRange, TopicPartition
from ._options import Subscription

# librdkafka's timestamp types (0 none, 1 create, 2 log append) -> Spark's (0 create, 1 append)
_SPARK_TIMESTAMP_TYPE = {0: 0, 1: 0, 2: 1}
_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_PARTITION_EOF = -191
_OFFSET_OUT_OF_RANGE = 1
_AUTO_OFFSET_RESET = -140  # what librdkafka reports for out-of-range with reset=error
_TRANSPORT, _TIMED_OUT = -195, -185  # no broker answered within the call's timeout

STALL_TIMEOUT = 30.0
"""Seconds a read waits for records before failing (kafkaConsumer.pollTimeoutMs)."""

CONSUME_WAIT = 0.1
"""Seconds one ``consume`` call may wait. librdkafka's batch consume returns early only
once it holds as many messages as asked for, so this is what a read loses at its tail
when fewer records arrive than the range spans (offsets taken by transaction markers,
aborted or compacted records), and also how often the stall check runs."""

MAX_BATCH = 10_000
"""Messages one ``consume`` call asks for at most."""

FETCH_QUEUE_BACKOFF_MS = 10
"""librdkafka's ``fetch.queue.backoff.ms`` for reads (its default, 1000, is tuned for
consumers that keep little queued): once ``queued.min.messages`` are held it waits that
long before fetching again, so a reader that drains its queue quickly sat idle most of
each second (raw reads of 8 partitions: 246-405k rec/s at 1 s, 569-860k at 10 ms)."""


@dataclass
class Columns:
    """One fetched chunk of one topic as parallel lists, ready for Arrow."""

    topic: str
    partitions: list[int] = field(default_factory=list)
    keys: list[bytes | None] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)
    timestamp_types: list[int] = field(default_factory=list)
    headers: list[list[tuple[str, bytes | None]] | None] | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    def ends(self) -> dict[int, int]:
        """Next offset per partition after this chunk (offsets rise within a partition,
        so the last one seen is the highest)."""
        return {p: o + 1 for p, o in zip(self.partitions, self.offsets, strict=True)}


class KafkaClient(Protocol):
    def partitions(self, subscription: Subscription, *, missing_ok: bool) -> list[TopicPartition]:
        """The topic-partitions a subscription covers now."""
        ...

    def bounds(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, Bounds]:
        """Earliest and latest readable offset of each partition."""
        ...

    def offsets_for_times(self, times: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The first offset whose timestamp is at or after each partition's time, or -1
        where no record is that late (Kafka's ListOffsets by timestamp)."""
        ...

    def read(
        self, ranges: Sequence[OffsetRange], *, chunk: int, with_headers: bool
    ) -> Iterator[Columns]:
        """The records of ranges of one topic, fetched together, in chunks of about
        ``chunk``; within a partition in offset order."""
        ...

    def close(self) -> None: ...


def client_config(
    bootstrap: str, isolation_level: str, extra: dict[str, str] | None = None
) -> dict[str, Any]:
    """librdkafka settings for assigned, uncommitted reads of exact ranges."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": "headrace-spark-bridge",  # required by the client; never joined
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",  # a deleted start offset is data loss, not a jump
        "isolation.level": isolation_level,
        "queued.min.messages": 200_000,
        "fetch.wait.max.ms": 50,
        "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
        **(extra or {}),  # a user's kafka.* settings win
    }


class ConfluentClient:
    """``KafkaClient`` over one confluent-kafka Consumer (not thread-safe).

    ``timeout`` bounds each metadata and offset request; librdkafka's own log goes to a
    ``ClientLog``, never to stderr, and its newest problem becomes the reason in errors.
    """

    def __init__(
        self,
        bootstrap: str,
        *,
        isolation_level: str = "read_committed",
        extra: dict[str, str] | None = None,
        timeout: float = 15.0,
        stall_timeout: float = STALL_TIMEOUT,
    ) -> None:
        ck = require("confluent_kafka")
        self._ck = ck
        self._bootstrap = bootstrap
        self._timeout = timeout
        self._stall_timeout = stall_timeout
        self._log = ClientLog()
        config = {**client_config(bootstrap, isolation_level, extra), "logger": self._log}
        try:
            self._consumer = ck.Consumer(config)
        except ck.KafkaException as exc:
            raise BrokerRequestError(f"cannot create Kafka client: {exc}") from exc

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> ConfluentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _metadata(self, topic: str | None) -> Any:
        try:
            return self._consumer.list_topics(topic, timeout=self._timeout)
        except self._ck.KafkaException as exc:
            raise self._failure("metadata request failed", exc) from exc

    def _failure(self, what: str, exc: Any) -> BrokerRequestError:
        """One line for a failed request; an unreachable broker is named as such, with
        librdkafka's reason (a poll hands its queued log lines to ``ClientLog``)."""
        code = exc.args[0].code() if exc.args and hasattr(exc.args[0], "code") else None
        if code not in (_TRANSPORT, _TIMED_OUT):
            return BrokerRequestError(f"{what}: {exc}")
        self._consumer.poll(0)
        message = f"cannot reach the broker at {self._bootstrap} within {self._timeout:g}s"
        reason = self._log.last_problem
        return BrokerRequestError(f"{message}: {reason}" if reason else message)

    def partitions(self, subscription: Subscription, *, missing_ok: bool) -> list[TopicPartition]:
        if subscription.assigned:
            return sorted(subscription.assigned)
        if subscription.pattern is not None:
            regex = re.compile(subscription.pattern)
            topics = [
                t
                for t in self._metadata(None).topics
                if regex.fullmatch(t) and not t.startswith("__")
            ]
        else:
            topics = list(subscription.topics)
        found: list[TopicPartition] = []
        for topic in topics:
            meta = self._metadata(topic).topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                if missing_ok:
                    continue
                raise BrokerRequestError(f"topic {topic!r} does not exist")
            found += [TopicPartition(topic, p) for p in meta.partitions]
        return sorted(found)

    def bounds(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, Bounds]:
        out: dict[TopicPartition, Bounds] = {}
        for tp in tps:
            try:
                low, high = self._consumer.get_watermark_offsets(
                    self._ck.TopicPartition(tp.topic, tp.partition),
                    timeout=self._timeout,
                    cached=False,
                )
            except self._ck.KafkaException as exc:
                raise self._failure(
                    f"cannot list offsets of {tp.topic}/{tp.partition}", exc
                ) from exc
            out[tp] = Bounds(low, high)
        return out

    def offsets_for_times(self, times: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        if not times:
            return {}
        asked = [self._ck.TopicPartition(tp.topic, tp.partition, ts) for tp, ts in times.items()]
        try:
            found = self._consumer.offsets_for_times(asked, timeout=self._timeout)
        except self._ck.KafkaException as exc:
            raise self._failure("cannot list offsets by timestamp", exc) from exc
        out: dict[TopicPartition, int] = {}
        for answer in found:
            tp = TopicPartition(answer.topic, answer.partition)
            if answer.error is not None:
                raise BrokerRequestError(
                    f"cannot list offsets by timestamp of {tp.topic}/{tp.partition}:"
                    f" {answer.error.str()}"
                )
            out[tp] = answer.offset if answer.offset >= 0 else -1
        return out

    def read(
        self, ranges: Sequence[OffsetRange], *, chunk: int = 50_000, with_headers: bool = False
    ) -> Iterator[Columns]:
        """Fetch ranges of one topic together (see ``_read``), each chunk built with the
        garbage collector paused (``_collector.py`` says why)."""
        return paused_between_yields(self._read(ranges, chunk, with_headers))

    def _read(
        self, ranges: Sequence[OffsetRange], chunk: int, with_headers: bool
    ) -> Iterator[Columns]:
        """Fetch ranges of one topic together; a chunk is yielded once ``chunk`` records
        are held. Fetching partitions together lets the broker answer for all of them in
        one round trip, which is what makes a multi-partition copy fast.

        Order of each step: consume a batch of messages; end a partition at
        end-of-partition (under read_committed the last offsets of a range may be
        transaction markers or aborted records that are never delivered) and fail at any
        other error; end a partition whose next offset reaches its range end, dropping
        what lies past it; append the rest as columns. Finished partitions are paused so
        no more of them is fetched.
        """
        ranges = [r for r in ranges if r.size > 0]
        if not ranges:
            return
        topic = ranges[0].topic
        if any(r.topic != topic for r in ranges):
            raise ValueError("one read covers one topic")
        ck = self._ck
        consumer = self._consumer
        # Unbound accessors: map() calls them from C, with no Python frame per record.
        error, partition, offset = ck.Message.error, ck.Message.partition, ck.Message.offset
        ends = {r.partition: r.end for r in ranges}
        next_offsets = {r.partition: r.start for r in ranges}
        done: set[int] = set()
        # A consumer assigned one partition gets records of that partition only, so the
        # per-record partition lookup and the last-offset-per-partition pass are skipped:
        # one task per topic-partition, Spark's plan, always reads this way.
        only = ranges[0].partition if len(ranges) == 1 else None
        assignment = [ck.TopicPartition(topic, r.partition, r.start) for r in ranges]
        consumer.assign(assignment)
        consumer.resume(assignment)  # a partition paused by an earlier read stays paused
        try:
            cols = Columns(topic, headers=[] if with_headers else None)
            last_progress = time.monotonic()
            while len(done) < len(ends):
                # Never more than the ranges still owe: asked for a full batch, consume
                # waited out its whole timeout after the last record of a range arrived
                # (0.5 s a task; most of a 32-partition read's time).
                owed = sum(ends[p] - next_offsets[p] for p in ends if p not in done)
                messages = consumer.consume(min(chunk, MAX_BATCH, owed), CONSUME_WAIT)
                if not messages:
                    if time.monotonic() - last_progress > self._stall_timeout:
                        raise BrokerRequestError(
                            f"no records from {topic} partitions"
                            f" {sorted(set(ends) - done)} for"
                            f" {self._stall_timeout:.0f}s"
                        )
                    continue
                last_progress = time.monotonic()
                finished_before = set(done)
                if any(map(error, messages)):
                    for m in messages:
                        if m.error() is not None:
                            self._raise_unless_eof(m, topic)
                            done.add(m.partition())
                    messages = [m for m in messages if m.error() is None]
                offsets = list(map(offset, messages))
                if only is None:
                    parts = list(map(partition, messages))
                    # Last offset per partition in this batch: a C-level pass, no Python loop.
                    last = dict(zip(parts, offsets, strict=True))
                else:
                    parts = [only] * len(offsets)
                    last = {only: offsets[-1]} if offsets else {}
                next_offsets.update((p, o + 1) for p, o in last.items())
                crossing = {p for p, o in last.items() if o + 1 >= ends[p]}
                done |= crossing
                if finished_before & last.keys() or any(last[p] >= ends[p] for p in crossing):
                    keep = [
                        p not in finished_before and o < ends[p]
                        for p, o in zip(parts, offsets, strict=True)
                    ]
                    messages = [m for m, k in zip(messages, keep, strict=True) if k]
                    parts = [p for p, k in zip(parts, keep, strict=True) if k]
                    offsets = [o for o, k in zip(offsets, keep, strict=True) if k]
                if done - finished_before:
                    consumer.pause(
                        [ck.TopicPartition(topic, p) for p in sorted(done - finished_before)]
                    )
                if messages:
                    self._append(ck.Message, cols, messages, parts, offsets, with_headers)
                if len(cols) >= chunk:
                    yield cols
                    cols = Columns(topic, headers=[] if with_headers else None)
            if len(cols):
                yield cols
        finally:
            consumer.unassign()

    @staticmethod
    def _raise_unless_eof(message: Any, topic: str) -> None:
        err = message.error()
        where = f"{topic}/{message.partition()}"
        if err.code() == _PARTITION_EOF:
            return
        if err.code() in (_OFFSET_OUT_OF_RANGE, _AUTO_OFFSET_RESET):
            raise OffsetRangeError(
                f"the start offset of {where} is no longer in the log: {err.str()}"
            )
        raise BrokerRequestError(f"fetch from {where} failed: {err.str()}")

    @staticmethod
    def _append(
        message: Any,
        cols: Columns,
        messages: list[Any],
        parts: list[int],
        offsets: list[int],
        with_headers: bool,
    ) -> None:
        # One C-level map per column: the per-record cost here bounds the throughput.
        cols.partitions += parts
        cols.offsets += offsets
        cols.keys += map(message.key, messages)
        cols.values += map(message.value, messages)
        stamps = list(map(message.timestamp, messages))
        cols.timestamps += map(_SECOND, stamps)
        kinds = set(map(_FIRST, stamps))
        if len(kinds) == 1:  # the usual case: one timestamp type for the whole topic
            cols.timestamp_types += [_SPARK_TIMESTAMP_TYPE.get(kinds.pop(), 0)] * len(stamps)
        else:
            cols.timestamp_types += [_SPARK_TIMESTAMP_TYPE.get(k, 0) for k, _ in stamps]
        if with_headers and cols.headers is not None:
            cols.headers += map(message.headers, messages)
