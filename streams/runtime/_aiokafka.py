"""The Kafka client interface implemented on aiokafka, using its batch paths.

Consuming uses ``getmany``; producing builds batches with ``create_batch`` and submits
them with ``send_batch``, one chain of batches per partition so a slow partition never
holds up the others. Keys are placed with Kafka's own murmur2 partitioner
(``_murmur2.py``), so records land where Java and librdkafka producers put them.
aiokafka's errors are translated into :class:`ClientError` here, where they enter.
What needs aiokafka's private names is in ``_aiokafka_internals.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Collection, Mapping, Sequence
from operator import itemgetter
from typing import Any, Final

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka import TopicPartition as AioTP
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import (
    CommitFailedError,
    IllegalStateError,
    KafkaError,
    UnknownTopicOrPartitionError,
    for_code,
)

from .._record import ConsumedAt, ConsumedRecord, ProducedAt, ProducedRecord
from . import _aiokafka_internals as internals
from ._aiokafka_internals import AS_TUPLES, as_tuple, fill_batch
from ._aiokafka_logs import reported_by_the_runtime
from ._assignor import PartitionGroupAssignor
from ._client import (
    FlushMark,
    FlushResult,
    PartitionsListener,
    TopicPartition,
    TopicSpec,
)
from ._errors import ClientError, SourceTopicDeletedError
from ._murmur2 import KeyPartitioner
from ._send_ledger import SendLedger
from ._settings import AppSettings

log = logging.getLogger("headrace.streams.runtime.client")

# Record positions as module names: the per-record loops read them as cached globals.
_OFFSET: Final = ConsumedAt.OFFSET
_KEY: Final = ConsumedAt.KEY
_VALUE: Final = ConsumedAt.VALUE
_TIMESTAMP: Final = ConsumedAt.TIMESTAMP
_CHANGELOG_FIELDS: Final = itemgetter(_OFFSET, _KEY, _VALUE, _TIMESTAMP)
_OUT_TOPIC: Final = ProducedAt.TOPIC
_OUT_KEY: Final = ProducedAt.KEY
_OUT_PARTITION: Final = ProducedAt.PARTITION

_TOPIC_ALREADY_EXISTS = 36
# Seconds a producer waits for a topic it writes to to appear in the metadata.
TOPIC_WAIT_S = 5.0


def translate(error: BaseException, doing: str) -> ClientError:
    """An aiokafka error as a ClientError that keeps its ``retriable`` flag."""
    retriable = bool(getattr(error, "retriable", False))
    translated = ClientError(f"{doing}: {error!r}", retriable=retriable)
    translated.__cause__ = error
    return translated


def _isolation(settings: AppSettings) -> str:
    return "read_committed" if settings.exactly_once else "read_uncommitted"


def _tps(partitions: Collection[AioTP]) -> set[TopicPartition]:
    return {(tp.topic, tp.partition) for tp in partitions}


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, on_revoked: PartitionsListener, on_assigned: PartitionsListener) -> None:
        self._revoked = on_revoked
        self._assigned = on_assigned

    async def on_partitions_revoked(self, revoked: Collection[AioTP]) -> None:
        await self._revoked(_tps(revoked))

    async def on_partitions_assigned(self, assigned: Collection[AioTP]) -> None:
        await self._assigned(_tps(assigned))


class AiokafkaGroupConsumer:
    def __init__(
        self, settings: AppSettings, group_id: str, assignor: PartitionGroupAssignor
    ) -> None:
        self._tuples = internals.install_tuple_fetch()
        self._exactly_once = settings.exactly_once
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=settings.bootstrap_servers,
            key_deserializer=AS_TUPLES,
            group_id=group_id,
            client_id=f"{group_id}-consumer",
            enable_auto_commit=False,
            auto_offset_reset=settings.auto_offset_reset,
            partition_assignment_strategy=(assignor,),
            fetch_max_bytes=settings.fetch_max_bytes,
            max_partition_fetch_bytes=settings.max_partition_fetch_bytes,
            session_timeout_ms=settings.session_timeout_ms,
            heartbeat_interval_ms=settings.heartbeat_interval_ms,
            isolation_level=_isolation(settings),
            **settings.client_security().aiokafka_options(),
        )
        self._reset = settings.auto_offset_reset
        internals.forbid_auto_create(self._consumer)
        # Source topics seen in the metadata, and those missing from a later refresh:
        # a deleted source stops the application (it is not re-created, see
        # _aiokafka_logs.py), once a full metadata read confirms it is gone.
        self._topics: frozenset[str] = frozenset()
        self._seen: set[str] = set()
        self._missing: set[str] = set()
        self._gone: ClientError | None = None
        internals.watch_metadata(self._consumer, self._on_metadata)

    async def start(self) -> None:
        log.info("%s", internals.report())
        try:
            await self._consumer.start()
        except KafkaError as error:
            raise translate(error, "starting the group consumer") from error
        if self._exactly_once:
            # The zombie guard of every transaction commit: refuse to run without it.
            internals.group_generation(self._consumer)

    async def stop(self) -> None:
        await self._consumer.stop()

    def subscribe(
        self,
        topics: Collection[str],
        on_revoked: PartitionsListener,
        on_assigned: PartitionsListener,
    ) -> None:
        self._topics = frozenset(topics)
        reported_by_the_runtime(self._topics)
        self._consumer.subscribe(list(topics), listener=_Listener(on_revoked, on_assigned))

    def _on_metadata(self, cluster: Any) -> None:
        for topic in self._topics:
            if cluster.partitions_for_topic(topic):
                self._seen.add(topic)
            elif topic in self._seen:
                self._missing.add(topic)

    async def _check_missing(self) -> None:
        """Stop on source topics a metadata refresh no longer lists, if a read of the
        whole cluster's metadata confirms they are gone (not a passing topic error).

        Checked before every poll and commit: aiokafka retries an offset commit for a
        deleted topic without end, and the group's rebalance commits right after the
        refresh that lost the topic."""
        if self._gone is not None:
            raise self._gone
        if not self._missing:
            return
        suspects, self._missing = self._missing, set()
        try:
            cluster = await internals.fetch_all_metadata(self._consumer)
        except KafkaError as error:
            raise translate(error, "reading topic metadata") from error
        gone = sorted(t for t in suspects if not cluster.partitions_for_topic(t))
        if gone:
            self._gone = SourceTopicDeletedError(
                f"source topic {', '.join(gone)} no longer exists: it was deleted while "
                "the application ran (the application never re-creates it)"
            )
            raise self._gone

    async def poll(
        self, timeout_ms: int, max_records: int
    ) -> dict[TopicPartition, list[ConsumedRecord]]:
        # getmany returns buffered records without yielding to the event loop; yield
        # here so socket reads (the next fetch response) and produce requests and
        # acknowledgements make progress every round, not only while a commit waits.
        await asyncio.sleep(0)
        if self._missing or self._gone is not None:
            await self._check_missing()
        try:
            fetched = await self._consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        except KafkaError as error:
            raise translate(error, "polling") from error
        if self._tuples:
            # Tuples already, built by the fetcher (tuple fetch, _aiokafka_internals.py);
            # the check is per batch.
            return {
                (tp.topic, tp.partition): records
                if type(records[0]) is tuple
                else list(map(as_tuple, records))
                for tp, records in fetched.items()
                if records
            }
        return {
            (tp.topic, tp.partition): list(map(as_tuple, records))
            for tp, records in fetched.items()
        }

    def pause(self, partitions: Collection[TopicPartition]) -> None:
        self._consumer.pause(*(AioTP(t, p) for t, p in partitions))

    def resume(self, partitions: Collection[TopicPartition]) -> None:
        self._consumer.resume(*(AioTP(t, p) for t, p in partitions))

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        if not offsets:
            return
        request = {AioTP(t, p): o for (t, p), o in offsets.items()}
        try:
            await self.while_sources_exist(self._consumer.commit(request))
        except (CommitFailedError, IllegalStateError) as error:
            # The group moved on (a rebalance); not fatal: the new owner replays.
            raise ClientError(f"committing offsets: {error!r}", retriable=True) from error
        except KafkaError as error:
            raise translate(error, "committing offsets") from error

    async def while_sources_exist(self, commit: Awaitable[None]) -> None:
        """Await ``commit``; give it up once a source topic is confirmed deleted.

        aiokafka retries an offset commit (plain, or TxnOffsetCommit inside a transaction)
        for a deleted topic without end, and the group's rebalance commits right after the
        refresh that lost the topic. So the commit is watched: when a metadata refresh
        loses a source topic, a read of the whole cluster's metadata decides; a topic
        really gone cancels the commit and raises, a passing topic error lets it go on."""
        await self._check_missing()
        attempt = asyncio.ensure_future(commit)
        try:
            while not attempt.done():
                await asyncio.wait({attempt}, timeout=0.2)
                if self._missing and not attempt.done():
                    await self._check_missing()  # raises when the topic is gone
        finally:
            if not attempt.done():
                attempt.cancel()
                with contextlib.suppress(asyncio.CancelledError, KafkaError):
                    await attempt
        attempt.result()

    def assignment(self) -> set[TopicPartition]:
        return _tps(self._consumer.assignment())

    def seek(self, partition: TopicPartition, offset: int) -> None:
        try:
            self._consumer.seek(AioTP(*partition), offset)
        except (IllegalStateError, AssertionError) as error:
            # The partition was revoked meanwhile; its new owner starts from the commit.
            log.info("not seeking %s-%d: %r", partition[0], partition[1], error)

    async def seek_to_committed(self, partitions: Collection[TopicPartition]) -> None:
        """Position each partition at its committed offset, or where ``auto_offset_reset``
        says when none is committed (aiokafka's own ``seek_to_committed`` leaves such a
        partition where it was, which a rewind must not)."""
        consumer = self._consumer
        try:
            for t, p in partitions:
                tp = AioTP(t, p)
                committed = await consumer.committed(tp)
                if committed is not None and committed >= 0:
                    consumer.seek(tp, committed)
                elif self._reset == "earliest":
                    await consumer.seek_to_beginning(tp)
                else:
                    await consumer.seek_to_end(tp)
        except (IllegalStateError, AssertionError) as error:
            raise ClientError(
                f"rewinding to committed offsets: {error!r}", retriable=True
            ) from error
        except KafkaError as error:
            raise translate(error, "rewinding to committed offsets") from error

    def generation_valid(self) -> bool:
        """Whether the consumer is a member of the current group generation.

        aiokafka resets its generation to -1 when the coordinator says this member is
        unknown or its generation stale (it was removed from the group); until it
        rejoins, committing in its name would be a zombie's commit. Raises
        :class:`UnsupportedClientError` when the generation cannot be read."""
        return internals.group_generation(self._consumer) >= 0

    def unfetched(self, partition: TopicPartition) -> int | None:
        tp = AioTP(*partition)
        try:
            # read_committed reads up to the last stable offset, not the high watermark:
            # an open transaction on the topic must not look like records to wait for
            end = self._consumer.last_stable_offset(tp) if self._exactly_once else None
            if end is None or end < 0:
                end = self._consumer.highwater(tp)
        except (KafkaError, AssertionError):
            return None
        position = internals.fetch_position(self._consumer, tp)
        if end is None or position is None:
            return None
        return max(0, int(end) - position)

    def highwater(self, partition: TopicPartition) -> int | None:
        try:
            high = self._consumer.highwater(AioTP(*partition))
        except (KafkaError, AssertionError):
            return None
        return None if high is None else int(high)


class AiokafkaChangelogReader:
    def __init__(self, settings: AppSettings) -> None:
        internals.install_tuple_fetch()
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=settings.bootstrap_servers,
            key_deserializer=AS_TUPLES,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_bytes=settings.fetch_max_bytes,
            max_partition_fetch_bytes=settings.max_partition_fetch_bytes,
            # Under exactly-once a changelog holds aborted writes; restoring must skip them.
            isolation_level=_isolation(settings),
            **settings.client_security().aiokafka_options(),
        )
        internals.forbid_auto_create(self._consumer)

    async def start(self) -> None:
        try:
            await self._consumer.start()
        except KafkaError as error:
            raise translate(error, "starting the changelog reader") from error

    async def stop(self) -> None:
        await self._consumer.stop()

    def assign(self, partitions: Collection[TopicPartition]) -> None:
        self._consumer.assign([AioTP(t, p) for t, p in partitions])

    async def seek(self, partition: TopicPartition, offset: int | None) -> None:
        tp = AioTP(*partition)
        if offset is None:
            await self._consumer.seek_to_beginning(tp)
        else:
            self._consumer.seek(tp, offset)

    async def position(self, partition: TopicPartition) -> int | None:
        """The next offset the reader will fetch: past control records (transaction
        markers) and aborted records too, which never come out as records."""
        try:
            return int(await self._consumer.position(AioTP(*partition)))
        except (IllegalStateError, KafkaError):
            return None

    async def end_offsets(
        self, partitions: Collection[TopicPartition]
    ) -> dict[TopicPartition, int]:
        if not partitions:
            return {}
        try:
            ends = await self._consumer.end_offsets([AioTP(t, p) for t, p in partitions])
        except KafkaError as error:
            raise translate(error, "reading changelog end offsets") from error
        return {(tp.topic, tp.partition): int(o) for tp, o in ends.items()}

    async def poll(
        self, timeout_ms: int, max_records: int
    ) -> dict[TopicPartition, list[tuple[int, bytes, bytes | None, int]]]:
        if not self._consumer.assignment():
            return {}
        try:
            fetched = await self._consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        except KafkaError as error:
            raise translate(error, "reading a changelog") from error
        return {
            # Changelog records always have keys; tuples need no conversion. The
            # (offset, key, value, timestamp) tuples are cut by itemgetter: no Python
            # call per record.
            (tp.topic, tp.partition): list(
                map(
                    _CHANGELOG_FIELDS,
                    records if type(records[0]) is tuple else map(as_tuple, records),
                )
            )
            for tp, records in fetched.items()
            if records
        }


class AiokafkaGlobalReader(AiokafkaChangelogReader):
    """Reads the global topics whole, records as tasks take them (timestamps, headers)."""

    async def poll(  # type: ignore[override]
        self, timeout_ms: int, max_records: int
    ) -> dict[TopicPartition, list[ConsumedRecord]]:
        if not self._consumer.assignment():
            return {}
        try:
            fetched = await self._consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        except KafkaError as error:
            raise translate(error, "reading a global topic") from error
        return {
            (tp.topic, tp.partition): list(map(as_tuple, records))
            for tp, records in fetched.items()
            if records
        }


# Records queued for the client before ``send`` waits (as Kafka's buffer.memory bounds a
# producer): about a second of output at full speed, and a bound on the memory it takes.
MAX_QUEUED_RECORDS = 200_000


class AiokafkaRecordProducer:
    """Produced tuples go out in batches, one queue and one sender task per partition.

    ``send`` only places records and queues them; ``flush`` waits for every record
    queued before its mark (``mark()``, or now) to be delivered, then reports the next
    offset per partition and any failure (``_send_ledger.py``); records queued later
    keep flowing meanwhile.

    Why a queue: aiokafka keeps one produce request in flight per broker and one batch
    per partition waiting behind it. A partition's sender hands aiokafka everything
    queued since its last batch, so while one request is on the wire the next batch
    grows with whatever the runtime produced meanwhile. At low load a record leaves at
    once in a batch of its own; under load batches grow to what one round trip brings,
    and a record never waits behind a series of small batches (one per poll round,
    which held records for up to a second at a few thousand records a second).
    """

    def __init__(
        self,
        settings: AppSettings,
        max_queued_records: int = MAX_QUEUED_RECORDS,
        **transactional: Any,
    ) -> None:
        # ``transactional`` (transactional_id, transaction_timeout_ms) makes the producer
        # idempotent and transactional, which requires acks=all.
        self._producer = AIOKafkaProducer(
            bootstrap_servers=settings.bootstrap_servers,
            client_id=f"{settings.application_id}-producer",
            acks="all" if settings.acks == "all" or transactional else int(settings.acks),
            linger_ms=settings.linger_ms,
            max_batch_size=settings.producer_batch_bytes,
            max_request_size=max(settings.producer_batch_bytes, 1024 * 1024),
            compression_type=None
            if settings.compression_type == "none"
            else settings.compression_type,
            **({"enable_idempotence": True, **transactional} if transactional else {}),
            **settings.client_security().aiokafka_options(),
        )
        internals.forbid_auto_create(self._producer)
        self._partition = KeyPartitioner()
        self._counts: dict[str, int] = {}
        self._sticky: dict[str, int] = {}
        self._queues: dict[TopicPartition, list[ProducedRecord]] = {}
        # Kept beside the queues so the bound in ``send`` costs nothing per call.
        self._queued = 0
        self._senders: dict[TopicPartition, asyncio.Task[None]] = {}
        self._max_queued = max_queued_records
        self._ledger = SendLedger()
        # Per partition, records sent while held (``hold``), in order.
        self._held: dict[TopicPartition, list[ProducedRecord]] | None = None

    async def start(self) -> None:
        try:
            await self._producer.start()
        except KafkaError as error:
            raise translate(error, "starting the producer") from error

    async def stop(self) -> None:
        self.discard_pending()
        await self._producer.stop()

    def discard_pending(self) -> None:
        """Forget queued records, deliveries not yet reported and failures."""
        for sender in self._senders.values():
            sender.cancel()
        self._senders.clear()
        self._queues.clear()
        self._queued = 0
        self._held = None
        self._ledger.clear()

    async def _count(self, topic: str) -> int:
        count = self._counts.get(topic)
        if count is None:
            try:
                parts = await asyncio.wait_for(self._producer.partitions_for(topic), TOPIC_WAIT_S)
            except (TimeoutError, UnknownTopicOrPartitionError):
                # aiokafka would keep asking for its whole request timeout; a topic created
                # a moment ago shows up well within TOPIC_WAIT_S even on a large cluster.
                raise ClientError(
                    f"topic {topic} does not exist; the application does not create the "
                    "topics it writes to: create it first"
                ) from None
            except KafkaError as error:
                raise translate(error, f"reading partitions of {topic}") from error
            count = self._counts[topic] = len(parts)
        return count

    async def send(self, records: Sequence[ProducedRecord]) -> None:
        # Records come in runs of one topic (a sink's batch): the partition count and
        # the key memo are looked up once per run, and a keyed record costs a dict
        # lookup (``KeyPartitioner.table``) and an append.
        groups: dict[str, dict[int, list[ProducedRecord]]] = {}
        current: str | None = None
        count = 0
        table: dict[bytes, int] = {}
        buckets: dict[int, list[ProducedRecord]] = {}
        for record in records:
            topic = record[_OUT_TOPIC]
            if topic != current:
                current, count = topic, 0
                buckets = groups.setdefault(topic, {})
            partition = record[_OUT_PARTITION]
            if partition is None:
                if not count:
                    count = self._counts.get(topic) or await self._count(topic)
                    table = self._partition.table(count)
                key = record[_OUT_KEY]
                if key is None:
                    # Kafka's sticky choice for null keys: one partition per call.
                    partition = self._sticky.setdefault(topic, len(self._sticky) % count)
                else:
                    partition = table.get(key)
                    if partition is None:
                        partition = self._partition(key, count)
            found = buckets.get(partition)
            if found is None:
                buckets[partition] = [record]
            else:
                found.append(record)
        self._sticky.clear()
        held = self._held
        for topic, by_partition in groups.items():
            for partition, batch in by_partition.items():
                if held is None:
                    self._enqueue((topic, partition), batch)
                else:
                    held.setdefault((topic, partition), []).extend(batch)
        if held is None and self.queued_records() > self._max_queued:
            # Commits run beside processing, so nothing else stops the loop producing
            # faster than the broker acknowledges: wait until the queues are handed over.
            await asyncio.gather(*self._senders.values())

    def queued_records(self) -> int:
        """Records placed but not yet handed to the client."""
        return self._queued

    def _enqueue(self, tp: TopicPartition, batch: list[ProducedRecord]) -> None:
        self._ledger.queued(tp, len(batch))
        self._queued += len(batch)
        waiting = self._queues.get(tp)
        if waiting is not None:
            waiting.extend(batch)
        else:
            self._queues[tp] = batch
            self._senders[tp] = asyncio.ensure_future(self._send_queued(tp))

    def hold(self) -> None:
        """Keep what is sent from now on until ``release``: it is placed, not handed to
        the client, and no flush waits for it (the transaction it will belong to has
        not begun; ``_commit.py``)."""
        if self._held is None:
            self._held = {}

    def _release_held(self) -> None:
        held, self._held = self._held, None
        for tp, batch in (held or {}).items():
            self._enqueue(tp, batch)

    async def _send_queued(self, tp: TopicPartition) -> None:
        """Hand ``tp``'s queue to aiokafka a batch at a time until it is empty. The
        queue's entry goes when it is found empty, with no await in between, so a later
        ``send`` starts a new sender."""
        producer = self._producer
        topic, partition = tp
        queues = self._queues
        while True:
            records = queues[tp]
            if not records:
                del queues[tp]
                del self._senders[tp]
                return
            queues[tp] = []
            self._queued -= len(records)
            start = 0
            try:
                await self._before_handing()
                while start < len(records):
                    batch = producer.create_batch()
                    end = fill_batch(batch, records, start)
                    batch.close()
                    if end == start:
                        raise ClientError(
                            f"a record for {topic}-{partition} does not fit in a batch"
                        )
                    # Returns once the partition's previous batch is on its way.
                    delivery = await producer.send_batch(batch, topic, partition=partition)
                    self._ledger.handed(tp, records[start:end], delivery)
                    start = end
            except Exception as error:
                # Whatever stopped the chain, the records count as handed (and failed),
                # or a flush would wait for them for ever.
                self._ledger.handed(tp, records[start:], error=error)

    async def _before_handing(self) -> None:
        """Called before a queue is handed to the client; the transactional producer
        begins its transaction here."""

    def mark(self) -> FlushMark:
        """The point a later ``flush(mark)`` waits for: every record sent until now."""
        return self._ledger.mark()

    async def flush(self, upto: FlushMark | None = None) -> FlushResult:
        """Wait for the delivery of every record sent before ``upto`` (default: now);
        report next offsets and failures."""
        return await self._ledger.settle(self._ledger.mark() if upto is None else upto)


# aiokafka's line per host and attempt when a bootstrap finds no broker.
_BOOTSTRAP_FAILED = 'Unable connect to "%s:%s": %s'


class _QuietBootstrap(logging.Filter):
    """Drops aiokafka's per-attempt bootstrap line while the admin client's start runs:
    start-up retries that start and says in one line what it waits for
    (``_startup_wait.py``), where aiokafka would log each attempt."""

    def __init__(self) -> None:
        super().__init__()
        self.starting = 0

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.starting and record.msg == _BOOTSTRAP_FAILED)


_quiet_bootstrap = _QuietBootstrap()
logging.getLogger("aiokafka").addFilter(_quiet_bootstrap)  # aiokafka.client logs as "aiokafka"


def _code_error(code: int, doing: str) -> ClientError:
    """A Kafka error code a response carried, as a ClientError retriable as Kafka says."""
    error_type = for_code(code)
    return ClientError(
        f"{doing}: {error_type.__name__} (error code {code})",
        retriable=bool(getattr(error_type, "retriable", False)),
    )


class AiokafkaAdmin:
    """Topic reads and creation for start-up. Every error comes out as a ClientError
    whose ``retriable`` says whether trying again may help (start-up retries those,
    ``_startup_wait.py``): aiokafka's own flag, the flag of an error code in a response,
    and aiokafka's wait for a node to be ready running out (retriable)."""

    def __init__(self, settings: AppSettings) -> None:
        self._admin = AIOKafkaAdminClient(
            bootstrap_servers=settings.bootstrap_servers,
            **settings.client_security().aiokafka_options(),
        )
        internals.forbid_auto_create(self._admin)
        self._replication = settings.replication_factor
        self._topic_configs = settings.topic_configs

    async def start(self) -> None:
        _quiet_bootstrap.starting += 1
        try:
            await self._admin.start()
        except KafkaError as error:
            raise translate(error, "starting the admin client") from error
        except TimeoutError as error:
            raise ClientError(f"starting the admin client: {error!r}", retriable=True) from error
        finally:
            _quiet_bootstrap.starting -= 1

    async def stop(self) -> None:
        await self._admin.close()

    async def partition_counts(self, topics: Collection[str]) -> dict[str, int]:
        try:
            existing = set(await self._admin.list_topics())
            wanted = [t for t in topics if t in existing]
            described = await self._admin.describe_topics(wanted) if wanted else []
        except KafkaError as error:
            raise translate(error, "describing topics") from error
        except TimeoutError as error:
            raise ClientError(f"describing topics: {error!r}", retriable=True) from error
        for t in described:
            code = t["error_code"]
            if code not in (0, UnknownTopicOrPartitionError.errno) and for_code(code).retriable:
                # The topic exists (it was listed) but cannot be described now, e.g. its
                # leader is being elected: not a missing topic.
                raise _code_error(code, f"describing topic {t['topic']}")
        return {
            t["topic"]: len(t["partitions"])
            for t in described
            if t["error_code"] == 0 and t["partitions"]
        }

    async def create_topics(self, specs: Sequence[TopicSpec]) -> None:
        if not specs:
            return
        new = [
            # The App's own settings for a topic (cleanup.policy of a changelog) win over
            # the user's topic.-prefixed ones.
            NewTopic(
                s.name,
                s.partitions,
                self._replication,
                # aiokafka refuses replication factor -1 (the broker's default)
                # unless an assignment is given; an empty one says "none".
                replica_assignments={} if self._replication == -1 else None,
                topic_configs={**self._topic_configs, **dict(s.config)},
            )
            for s in specs
        ]
        try:
            response = await self._admin.create_topics(new)
        except KafkaError as error:
            raise translate(error, "creating topics") from error
        except TimeoutError as error:
            raise ClientError(f"creating topics: {error!r}", retriable=True) from error
        for name, code, *_rest in response.topic_errors:
            if code not in (0, _TOPIC_ALREADY_EXISTS):
                raise _code_error(code, f"cannot create topic {name}")


class AiokafkaClients:
    """The :class:`~streams.runtime.ClientFactory` backed by aiokafka."""

    def __init__(self, settings: AppSettings) -> None:
        self.settings = settings

    def group_consumer(
        self, group_id: str, assignor: PartitionGroupAssignor
    ) -> AiokafkaGroupConsumer:
        return AiokafkaGroupConsumer(self.settings, group_id, assignor)

    def changelog_reader(self) -> AiokafkaChangelogReader:
        return AiokafkaChangelogReader(self.settings)

    def global_reader(self) -> AiokafkaGlobalReader:
        return AiokafkaGlobalReader(self.settings)

    def producer(self) -> AiokafkaRecordProducer:
        return AiokafkaRecordProducer(self.settings)

    def transactional_producer(self, transactional_id: str) -> Any:
        from ._aiokafka_txn import AiokafkaTransactionalProducer

        return AiokafkaTransactionalProducer(self.settings, transactional_id)

    def admin(self) -> AiokafkaAdmin:
        return AiokafkaAdmin(self.settings)
