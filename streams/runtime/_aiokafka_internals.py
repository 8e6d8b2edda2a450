"""Every use of aiokafka's private names, in one place, behind a version check.

The rest of the runtime uses aiokafka's public API only. What it cannot get that way is
here: three fast paths (speed; each falls back to the public path) and four guards
(correctness). They were written against aiokafka 0.13 and 0.14 (:data:`SUPPORTED`, the
same range as the dependency in pyproject.toml). With another version the fast paths
are switched off at import, with a warning, and records take aiokafka's public paths;
each guard probes for what it needs where it is installed, and says so when it cannot
work. :func:`report` is the line an application logs as it starts.

Fast paths:

- **tuple fetch** (:func:`install_tuple_fetch`). aiokafka turns every fetched record
  into a ``ConsumerRecord``, one generator step and two method calls per record, and
  hands them out through a Python loop that appends and counts per record: together
  the largest per-record cost of a stateless topology. A consumer created with
  ``key_deserializer=AS_TUPLES`` instead gets ``(topic, partition, offset, timestamp,
  key, value, headers)`` tuples (the ``streams.ConsumedRecord`` layout), one list
  comprehension per record batch (which aiokafka's C extension decodes), handed out in
  slices. How: subclasses of aiokafka's ``PartitionRecords`` and ``FetchResult`` are
  put in its fetcher module, where the fetcher looks the classes up for each fetch
  response (process-wide, hence behaving exactly like their parents for every other
  consumer). For the marked ones ``FetchResult.getall(n)`` takes up to ``n`` tuples
  from ``take``, which walks the batches:

  1. ``read_committed``: skip the batches of aborted transactions, with aiokafka's own
     bookkeeping (the fetch response lists each aborted transaction's producer and first
     offset; an abort marker ends it), a batch at a time as aiokafka does; then skip
     control batches (transaction markers), moving the fetch position past them;
  2. turn a batch into tuples, leaving out records below the fetch position (a
     compressed batch fetched from its start, or a seek into a batch);
  3. hand out tuples; the fetch position moves past the last one handed out, and past
     the batch (its next offset, which stays right when compaction removed the batch's
     last records) once all of it is out.

  ``getone`` still works (one tuple at a time through the same walk). Consumers read
  the output defensively (:func:`as_tuple`): without the fast path ``AS_TUPLES`` is an
  identity deserializer and records arrive as ``ConsumerRecord`` objects, converted one
  by one.
- **batch append** (:func:`fill_batch`). aiokafka's ``BatchBuilder.append`` is a Python
  wrapper (keyword arguments, optional serializers, an offset counter) around its C
  record builder; appending to the C builder directly, with the same relative offsets,
  halves the per-record cost of producing.
- **early AddOffsetsToTxn** (:func:`add_group_early`). aiokafka sends AddOffsetsToTxn
  only when offsets are sent to the transaction, just before TxnOffsetCommit, so an
  exactly-once commit waits for both, one after the other, each a durable write at the
  broker. Kafka allows it at any time in the transaction: a transaction begun for a
  group whose offsets it will commit asks for it at once, beside its first records, and
  at the commit only TxnOffsetCommit is left. How: aiokafka's transaction manager sends
  AddOffsetsToTxn for the first entry of its queue of offsets to send, then a
  TxnOffsetCommit per entry; an entry with no offsets (:class:`_GroupOnly`) is put first,
  and taken off with its future resolved as soon as the group is added (a wrapper
  around the manager's ``consumer_group_added``, on that manager only). Until the
  transaction has a partition or real offsets, the manager does not offer the group
  (a wrapper around ``consumer_group_to_add``): the first records' AddPartitionsToTxn,
  which their produce waits for, goes first. A transaction that ends with the entry
  still queued drops it first (:func:`drop_group_only`; aiokafka's end asserts an
  empty queue). Off outside :data:`SUPPORTED` or when the manager looks otherwise:
  AddOffsetsToTxn then goes at the commit, as aiokafka does.

Guards:

- **no auto-create** (:func:`forbid_auto_create`): every Metadata request of a client
  says ``allow_auto_topic_creation=false`` (why: ``_aiokafka_logs.py`` and the
  runtime's docs). aiokafka builds its Metadata requests inside ``AIOKafkaClient`` and
  sends every request through a connection it gets from ``_get_conn``; that method is
  wrapped on one client instance, and each connection it hands out gets a ``send`` that
  rewrites a Metadata request which left the field unset. (The bootstrap request
  bypasses ``_get_conn``; it names no topics, so it cannot create any.)
- **group generation** (:func:`group_generation`): exactly-once commits a transaction
  only while the consumer is in the group's current generation (``_commit.py``). When
  the generation cannot be read this raises :class:`UnsupportedClientError`, at start
  under exactly-once: a check that always said "valid" would switch the guard off.
- **deleted source topics** (:func:`watch_metadata`, :func:`fetch_all_metadata`): the
  group consumer sees each metadata refresh and reads the whole cluster's metadata to
  confirm a topic is gone.
- **transaction state** (:func:`in_transaction`, :func:`transaction_state`): whether
  the producer has a transaction open, and which state of aiokafka's transaction state
  machine it is in (its moves are assertions: ``_aiokafka_txn.py`` checks first).
- **fetch position** (:func:`fetch_position`): the next offset a poll hands out, read
  without waiting (``AIOKafkaConsumer.position`` waits while the position is reset), so
  the processing loop can tell a partition fetched behind (``_fetch_wait.py``) every round.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any

import aiokafka
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.protocol.metadata import MetadataRequest

from .._record import ConsumedAt, ConsumedRecord, ProducedRecord
from ._errors import UnsupportedClientError

log = logging.getLogger("headrace.streams.runtime.client")

# The aiokafka versions this module was written for: at least the first, below the second.
SUPPORTED = ((0, 13), (0, 15))


def written_for(version: str) -> bool:
    """Whether aiokafka ``version`` (``"0.14.0"``, ``"0.14.0b1"``) is in :data:`SUPPORTED`."""
    numbers = tuple(int(part) for part in re.findall(r"\d+", version)[:3])
    return SUPPORTED[0] <= numbers < SUPPORTED[1]


IN_RANGE = written_for(aiokafka.__version__)
_RANGE = f">={'.'.join(map(str, SUPPORTED[0]))},<{'.'.join(map(str, SUPPORTED[1]))}"

# The fast paths, on when aiokafka is a version they were written for.
TUPLE_FETCH = IN_RANGE
BATCH_APPEND = IN_RANGE
EARLY_ADD_OFFSETS = IN_RANGE
if not IN_RANGE:
    log.warning(
        "aiokafka %s is not a version the runtime was written for (%s): its fast paths "
        "are off, records take aiokafka's public paths (slower)",
        aiokafka.__version__,
        _RANGE,
    )


def report() -> str:
    """Which fast paths are active, in one line (an application logs it as it starts)."""

    def on(flag: bool) -> str:
        return "on" if flag else "off"

    return (
        f"aiokafka {aiokafka.__version__} (written for {_RANGE}): fast paths "
        f"tuple-fetch={on(_tuple_fetch_installed)}, batch-append={on(BATCH_APPEND)}, "
        f"early-add-offsets={on(EARLY_ADD_OFFSETS)}"
    )


# -- tuple fetch ------------------------------------------------------------------------

_READ_UNCOMMITTED = 0


def AS_TUPLES(data: bytes | None) -> bytes | None:
    """The key deserializer that marks a consumer as wanting tuples (identity otherwise)."""
    return data


def as_tuple(record: Any) -> ConsumedRecord:
    """A fetched record as a tuple, whichever form aiokafka handed over."""
    if type(record) is tuple:
        return record
    return (
        record.topic,
        record.partition,
        record.offset,
        record.timestamp,
        record.key,
        record.value,
        record.headers,
    )


_tuple_fetch_installed = False


def install_tuple_fetch() -> bool:
    """Put the tuple-building fetcher classes in place once; ``False`` if they cannot be
    (or the fast path is off)."""
    global _tuple_fetch_installed
    if _tuple_fetch_installed:
        return True
    if not TUPLE_FETCH:
        return False
    from aiokafka.consumer import fetcher

    parent = getattr(fetcher, "PartitionRecords", None)
    fetch_parent = getattr(fetcher, "FetchResult", None)
    if not all(
        hasattr(parent, name)
        for name in ("_unpack_records", "_consume_aborted_up_to", "_contains_abort_marker")
    ) or not all(
        hasattr(fetch_parent, name) for name in ("getall", "check_assignment", "_update_position")
    ):
        log.warning("aiokafka's fetcher changed; fetched records are converted one by one")
        return False

    class TuplePartitionRecords(parent):  # type: ignore[misc, valid-type]
        # Tuple mode only: tuples of the current batch not handed out yet, and the
        # position after that batch.
        _tuple_mode = False
        _pending: list[ConsumedRecord]
        _pending_next = 0

        def __iter__(self) -> Iterator[Any]:
            # Iterate the generator itself: no __next__ frame per record.
            iterator = self._records_iterator
            return self if iterator is None else iterator

        def _unpack_records(self) -> Iterator[Any]:
            if self._key_deserializer is not AS_TUPLES:
                return super()._unpack_records()  # type: ignore[no-any-return]
            self._tuple_mode = True
            self._pending = []
            # The parent keeps this iterator on the instance; a generator holding
            # ``self`` would make a reference cycle, and the raw fetch response (up to
            # max_partition_fetch_bytes per partition) would then wait for a full
            # garbage collection, which a streaming loop rarely triggers (``_gc.py``):
            # the heap grew by hundreds of MiB a minute. A weak reference breaks it.
            return _one_at_a_time(weakref.ref(self))

        def exhausted(self) -> bool:
            return not self._pending and not self._records.has_next()

        def take(self, limit: int | None) -> list[ConsumedRecord]:
            """Up to ``limit`` (all if ``None``) tuples, moving the fetch position past them."""
            out: list[ConsumedRecord] = []
            while limit is None or len(out) < limit:
                pending = self._pending
                if pending:
                    if limit is not None and len(out) + len(pending) > limit:
                        room = limit - len(out)
                        out += pending[:room]
                        del pending[:room]
                        self.next_fetch_offset = out[-1][ConsumedAt.OFFSET] + 1
                        return out
                    if out:
                        out += pending
                    else:
                        out = pending
                    self._pending = []
                    self.next_fetch_offset = self._pending_next
                elif not self._next_batch():
                    break
            return out

        def _next_batch(self) -> bool:
            """Decode the next batch with records into ``_pending``; ``False`` at the end."""
            records = self._records
            topic, partition = self._tp.topic, self._tp.partition
            while records.has_next():
                batch = records.next_batch()
                if self._check_crcs and not batch.validate_crc():
                    from aiokafka.errors import CorruptRecordException

                    raise CorruptRecordException(f"Invalid CRC - {self._tp}")
                if self._isolation_level != _READ_UNCOMMITTED and batch.producer_id is not None:
                    self._consume_aborted_up_to(batch.base_offset)
                    if batch.is_control_batch and self._contains_abort_marker(batch):
                        self._aborted_producers.discard(batch.producer_id)
                    if batch.is_transactional and batch.producer_id in self._aborted_producers:
                        self.next_fetch_offset = batch.next_offset
                        continue
                if batch.is_control_batch:
                    self.next_fetch_offset = batch.next_offset
                    continue
                position = self.next_fetch_offset
                if getattr(batch, "base_offset", -1) >= position:
                    tuples = [
                        (topic, partition, r.offset, r.timestamp, r.key, r.value, r.headers or ())
                        for r in batch
                    ]
                else:
                    tuples = [
                        (topic, partition, r.offset, r.timestamp, r.key, r.value, r.headers or ())
                        for r in batch
                        if r.offset >= position
                    ]
                if not tuples:
                    self.next_fetch_offset = batch.next_offset
                    continue
                self._pending = tuples
                self._pending_next = batch.next_offset
                return True
            return False

    def _one_at_a_time(ref: Callable[[], Any]) -> Iterator[ConsumedRecord]:
        while (records := ref()) is not None:
            taken = records.take(1)
            del records
            if not taken:
                return
            yield taken[0]

    class TupleFetchResult(fetch_parent):  # type: ignore[misc, valid-type]
        _partition_records: Any
        _topic_partition: Any

        def getall(self, max_records: int | None = None) -> list[Any]:
            records: Any = self._partition_records
            if records is None or not records._tuple_mode:
                return super().getall(max_records)  # type: ignore[no-any-return]
            if not self.check_assignment(self._topic_partition):
                return []
            taken: list[ConsumedRecord] = records.take(max_records)
            self._update_position()
            if records.exhausted():
                self._partition_records = None
            return taken

    fetcher.PartitionRecords = TuplePartitionRecords
    fetcher.FetchResult = TupleFetchResult
    _tuple_fetch_installed = True
    return True


# -- batch append -----------------------------------------------------------------------

# aiokafka's batch builder wants a list; one shared empty list saves one per record.
_NO_HEADERS: list[tuple[str, bytes]] = []


def fill_batch(batch: Any, records: Sequence[ProducedRecord], start: int) -> int:
    """Append ``records[start:]`` to ``batch`` (aiokafka's ``BatchBuilder``) until it is
    full; return the end index. Directly into its C builder when the fast path is on and
    the builder looks as expected, else through ``BatchBuilder.append``."""
    builder = getattr(batch, "_builder", None) if BATCH_APPEND else None
    if builder is None or getattr(batch, "_relative_offset", None) != 0:
        end = start
        for _t, key, value, ts, headers, _p in islice(records, start, None):
            appended = batch.append(
                timestamp=ts if ts >= 0 else None,
                key=key,
                value=value,
                headers=list(headers) if headers else _NO_HEADERS,
            )
            if appended is None:
                break
            end += 1
        return end
    append = builder.append
    offset = 0
    for _t, key, value, ts, headers, _p in islice(records, start, None):
        if (
            append(
                offset,
                ts if ts >= 0 else None,
                key,
                value,
                list(headers) if headers else _NO_HEADERS,
            )
            is None
        ):
            break
        offset += 1
    batch._relative_offset = offset
    return start + offset


# -- no auto-create ---------------------------------------------------------------------

_MARK = "_headrace_no_auto_create"


def _without_auto_create(request: Any) -> Any:
    if (
        type(request) is MetadataRequest
        and getattr(request, "_allow_auto_topic_creation", False) is None
    ):
        return MetadataRequest(request._topics, allow_auto_topic_creation=False)
    return request


def _guard_connection(conn: Any) -> None:
    if getattr(conn, _MARK, False):
        return
    send = conn.send

    def send_without_auto_create(request: Any, expect_response: bool = True) -> Any:
        return send(_without_auto_create(request), expect_response)

    conn.send = send_without_auto_create
    setattr(conn, _MARK, True)


def forbid_auto_create(kafka: Any) -> bool:
    """Make every Metadata request of ``kafka`` (an aiokafka consumer, producer or admin
    client) forbid topic auto-creation; ``False`` (and a warning) if aiokafka changed so
    that it cannot be done."""
    client: Any = getattr(kafka, "_client", None) or getattr(kafka, "client", None)
    get_conn = getattr(client, "_get_conn", None)
    probe = MetadataRequest(["t"])
    if (
        get_conn is None
        or getattr(probe, "_allow_auto_topic_creation", False) is not None
        or not hasattr(probe, "_topics")
    ):
        log.warning("aiokafka changed: this client's metadata requests may create topics")
        return False
    if getattr(client, _MARK, False):
        return True

    async def get_conn_without_auto_create(*args: Any, **kwargs: Any) -> Any:
        conn = await get_conn(*args, **kwargs)
        if conn is not None:
            _guard_connection(conn)
        return conn

    client._get_conn = get_conn_without_auto_create
    setattr(client, _MARK, True)
    return True


# -- group generation, metadata, transactions ------------------------------------------


def group_generation(consumer: AIOKafkaConsumer) -> int:
    """The group generation ``consumer`` (started, in a group) is a member of; ``-1``
    once the coordinator said this member is unknown or its generation stale (aiokafka
    resets it then). Raises :class:`UnsupportedClientError` when it cannot be read."""
    coordinator = getattr(consumer, "_coordinator", None)
    generation = getattr(coordinator, "generation", None)
    if type(generation) is not int:
        raise UnsupportedClientError(
            f"cannot read the consumer's group generation from aiokafka "
            f"{aiokafka.__version__} (written for {_RANGE}): exactly-once could not tell a "
            "member the group removed from a live one, so it does not run"
        )
    return generation


def fetch_position(consumer: AIOKafkaConsumer, tp: aiokafka.TopicPartition) -> int | None:
    """The offset of the next record a poll of ``consumer`` hands out for ``tp``;
    ``None`` while not known (being reset, not assigned, or aiokafka changed)."""
    try:
        state = consumer._subscription.subscription.assignment.state_value(tp)
        position = state.position if state is not None and state.has_valid_position else None
    except AttributeError:
        return None
    return position if type(position) is int else None


def watch_metadata(consumer: AIOKafkaConsumer, listener: Callable[[Any], None]) -> bool:
    """Call ``listener`` with the cluster metadata after each refresh of ``consumer``;
    ``False`` (and a warning) when aiokafka does not let it."""
    cluster = getattr(getattr(consumer, "_client", None), "cluster", None)
    add = getattr(cluster, "add_listener", None)
    if add is None:
        log.warning("aiokafka changed: a deleted source topic is not noticed while running")
        return False
    add(listener)
    return True


async def fetch_all_metadata(consumer: AIOKafkaConsumer) -> Any:
    """The whole cluster's metadata, read now (a refresh reads only the topics in use)."""
    return await consumer._client.fetch_all_metadata()


def in_transaction(producer: AIOKafkaProducer) -> bool:
    """Whether ``producer`` (transactional) has a transaction open."""
    manager = producer._txn_manager
    return manager is not None and bool(manager.is_in_transaction())


def transaction_state(producer: AIOKafkaProducer) -> str:
    """The name of ``producer``'s state in aiokafka's transaction state machine
    (``READY``, ``IN_TRANSACTION``, ``COMMITTING_TRANSACTION``, ``ABORTING_TRANSACTION``,
    ``ABORTABLE_ERROR``, ``FATAL_ERROR``; ``UNINITIALIZED`` before InitProducerId), or
    ``NONE`` for a producer without transactions."""
    manager = producer._txn_manager
    if manager is None:
        return "NONE"
    state = manager.state
    return str(getattr(state, "name", state))


# -- early AddOffsetsToTxn --------------------------------------------------------------


class _GroupOnly(dict[Any, Any]):
    """An entry of aiokafka's offsets queue that only adds its group to the transaction."""


def _drop_group_only(manager: Any) -> None:
    pending = manager._pending_txn_offsets
    while pending and isinstance(pending[0][1], _GroupOnly):
        _, _, done = pending.popleft()
        if not done.done():
            done.set_result(None)


def _only_group_only(manager: Any) -> bool:
    return all(isinstance(entry[1], _GroupOnly) for entry in manager._pending_txn_offsets)


def _install_group_only(manager: Any) -> bool:
    if getattr(manager, "_headrace_group_only", False):
        return True
    added = getattr(manager, "consumer_group_added", None)
    to_add = getattr(manager, "consumer_group_to_add", None)
    if (
        added is None
        or to_add is None
        or not hasattr(manager, "_pending_txn_offsets")
        or not hasattr(manager, "_txn_partitions")
    ):
        return False

    def consumer_group_added(group_id: str) -> None:
        added(group_id)
        _drop_group_only(manager)

    def consumer_group_to_add() -> str | None:
        if not manager._txn_partitions and _only_group_only(manager):
            return None  # the first records' partitions go first
        group: str | None = to_add()
        return group

    manager.consumer_group_added = consumer_group_added
    manager.consumer_group_to_add = consumer_group_to_add
    manager._headrace_group_only = True
    return True


def add_group_early(producer: AIOKafkaProducer, group_id: str) -> bool:
    """Have ``producer``'s open transaction send AddOffsetsToTxn for ``group_id`` now,
    ahead of any offsets (module docstring); False when the fast path is off."""
    manager = producer._txn_manager
    if (
        not EARLY_ADD_OFFSETS
        or manager is None
        or not manager.is_in_transaction()
        or getattr(manager, "_txn_consumer_group", "") is not None
        or getattr(manager, "_pending_txn_offsets", None)
        or not _install_group_only(manager)
    ):
        return False
    done = manager.add_offsets_to_txn(_GroupOnly(), group_id)
    # Failed with the transaction (whose own error is raised to the commit): taken here
    # so that asyncio does not report it as never retrieved.
    done.add_done_callback(lambda f: f.cancelled() or f.exception())
    return True


def drop_group_only(producer: AIOKafkaProducer) -> None:
    """Before the transaction ends: drop an early AddOffsetsToTxn not sent yet."""
    manager = producer._txn_manager
    if manager is not None and getattr(manager, "_headrace_group_only", False):
        _drop_group_only(manager)
